import assert from "node:assert/strict";
import { PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { kernelModules } from "../../../src/domains/kernel_modules/index.js";

export const sample: DomainSample<typeof kernelModules> = {
  reads: [
    "/proc/modules",
    "/proc/sys/kernel/osrelease",
    "/lib/modules",
    "/sys/module",
    "/etc/modprobe.d",
    "/etc/modules-load.d",
    "/run/modprobe.d",
    "/run/modules-load.d",
    "/usr/local/lib/modprobe.d",
    "/usr/local/lib/modules-load.d",
    "/usr/lib/modprobe.d",
    "/usr/lib/modules-load.d",
    "/lib/modprobe.d",
    "/lib/modules-load.d",
  ],
  declared: { loaded: ["br_netfilter"], absent: ["constructor"] },
  bench: {
    declared: { loaded: ["br_netfilter"] },
    output: (n, { lines }) =>
      lines(n, (i) => `/proc/modules:m${i} 16384 0 - Live 0x0000000000000000`),
  },
  hostile: {
    section: () =>
      `${PROTOTYPE_NAMES.map((n) => `/proc/modules:${n} 16384 0 - Live 0x0000000000000000`).join("\n")}\n`,
    declared: { absent: ["constructor"] },
    drift: (items) =>
      assert.deepEqual(
        items.map((d) => [d.key, d.declared, d.live]),
        [["constructor", "absent", "loaded"]],
      ),
  },
  // Test hosts share the machine's kernel and its modules: nothing to inject per host.
  fleet: null,
};
