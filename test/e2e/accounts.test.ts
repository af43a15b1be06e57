// The accounts domain end to end: a real sshd test host whose /etc and /home are its own (private
// overlays), audited with `become: sudo` through the real CLI against manifests on the real git
// server. `useradd -m -s /bin/bash intruder` is drift; a declared user put in the sudo group and a
// sudoers.d line are drift with the file and line; an appended authorized key is drift shown as the
// fingerprint ssh-keygen prints; the accept PRs, merged, make the next audit clean. Needs root.
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { execa } from "execa";
import { parse, stringify } from "yaml";
import { Report } from "../../src/report/schema.js";
import { cliSnapshot, runCli } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";

const TOKEN = "ghs_accounts_e2e";
const M = "fleet-manifests";
const HOST = "acct-01";
const FILES = {
  "README.md": "Fleet manifests.\n",
  [`${M}/fleet.yaml`]:
    "# Accounts are accepted by PR here.\npolicy:\n  accounts: { on_drift: accept }\n",
};

let fleet: TestFleet;
/** The public lines and fingerprints (as `ssh-keygen -lf` prints them) of two keys. */
const keys: { line: string; print: string }[] = [];
const sh = (command: string) => fleet.exec(HOST, command);

before(async () => {
  fleet = await startFleet([{ name: HOST, writable: ["/etc", "/home"] }]);
  for (const name of ["alice-laptop", "stranger"]) {
    const file = path.join(fleet.dir, name);
    await execa("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", file]);
    const { stdout } = await execa("ssh-keygen", ["-lf", `${file}.pub`]);
    keys.push({ line: await readFile(`${file}.pub`, "utf8"), print: stdout.split(" ")[1]! });
  }
  await sh(
    [
      `printf '%s\\n' '${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh' > /etc/sudoers.d/qm-audit`,
      "chmod 0440 /etc/sudoers.d/qm-audit",
      "useradd -m -s /bin/bash alice",
      "mkdir -p /home/alice/.ssh",
      `printf '%s' '${keys[0]!.line}' > /home/alice/.ssh/authorized_keys`,
      "chown -R alice: /home/alice/.ssh && chmod 0700 /home/alice/.ssh",
    ].join(" && "),
  );
});
after(() => fleet?.stop());

const forge = suiteForge({ token: TOKEN, workPrefix: "qm-accounts-e2e-", files: FILES });

async function audit(name: string, format = "json"): Promise<{ report?: Report; stdout: string }> {
  const file = path.join(forge.work, `${name}.json`);
  const result = await runCli(
    [
      "audit",
      ...forge.repoArgs(),
      "--ssh-config",
      fleet.sshConfig,
      "--format",
      format,
      ...(format === "json" ? ["--out", file] : []),
    ],
    { env: forge.double.cliEnv() },
  );
  assert.ok(result.exitCode === 0 || result.exitCode === 1, result.stderr);
  if (format !== "json") return { stdout: result.stdout };
  const report = Report.parse(JSON.parse(await readFile(file, "utf8")));
  await rm(file);
  return { report, stdout: result.stdout };
}

describe("accounts on a real host, audited with become: sudo", () => {
  /** The node's file as the snapshot wrote it. */
  let declared = "";
  before(async () => {
    // The node's declaration: the host as a snapshot through the real CLI sees it.
    const spec = await cliSnapshot(HOST, "ssh:\n  become: sudo\n", fleet.sshConfig);
    declared = stringify({ ssh: { become: "sudo" }, accounts: spec.accounts });
    await forge.pushToMain({ [`${M}/nodes/${HOST}.yaml`]: declared }, `declare ${HOST}`);
  });

  it("the snapshot declares the login users, the sudo group's members and the sudo rights; the first audit is clean", async () => {
    const spec = parse(declared) as {
      accounts: {
        users: Record<string, { authorized_keys?: string[] }>;
        groups: object;
        sudo: string[];
      };
    };
    assert.deepEqual(spec.accounts.users.alice!.authorized_keys, [keys[0]!.print]);
    assert.ok(spec.accounts.sudo.includes(`${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh`));
    assert.ok(Object.hasOwn(spec.accounts.groups, "sudo"));
    const { report } = await audit("first");
    const [node] = report!.nodes;
    assert.equal(node!.status, "clean", JSON.stringify(node));
    assert.equal(node!.unknown, undefined);
  });

  it("an intruder with a login shell, a user put in the sudo group, a sudoers.d line and an appended key are drift", async () => {
    await sh(
      [
        "useradd -m -s /bin/bash intruder",
        "usermod -aG sudo alice",
        "printf 'alice ALL=(ALL) NOPASSWD: ALL\\n' > /etc/sudoers.d/90-alice",
        "chmod 0440 /etc/sudoers.d/90-alice",
        `printf '%s' '${keys[1]!.line}' >> /home/alice/.ssh/authorized_keys`,
      ].join(" && "),
    );
    const { report } = await audit("drift");
    const [node] = report!.nodes;
    const byKey = new Map(node!.drift.map((d) => [d.key, d]));
    assert.deepEqual([...byKey.keys()].sort(), [
      "group:sudo",
      "sudo:alice ALL=(ALL) NOPASSWD: ALL",
      "user:alice:authorized_keys",
      "user:alice:groups",
      "user:intruder",
    ]);
    assert.equal(
      byKey.get("sudo:alice ALL=(ALL) NOPASSWD: ALL")!.detail,
      "at /etc/sudoers.d/90-alice:1",
    );
    assert.equal(
      byKey.get("user:alice:authorized_keys")!.detail,
      `added ${keys[1]!.print} (/home/alice/.ssh/authorized_keys)`,
    );
    assert.deepEqual(byKey.get("user:alice:groups")!.live, ["sudo"]);
    // useradd kept /etc/passwd as it was before in /etc/passwd-: intruder is the latest change's.
    assert.match(
      byKey.get("user:intruder")!.detail!,
      /^login shell \/bin\/bash, uid \d+; not in \/etc\/passwd-: added by the latest change of \/etc\/passwd$/,
    );
    // The user-facing formats name the key by its fingerprint, never its text.
    const text = await audit("drift-text", "text");
    assert.ok(text.stdout.includes(keys[1]!.print), text.stdout);
    assert.ok(text.stdout.includes("/etc/sudoers.d/90-alice:1"), text.stdout);
    assert.doesNotMatch(text.stdout, /stranger|AAAAC3/);
  });

  it("the accept PRs, merged, make the next audit clean", async () => {
    const { report } = await audit("to-accept");
    const file = path.join(forge.work, "to-accept-report.json");
    await writeFile(file, JSON.stringify(report));
    const proposed = await runCli(["propose", "--report", file, ...forge.repoArgs()], {
      env: forge.double.cliEnv(),
    });
    assert.equal(proposed.exitCode, 0, proposed.stderr);
    const pulls = forge.double.pulls().filter((p) => p.state === "open");
    assert.ok(pulls.length > 0);
    const bodies = pulls.map((p) => p.body ?? "").join("\n");
    assert.ok(bodies.includes(`added ${keys[1]!.print}`), bodies);
    assert.ok(bodies.includes("at /etc/sudoers.d/90-alice:1"), bodies);
    assert.ok(bodies.includes("is a sudo right on the host that accounts.sudo does not declare"));
    for (const pull of pulls) await forge.double.mergePull(pull.number);
    const again = await audit("after-accept");
    assert.equal(again.report!.nodes[0]!.status, "clean", JSON.stringify(again.report!.nodes[0]));
  });
});
