import assert from "node:assert/strict";
import { PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { ioScheduler } from "../../../src/domains/io_scheduler/index.js";

export const sample: DomainSample<typeof ioScheduler> = {
  reads: ["/sys/block"],
  declared: { vda: "mq-deadline", "sd*": "bfq", toString: "none" },
  bench: {
    declared: { vda: "mq-deadline", "sd*": "bfq" },
    output: (n, { lines }) =>
      lines(n, (i) => `/sys/block/sd${i}/queue/scheduler:none [mq-deadline] bfq`),
  },
  hostile: {
    section: () =>
      `${["vda", ...PROTOTYPE_NAMES].map((d) => `/sys/block/${d}/queue/scheduler:none [mq-deadline] bfq`).join("\n")}\n`,
    declared: { vda: "mq-deadline", "*": "none" },
    drift: (items) =>
      assert.deepEqual(
        items.map((d) => [d.key, d.declared, d.live]),
        [...PROTOTYPE_NAMES].sort().map((n) => [n, "none", "mq-deadline"]),
      ),
  },
  // Test hosts share the machine's block devices: test/e2e/accept-roundtrip.test.ts audits them.
  fleet: null,
};
