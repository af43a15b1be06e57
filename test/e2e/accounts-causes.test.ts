// Accounts causes end to end: a real sshd test host whose /etc, /home, dpkg database and logs are
// its own, audited with `become: sudo` through the real CLI with the run history on the bot's
// state branch. Between two scheduled runs an operator adds a user by hand, writes a sudoers.d line
// and appends a key, then `dpkg -i` installs a package whose postinst adds a login user and which
// ships a sudoers.d file. The second run names each cause: the package for its user and its sudo
// entry, the edit (with the file and line) for the rest, never the package for the hand-made user.
import assert from "node:assert/strict";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import { stringify } from "yaml";
import { cliSnapshot } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_accounts_causes_e2e";
const M = "fleet-manifests";
const HOST = "acct-c-01";
const PKG = "qm-svc";
const PKG_RULE = "qmsvc ALL=(root) NOPASSWD: /usr/bin/true";
// What useradd and dpkg write: nothing of the machine's own is changed.
const WRITABLE = ["/etc", "/home", "/var/lib/dpkg", "/var/log"];

let fleet: TestFleet;
let deb = "";
let key = { line: "", print: "" };
const sh = (command: string) => fleet.exec(HOST, command);

/** A package whose postinst adds a system user with a login shell and which ships a sudoers.d file. */
async function buildDeb(work: string): Promise<string> {
  const root = path.join(work, PKG);
  await mkdir(path.join(root, "DEBIAN"), { recursive: true });
  await mkdir(path.join(root, "etc/sudoers.d"), { recursive: true });
  await writeFile(
    path.join(root, "DEBIAN/control"),
    `Package: ${PKG}\nVersion: 1.0\nArchitecture: all\nMaintainer: Quartermaster tests <qm@example.invalid>\nDescription: a service with its own user\n`,
  );
  await writeFile(
    path.join(root, "DEBIAN/postinst"),
    '#!/bin/sh\nset -e\nif [ "$1" = configure ] && ! id qmsvc >/dev/null 2>&1; then useradd --system --shell /bin/bash --home-dir /nonexistent --no-create-home qmsvc; fi\n',
  );
  await chmod(path.join(root, "DEBIAN/postinst"), 0o755);
  await writeFile(path.join(root, "DEBIAN/conffiles"), `/etc/sudoers.d/${PKG}\n`);
  await writeFile(path.join(root, `etc/sudoers.d/${PKG}`), `# ${PKG}'s own\n${PKG_RULE}\n`);
  await chmod(path.join(root, `etc/sudoers.d/${PKG}`), 0o440);
  const file = path.join(work, `${PKG}_1.0_all.deb`);
  await execa("dpkg-deb", ["--root-owner-group", "--build", root, file]);
  return file;
}

const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-accounts-causes-e2e-",
  files: { "README.md": "Fleet manifests.\n", [`${M}/fleet.yaml`]: "{}\n" },
  setup: async (forge) => {
    deb = await buildDeb(forge.work);
    const keyFile = path.join(forge.work, "stranger");
    await execa("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "stranger", "-f", keyFile]);
    const printed = await execa("ssh-keygen", ["-lf", `${keyFile}.pub`]);
    key = { line: await readFile(`${keyFile}.pub`, "utf8"), print: printed.stdout.split(" ")[1]! };
    fleet = await startFleet([{ name: HOST, writable: WRITABLE }], { prefix: "qmac" });
    await sh(
      [
        `printf '%s\\n' '${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh' > /etc/sudoers.d/qm-audit`,
        "chmod 0440 /etc/sudoers.d/qm-audit",
        "useradd -m -s /bin/bash alice",
        "mkdir -p /home/alice/.ssh && touch /home/alice/.ssh/authorized_keys",
        "chown -R alice: /home/alice/.ssh && chmod 0700 /home/alice/.ssh",
      ].join(" && "),
    );
    // The node's declaration: the host as a snapshot through the real CLI sees it.
    const spec = await cliSnapshot(HOST, "ssh:\n  become: sudo\n", fleet.sshConfig, [
      "--category",
      "accounts",
    ]);
    await forge.pushToMain(
      {
        [`${M}/nodes/${HOST}.yaml`]: stringify({
          ssh: { become: "sudo" },
          accounts: spec.accounts,
        }),
      },
      `declare ${HOST}`,
    );
  },
});

after(() => fleet?.stop());

const run = scheduledRun(forge, () => fleet.sshConfig);

describe("accounts causes from the host's records", () => {
  it("run 1 is clean and records the node's audit", async () => {
    const { report } = await run.auditAndPropose("run-1", 0);
    assert.equal(report.nodes[0]!.status, "clean", JSON.stringify(report.nodes[0]));
  });

  it("run 2 names the package for the user its postinst added and its sudoers.d entry, the edit for the rest", async () => {
    await sh(
      [
        "useradd -m -s /bin/bash intruder",
        "printf 'alice ALL=(ALL) NOPASSWD: ALL\\n' > /etc/sudoers.d/90-alice",
        "chmod 0440 /etc/sudoers.d/90-alice",
        `printf '%s' '${key.line}' >> /home/alice/.ssh/authorized_keys`,
        `dpkg -i ${deb} >/dev/null`,
      ].join(" && "),
    );
    const { report } = await run.audit("run-2", 1);
    const causes = Object.fromEntries(report.nodes[0]!.drift.map((d) => [d.key, d.cause!]));
    assert.deepEqual(Object.keys(causes).sort(), [
      "sudo:alice ALL=(ALL) NOPASSWD: ALL",
      `sudo:${PKG_RULE}`,
      "user:alice:authorized_keys",
      "user:intruder",
      "user:qmsvc",
    ]);
    assert.equal(causes["user:qmsvc"]!.kind, "package");
    assert.equal(causes["user:qmsvc"]!.by, "dpkg");
    assert.match(
      causes["user:qmsvc"]!.evidence,
      /^qmsvc added to \/etc\/passwd at \S+, while dpkg configured qm-svc 1\.0 \(its maintainer script\)$/,
    );
    assert.equal(causes[`sudo:${PKG_RULE}`]!.kind, "package");
    assert.equal(
      causes[`sudo:${PKG_RULE}`]!.evidence,
      `/etc/sudoers.d/${PKG}:2 holds it, a conffile of ${PKG} since ${PKG} (new) → 1.0`,
    );
    // Added by hand before the package's user: /etc/passwd- holds it, so the edit, never the package.
    assert.equal(causes["user:intruder"]!.kind, "file-edit");
    assert.match(causes["user:intruder"]!.evidence, /^\/etc\/passwd modified at /);
    assert.equal(causes["sudo:alice ALL=(ALL) NOPASSWD: ALL"]!.kind, "file-edit");
    assert.match(
      causes["sudo:alice ALL=(ALL) NOPASSWD: ALL"]!.evidence,
      /^\/etc\/sudoers\.d\/90-alice modified at .*: \/etc\/sudoers\.d\/90-alice:1 holds it$/,
    );
    assert.equal(causes["user:alice:authorized_keys"]!.kind, "file-edit");
    assert.match(
      causes["user:alice:authorized_keys"]!.evidence,
      /^\/home\/alice\/\.ssh\/authorized_keys modified at \S+, owner alice, since the last audit$/,
    );
    // What the operator reads: each cause on its item's line.
    const text = await run.auditText(1);
    assert.match(text, /while dpkg configured qm-svc 1\.0/);
    assert.match(text, /a conffile of qm-svc since qm-svc \(new\) → 1\.0/);
    assert.ok(text.includes(key.print), text);
  });
});
