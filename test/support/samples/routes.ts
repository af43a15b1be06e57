import assert from "node:assert/strict";
import { PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { routes } from "../../../src/domains/routes/index.js";

const HEADER =
  "/proc/net/route:Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT";
// A /24 per i, in /proc/net/route's little-endian hex.
const net24 = (i: number) =>
  [0, i & 255, (i >> 8) & 255, 10]
    .map((b) => b.toString(16).padStart(2, "0").toUpperCase())
    .join("");

export const sample: DomainSample<typeof routes> = {
  reads: ["/proc/net"],
  declared: [
    { dst: "default", via: "10.0.0.1", dev: "eth0" },
    { dst: "10.1.0.0/16", dev: "eth1" },
  ],
  bench: {
    declared: [{ dst: "default", via: "10.0.0.1", dev: "eth0" }],
    // Every route and every local address in a network of its own: quadratic if each route scans
    // the addresses.
    output: (n, { lines }) =>
      `${HEADER}\n` +
      lines(
        n,
        (i) => `/proc/net/route:eth0\t${net24(i)}\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0`,
      ) +
      lines(n, (i) => `local:${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}.200`),
  },
  hostile: {
    section: () =>
      `${[
        HEADER,
        "/proc/net/route:eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0",
        ...PROTOTYPE_NAMES.map(
          (dev, i) =>
            `/proc/net/route:${dev}\t00${(i + 1).toString(16).padStart(2, "0")}A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0`,
        ),
      ].join("\n")}\n`,
    declared: [{ dst: "default", via: "10.0.0.1", dev: "eth0" }],
    drift: (items) =>
      assert.deepEqual(
        items.map((d) => d.key),
        PROTOTYPE_NAMES.map((n, i) => `192.168.${i + 1}.0/24 dev ${n}`),
      ),
  },
  fleet: {
    host: { routes: ["198.51.100.0/24 via {gateway}"] },
    drift(items, { gateway }) {
      assert.equal(items.length, 1, JSON.stringify(items));
      assert.match(JSON.stringify(items[0]), /198\.51\.100\.0\/24/);
      assert.match(JSON.stringify(items[0]!.live), new RegExp(gateway.replaceAll(".", "\\.")));
    },
  },
};
