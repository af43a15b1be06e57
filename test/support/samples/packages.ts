import assert from "node:assert/strict";
import { marked, PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { packages } from "../../../src/domains/packages/index.js";

export const sample: DomainSample<typeof packages> = {
  reads: [
    "/var/lib/dpkg",
    "/var/lib/apt/extended_states",
    "/lib/apk",
    "/var/lib/rpm",
    "/usr/lib/sysimage/rpm",
  ],
  declared: { bash: "*", toString: "1.0", openssl: "absent" },
  bench: {
    declared: { bash: "*" },
    // One package once per architecture: quadratic if each architecture is checked against a list.
    output: (n, { mark, lines }) =>
      `${mark("dpkg")}\n${lines(n, (i) => `Package: bash\nStatus: install ok installed\nVersion: 5.2\nArchitecture: arch${i}`)}`,
  },
  hostile: {
    section: (nonce) =>
      marked(nonce, [
        [
          "dpkg",
          PROTOTYPE_NAMES.flatMap((n) => [
            `Package: ${n}`,
            "Status: install ok installed",
            "Version: 2.0",
            "Architecture: amd64",
          ])
            .map((line) => `${line}\n`)
            .join(""),
        ],
      ]),
    declared: { toString: "1.0", valueOf: "*" },
    drift: (items) =>
      assert.deepEqual(
        items.map((d) => [d.key, d.declared, d.live]),
        [["toString", "1.0", "2.0"]],
      ),
  },
  fleet: {
    // The fleet pins the clean host's versions; this host's bash is a hotfix build.
    host: {
      dpkgStatus: (status) =>
        status.replace(/^(Package: bash\n(?:.+\n)*?Version: )(.+)$/m, "$1$2+hotfix1"),
    },
    drift(items) {
      assert.equal(items.length, 1, JSON.stringify(items));
      assert.equal(items[0]!.key, "bash");
      assert.equal(items[0]!.live, `${items[0]!.declared}+hotfix1`);
    },
  },
};
