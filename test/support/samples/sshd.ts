import assert from "node:assert/strict";
import { marked, PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { sshd } from "../../../src/domains/sshd/index.js";

const lines = (list: string[]) => `${list.join("\n")}\n`;

export const sample: DomainSample<typeof sshd> = {
  // The listener is found in /proc; sshd -T reads its configuration, host keys, the privilege
  // separation user and directory, and OpenSSL's configuration.
  reads: [
    "/proc",
    "/usr/sbin/sshd",
    "/etc/ssh",
    "/etc/passwd",
    "/etc/gai.conf",
    "/run/sshd",
    "/usr/lib/ssl",
  ],
  declared: {
    connection: { user: "deploy", addr: "192.0.2.7" },
    settings: { PasswordAuthentication: "no", allowusers: ["alice", "bob"], constructor: "x" },
  },
  fuzzLines: (mark) => [
    ...["state", "boot", "stat", "config", "set", "files", "changed"].map(mark),
    "config /etc/ssh/sshd_config",
    "listener 812",
    "audited 1700000000",
    "more 3",
    "btime 1700000000",
    "812 (sshd) S 1 812 812 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 1234 0 0",
    "passwordauthentication yes",
    "allowusers alice",
    "/etc/ssh/sshd_config.d/50-x.conf:1 setting PasswordAuthentication yes",
    "reprocess config:4 setting PasswordAuthentication no",
    "1700000100 /etc/ssh/sshd_config.d/50-x.conf",
  ],
  bench: {
    declared: { settings: { allowusers: "alice" } },
    output: (n, { mark, lines }) =>
      `${mark("state")}\nconfig /etc/ssh/sshd_config\n${mark("config")}\n${lines(n, (i) => `allowusers u${i}`)}` +
      `${mark("set")}\n${lines(n, (i) => `/etc/ssh/sshd_config.d/${i}.conf:1 setting AllowUsers u${i}`)}` +
      `${mark("changed")}\n${lines(n, (i) => `1700000000 /etc/ssh/sshd_config.d/${i}.conf`)}`,
  },
  hostile: {
    section: (nonce) =>
      marked(nonce, [
        ["state", lines(["config /etc/ssh/sshd_config"])],
        [
          "config",
          lines(["passwordauthentication no", ...PROTOTYPE_NAMES.map((n) => `allowusers ${n}`)]),
        ],
        [
          "set",
          lines(
            PROTOTYPE_NAMES.map(
              (n) => `/etc/ssh/sshd_config.d/${n}.conf:1 setting AllowUsers ${n}`,
            ),
          ),
        ],
        [
          "changed",
          lines(PROTOTYPE_NAMES.map((n) => `1700000000 /etc/ssh/sshd_config.d/${n}.conf`)),
        ],
      ]),
    declared: { settings: { passwordauthentication: "no", allowusers: ["alice"] } },
    drift: (items) =>
      assert.deepEqual(
        items.map(({ key, declared, live }) => ({ key, declared, live })),
        [{ key: "allowusers", declared: ["alice"], live: [...PROTOTYPE_NAMES] }],
      ),
  },
  // sshd -T needs root: the fleet audits as the audit user. test/e2e/sshd.test.ts audits a real
  // sshd with become: sudo.
  fleet: null,
};
