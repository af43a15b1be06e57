import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { marked, PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { kernel } from "../../../src/domains/kernel/index.js";

export const sample: DomainSample<typeof kernel> = {
  reads: [
    "/proc/sys/kernel/osrelease",
    "/proc/stat",
    "/boot",
    "/lib/modules",
    "/run/reboot-required",
    "/run/reboot-needed",
  ],
  declared: "6.1.0-28-amd64",
  bench: {
    declared: "6.1.0-28-amd64",
    output: (n, { mark, lines }) =>
      `${mark("running")}\n6.1.0-28-amd64\n${mark("installed")}\n${lines(n, (i) => `6.1.${i}-${n - i}-amd64`)}`,
  },
  hostile: {
    section: (nonce) =>
      marked(nonce, [
        ["running", "6.1.0-28-amd64\n"],
        [
          "installed",
          `${["6.1.0-28-amd64", ...PROTOTYPE_NAMES.filter((n) => /^[a-z]/.test(n))].join("\n")}\n`,
        ],
      ]),
    declared: "6.1.0-28-amd64",
    drift: (items) => assert.equal(items.length, 0),
  },
  fleet: {
    host: {},
    declared: "6.1.0-99-qm-declared",
    async drift(items) {
      const running = (await readFile("/proc/sys/kernel/osrelease", "utf8")).trim();
      assert.deepEqual(items, [
        { key: "kernel_version", declared: "6.1.0-99-qm-declared", live: running },
      ]);
    },
  },
};
