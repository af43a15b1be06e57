import assert from "node:assert/strict";
import { marked, PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { sysctl } from "../../../src/domains/sysctl/index.js";

const lines = (list: string[]) => `${list.join("\n")}\n`;

export const sample: DomainSample<typeof sysctl> = {
  reads: [
    "/proc/sys",
    "/proc/stat",
    "/etc/sysctl.conf",
    "/etc/sysctl.d",
    "/run/sysctl.d",
    "/usr/local/lib/sysctl.d",
    "/usr/lib/sysctl.d",
    "/lib/sysctl.d",
  ],
  declared: { "net.ipv4.ip_forward": "1", constructor: "1" },
  fuzzLines: (mark) => [
    ...["runtime", "persisted"].map(mark),
    "/proc/sys/net/ipv4/ip_forward:1",
    "/proc/sys/net/ipv4/ip_local_port_range:32768\t60999",
    "/proc/sys/constructor:1",
    "/etc/sysctl.d/99-local.conf:1:net.ipv4.ip_forward = 0",
    "/usr/lib/sysctl.d/50-default.conf:3:constructor = 2",
    "/etc/sysctl.conf:1:# a comment",
  ],
  bench: {
    declared: { "net.ipv4.ip_forward": "1" },
    output: (n, { mark, lines }) =>
      `${mark("runtime")}\n${lines(n, (i) => `/proc/sys/net/x${i}:${i}`)}` +
      `${mark("persisted")}\n${lines(n, (i) => `/etc/sysctl.d/${i}.conf:1:net.x${i} = 1`)}`,
  },
  hostile: {
    section: (nonce) =>
      marked(nonce, [
        [
          "runtime",
          lines([
            "/proc/sys/net/ipv4/ip_forward:0",
            ...PROTOTYPE_NAMES.map((n) => `/proc/sys/${n}:1`),
          ]),
        ],
        ["persisted", lines(PROTOTYPE_NAMES.map((n) => `/etc/sysctl.d/${n}.conf:1:${n} = 1`))],
      ]),
    declared: { "net.ipv4.ip_forward": "0" },
    drift: (items) => assert.equal(items.length, 0),
  },
  fleet: {
    // The fleet declares the clean host's 0.
    host: { sysctls: { "net.ipv4.ip_forward": "1" } },
    drift: (items) =>
      assert.deepEqual(items, [{ key: "net.ipv4.ip_forward", declared: "0", live: "1" }]),
  },
};
