// `adopt` never writes a secret's contents into the tree, end to end: a real sshd test host, the
// real CLI. An existing tree's group reaches its hosts with `become: sudo` and declares files by
// path: one readable by root alone, one marked secret, one anyone may read. Only the last one's
// contents may reach the node file; the others are declared by hash, mode and owner. A host
// without sudo cannot show a root-only file's hash: it is declared by mode and owner, and adopt
// says why. Needs root.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { parse } from "yaml";
import { runCli } from "../support/cli.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";

const DIR = "/etc/qm-adopt-secrets";
const ROOT_ONLY = `${DIR}/token`;
const MARKED = `${DIR}/marked.conf`;
const PUBLIC = `${DIR}/public.conf`;
const GROUP_READ = `${DIR}/key.pem`;
const KEY = "group-read-key-7c2a\n";
const TOKEN = "root-only-token-4b1d\n";
const MARKED_TEXT = "marked-secret-9f3e\n";
const PUBLIC_TEXT = "listen = 8080\n";
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

let fleet: TestFleet;
let dir: string;

before(async () => {
  fleet = await startFleet(
    [
      {
        name: "vault-01",
        files: {
          [ROOT_ONLY]: { contents: TOKEN, mode: "0600" },
          [MARKED]: { contents: MARKED_TEXT, mode: "0644" },
          [PUBLIC]: { contents: PUBLIC_TEXT, mode: "0644" },
          [GROUP_READ]: { contents: KEY, mode: "0640" },
          // The audit user may run the probe's shell as root, on this host alone.
          "/etc/sudoers.d/qm-adopt-secrets": {
            contents: `${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh -s\n`,
            mode: "0440",
          },
        },
      },
      // No sudo here: the audit user reads what any user may.
      { name: "plain-01", files: { [GROUP_READ]: { contents: KEY, mode: "0640" } } },
    ],
    { prefix: "qms" },
  );
  dir = await mkdtemp(path.join(os.tmpdir(), "qm-adopt-secrets-"));
});
after(async () => {
  await fleet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("a root-only file adopted through sudo, and one marked secret, are declared by hash, mode and owner; their contents are never written", async () => {
  const tree = path.join(dir, "tree");
  await mkdir(path.join(tree, "groups"), { recursive: true });
  await writeFile(
    path.join(tree, "groups/vault.yaml"),
    [
      "ssh:",
      "  become: sudo",
      "files:",
      `  - path: ${ROOT_ONLY}`,
      `  - { path: ${MARKED}, secret: true }`,
      `  - path: ${PUBLIC}`,
      "",
    ].join("\n"),
  );
  // The audit user itself cannot read the token: only sudo can.
  await assert.rejects(fleet.exec("vault-01", `su -s /bin/sh -c 'cat ${ROOT_ONLY}' ${AUDIT_USER}`));
  assert.equal(
    await fleet.exec(
      "vault-01",
      `su -s /bin/sh -c 'sudo -n /bin/sh -s' ${AUDIT_USER} <<'EOF'\ncat ${ROOT_ONLY}\nEOF`,
    ),
    TOKEN,
  );
  const inventory = path.join(dir, "hosts.ini");
  await writeFile(inventory, "[vault]\nvault-01\n");
  const result = await runCli([
    ...["adopt", "--inventory", inventory, "--manifests", tree, "--files", GROUP_READ],
    ...["--ssh-config", fleet.sshConfig, "--known-hosts", fleet.knownHosts],
  ]);
  assert.equal(result.exitCode, 0, result.stderr);
  const text = await readFile(path.join(tree, "nodes/vault-01.yaml"), "utf8");
  assert.ok(!text.includes("root-only-token"), text);
  assert.ok(!text.includes("marked-secret"), text);
  const files = new Map(
    (parse(text) as { files: { path: string }[] }).files.map((f) => [f.path, f]),
  );
  assert.deepEqual(files.get(ROOT_ONLY), {
    path: ROOT_ONLY,
    sha256: sha256(TOKEN),
    mode: "0600",
    owner: "root",
    group: "root",
  });
  // Readable by its group too (0640), and asked by --files alone: the same rule.
  assert.deepEqual(files.get(GROUP_READ), {
    path: GROUP_READ,
    mode: "0640",
    owner: "root",
    group: "root",
    sha256: sha256(KEY),
  });
  assert.deepEqual(files.get(MARKED), {
    path: MARKED,
    secret: true,
    sha256: sha256(MARKED_TEXT),
    mode: "0644",
    owner: "root",
    group: "root",
  });
  // A file anyone may read keeps its contents: the declaration a reviewer can read.
  assert.deepEqual(files.get(PUBLIC), {
    path: PUBLIC,
    contents: PUBLIC_TEXT,
    mode: "0644",
    owner: "root",
    group: "root",
  });
  const audit = await runCli(["audit", "--manifests", tree, "--ssh-config", fleet.sshConfig]);
  assert.equal(audit.exitCode, 0, audit.stdout.slice(0, 3000) + audit.stderr);
});

test("without sudo, a root-only file the audit user cannot read is declared by mode, owner and group, and adopt says why not by its sha256", async () => {
  const tree = path.join(dir, "plain-tree");
  const inventory = path.join(dir, "plain.ini");
  await writeFile(inventory, "plain-01\n");
  const result = await runCli([
    ...["adopt", "--inventory", inventory, "--manifests", tree],
    ...["--files", GROUP_READ, "--packages", "none"],
    ...["--ssh-config", fleet.sshConfig, "--known-hosts", fleet.knownHosts],
  ]);
  assert.equal(result.exitCode, 0, result.stderr);
  assert.match(
    result.stderr,
    new RegExp(
      `^not declared on plain-01, which could not show it: files: ${GROUP_READ}: cannot read it$`,
      "m",
    ),
  );
  const text = await readFile(path.join(tree, "nodes/plain-01.yaml"), "utf8");
  assert.ok(!text.includes("group-read-key"), text);
  const spec = parse(text) as { files: { path: string }[] };
  assert.deepEqual(spec.files, [{ path: GROUP_READ, mode: "0640", owner: "root", group: "root" }]);
  const audit = await runCli(["audit", "--manifests", tree, "--ssh-config", fleet.sshConfig]);
  assert.equal(audit.exitCode, 0, audit.stdout.slice(0, 3000) + audit.stderr);
});
