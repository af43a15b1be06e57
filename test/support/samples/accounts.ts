import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { marked, PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { accounts } from "../../../src/domains/accounts/index.js";
import { loginShell } from "../../../src/domains/accounts/parse.js";

const lines = (list: string[]) => `${list.join("\n")}\n`;
const hex = (text: string) => Buffer.from(text).toString("hex");

/** This machine's /etc/group with the audit user added to the sudo group: a fleet host's own. */
const auditUserInSudo = () =>
  readFileSync("/etc/group", "utf8").replace(
    /^sudo:([^:]*):([^:]*):(.*)$/m,
    (_, p, gid, members: string) =>
      `sudo:${p}:${gid}:${[...members.split(",").filter(Boolean), "qm-audit"].join(",")}`,
  );

/**
 * The authorized_keys files a snapshot reads on this machine: its login users' (root, the audit
 * user, whoever else logs in here), wherever their homes are.
 */
const loginUsersKeys = () =>
  readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .map((line) => line.split(":"))
    .filter((f) => f.length === 7 && f[5]!.startsWith("/") && loginShell(f[6]!))
    .map((f) => `${f[5]!.replace(/\/$/, "")}/.ssh/authorized_keys`);

export const sample: DomainSample<typeof accounts> = {
  reads: [
    "/etc/passwd",
    "/etc/passwd-",
    "/etc/group",
    "/etc/sudoers",
    "/etc/sudoers.d",
    ...loginUsersKeys(),
  ],
  declared: {
    users: { constructor: { shell: "/bin/sh", groups: ["toString"], authorized_keys: [] } },
    groups: { toString: ["constructor"] },
    sudo: ["constructor ALL=(ALL) ALL"],
  },
  fuzzLines: (mark) => [
    ...["passwd", "sudoers", "keys"].map(mark),
    "P alice:1001:1001:/home/alice:/bin/bash",
    "P constructor:1002:1002:/home/c:/bin/sh",
    "G sudo:27:alice,constructor",
    "G+ toString:1002:constructor",
    "more 12",
    "none",
    "F /etc/sudoers",
    "L 3 constructor ALL=(ALL) ALL \\",
    "L 4 NOPASSWD: ALL",
    "U /etc/sudoers.d/x",
    "X deep /etc/sudoers",
    "X many",
    `K ${hex("alice")} file /home/alice/.ssh/authorized_keys`,
    `K ${hex("constructor")} unreadable /home/c/.ssh/authorized_keys`,
    "k ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl /home/alice/.ssh/authorized_keys",
    "k+ /home/alice/.ssh/authorized_keys",
  ],
  bench: {
    declared: { users: { alice: {} }, sudo: [] },
    output: (n, { mark, lines }) =>
      `${mark("passwd")}\n${lines(n, (i) => `P u${i}:${i}:${i}:/home/u${i}:/bin/bash`)}${lines(n, (i) => `G g${i}:${i}:u${i},u${i + 1}`)}` +
      `${mark("sudoers")}\nF /etc/sudoers\n${lines(n, (i) => `L ${i + 1} u${i} ALL=(ALL) ALL`)}`,
  },
  hostile: {
    section: (nonce) =>
      marked(nonce, [
        [
          "passwd",
          lines([
            ...PROTOTYPE_NAMES.map((n, i) => `P ${n}:${2000 + i}:${2000 + i}:/home/${n}:/bin/bash`),
            ...PROTOTYPE_NAMES.map((n, i) => `G ${n}:${2000 + i}:${n}`),
          ]),
        ],
        [
          "sudoers",
          lines([
            "F /etc/sudoers",
            ...PROTOTYPE_NAMES.map((n, i) => `L ${i + 1} ${n} ALL=(ALL) ALL`),
          ]),
        ],
      ]),
    declared: {
      users: Object.fromEntries(
        PROTOTYPE_NAMES.filter((n) => n !== "__proto__").map((n) => [n, {}]),
      ),
      sudo: PROTOTYPE_NAMES.filter((n) => n !== "__proto__").map((n) => `${n} ALL=(ALL) ALL`),
    },
    drift: (items) =>
      assert.deepEqual(
        items.map((i) => i.key),
        ["user:__proto__", "sudo:__proto__ ALL=(ALL) ALL"],
      ),
  },
  fleet: {
    // The fleet declares the clean host's login users (sudoers is root's: not read, not declared).
    host: { files: { "/etc/group": { contents: auditUserInSudo(), mode: "0644" } } },
    drift: (items) =>
      assert.deepEqual(
        items.map((i) => [i.key, (i.live as string[]).includes("sudo")]),
        [["user:qm-audit:groups", true]],
      ),
  },
};
