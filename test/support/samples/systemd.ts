import assert from "node:assert/strict";
import { marked, PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { systemd } from "../../../src/domains/systemd/index.js";

export const sample: DomainSample<typeof systemd> = {
  reads: [
    "/etc/systemd",
    "/run/systemd",
    "/usr/local/lib/systemd",
    "/usr/lib/systemd",
    "/lib/systemd",
    "/proc",
    "/sys/fs/cgroup",
  ],
  declared: [
    {
      name: "a.service",
      enabled: true,
      active: true,
      contents: "x",
      dropins: { "toString.conf": "y" },
    },
  ],
  fuzzLines: (mark) => [
    mark("cap 1024"),
    ...["unit", "unit-file", "dropin", "unreadable", "active", "changed"].map((kind) =>
      mark(`${kind} a.service`),
    ),
    mark("active-unknown"),
    mark("boot"),
    ...["procs", "maps", "maps-errors"].map((kind) => mark(kind)),
    "/sys/fs/cgroup/system.slice/a.service/cgroup.procs",
    "7",
    "MainPID=7",
    "ControlGroup=/system.slice/a.service",
    "/proc/7/maps:0-1 r--p 0 fe:00 9 /usr/lib/libssl.so.3 (deleted)",
    "grep: /proc/7/maps: Permission denied",
    "btime 1700000000",
    "1700000099 /etc/systemd/system/a.service",
    "NeedDaemonReload=yes",
    "ActiveEnterTimestampMonotonic=5000000",
    "file /etc/systemd/system/a.service",
    "wanted-by /etc/systemd/system/multi-user.target.wants/a.service",
    "masked",
    "toString.conf",
    "__proto__.conf",
    "LoadState=loaded",
    "ActiveState=active",
    "SubState=running",
    "",
  ],
  bench: {
    declared: [{ name: "a.service", dropins: { "a.conf": "x" } }],
    output: (n, { mark, lines }) =>
      `${mark("cap 1024")}\n${mark("unit a.service")}\nfile /etc/systemd/system/a.service\n` +
      lines(n, (i) => `${mark("dropin a.service")}\nd${i}.conf\nx`),
  },
  hostile: {
    section: (nonce) =>
      marked(nonce, [
        ["cap 1024", ""],
        ...PROTOTYPE_NAMES.flatMap((n): [string, string][] => [
          [`unit ${n}.service`, `file /etc/systemd/system/${n}.service\n`],
          [`dropin ${n}.service`, `${n}.conf\n[Service]\n`],
        ]),
      ]),
    declared: PROTOTYPE_NAMES.map((n) => ({
      name: `${n}.service`,
      dropins: { "toString.conf": "[Service]\n" },
    })),
    drift(items) {
      // Each unit lacks its declared toString.conf (except toString's own unit, whose live drop-in
      // has that name) and has one undeclared.
      assert.equal(items.length, 2 * PROTOTYPE_NAMES.length - 2);
      assert.ok(
        items.some(
          ({ key, declared }) => key === "__proto__.service.d/__proto__.conf" && declared === null,
        ),
      );
    },
  },
  // A unit needs a systemd host of its own: test/e2e/systemd-hosts.test.ts.
  fleet: null,
};
