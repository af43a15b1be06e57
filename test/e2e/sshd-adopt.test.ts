// adopt declares sshd settings, login users and sudo rights, factored into layers like every value:
// three real sshd test hosts through the real CLI, two web hosts with X11Forwarding on, a deploy
// user and its sudoers.d line, one db host without. Through `become: sudo` (an existing tree's
// fleet.yaml) what the web hosts share goes to groups/web.yaml and db-01 keeps its own; without
// root, adopt says once which hosts' sshd settings were not declared, and why. Needs root.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { parse } from "yaml";
import { runCli } from "../support/cli.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";

const WEB = ["web-01", "web-02"];
const DB = "db-01";
const DEPLOY_RULE = "deploy ALL=(root) NOPASSWD: /usr/bin/systemctl";

let fleet: TestFleet;
let dir: string;
let inventory: string;

before(async () => {
  fleet = await startFleet(
    [
      ...WEB.map((name) => ({
        name,
        sshdOptions: ["X11Forwarding yes"],
        writable: ["/etc", "/home"],
      })),
      { name: DB, writable: ["/etc", "/home"] },
    ],
    { prefix: "qmsa" },
  );
  const sudoers = `printf '%s\\n' '${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh' > /etc/sudoers.d/qm-audit && chmod 0440 /etc/sudoers.d/qm-audit`;
  await fleet.exec(DB, sudoers);
  for (const name of WEB)
    await fleet.exec(
      name,
      [
        sudoers,
        "useradd -m -s /bin/bash deploy",
        `printf '%s\\n' '${DEPLOY_RULE}' > /etc/sudoers.d/deploy`,
        "chmod 0440 /etc/sudoers.d/deploy",
      ].join(" && "),
    );
  dir = await mkdtemp(path.join(os.tmpdir(), "qm-sshd-adopt-"));
  inventory = path.join(dir, "hosts.ini");
  await writeFile(inventory, `[web]\n${WEB.join("\n")}\n[db]\n${DB}\n`);
});
after(async () => {
  await fleet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const adopt = (tree: string) =>
  runCli([
    ...["adopt", "--inventory", inventory, "--manifests", tree],
    ...["--ssh-config", fleet.sshConfig, "--known-hosts", fleet.knownHosts],
  ]);

interface Layer {
  sshd?: { settings: Record<string, unknown> };
  accounts?: { users?: Record<string, unknown>; sudo?: string[] };
}

test("through become: sudo, the web hosts' shared sshd setting, login user and sudo rights go to groups/web.yaml; db-01 keeps its own", async () => {
  const tree = path.join(dir, "sudo");
  await mkdir(tree);
  await writeFile(path.join(tree, "fleet.yaml"), "ssh:\n  become: sudo\n");
  const result = await adopt(tree);
  assert.equal(result.exitCode, 0, result.stderr);
  assert.doesNotMatch(result.stderr, /sshd -T needs root/);
  const layer = async (file: string) =>
    parse(await readFile(path.join(tree, file), "utf8")) as Layer;
  const web = await layer("groups/web.yaml");
  assert.equal(web.sshd?.settings.x11forwarding, "yes");
  assert.ok(web.accounts?.users && Object.hasOwn(web.accounts.users, "deploy"));
  assert.ok(web.accounts?.sudo?.includes(DEPLOY_RULE), JSON.stringify(web.accounts));
  for (const name of WEB) {
    const own = await layer(`nodes/${name}.yaml`);
    assert.equal(own.sshd, undefined, `${name} takes its sshd settings from its group`);
    assert.equal(own.accounts, undefined, `${name} takes its accounts from its group`);
  }
  const db = await layer(`nodes/${DB}.yaml`);
  assert.equal(db.sshd?.settings.x11forwarding, "no");
  assert.equal(db.sshd?.settings.passwordauthentication, "no");
  assert.ok(db.accounts?.users && !Object.hasOwn(db.accounts.users, "deploy"));
  assert.ok(!db.accounts?.sudo?.includes(DEPLOY_RULE));
  const audit = await runCli(["audit", "--manifests", tree, "--ssh-config", fleet.sshConfig]);
  assert.equal(audit.exitCode, 0, audit.stdout.slice(0, 3000) + audit.stderr);
});

test("ansible_become in the inventory's group_vars is become: sudo: sshd settings are adopted from the inventory alone; su is said, not used", async () => {
  const source = path.join(dir, "become-inventory");
  await mkdir(path.join(source, "group_vars"), { recursive: true });
  await writeFile(path.join(source, "hosts.ini"), `[web]\n${WEB.join("\n")}\n[db]\n${DB}\n`);
  await writeFile(path.join(source, "group_vars", "all.yml"), "ansible_become: true\n");
  await writeFile(path.join(source, "group_vars", "db.yml"), "ansible_become_method: su\n");
  const tree = path.join(dir, "become");
  const result = await runCli([
    ...["adopt", "--inventory", path.join(source, "hosts.ini"), "--manifests", tree],
    ...["--ssh-config", fleet.sshConfig, "--known-hosts", fleet.knownHosts],
  ]);
  assert.equal(result.exitCode, 0, result.stderr);
  assert.match(
    result.stderr,
    /^host db-01: ansible_become_method "su" \(.*group_vars\/db\.yml:1\) is not supported: Quartermaster becomes root through sudo only; adopted without root$/m,
  );
  const web = parse(await readFile(path.join(tree, "groups/web.yaml"), "utf8")) as Layer & {
    ssh?: { become?: string };
  };
  assert.equal(web.ssh?.become, "sudo");
  assert.equal(web.sshd?.settings.x11forwarding, "yes");
  assert.equal(web.sshd?.settings.passwordauthentication, "no");
  const db = await readFile(path.join(tree, `nodes/${DB}.yaml`), "utf8");
  assert.doesNotMatch(db, /^sshd:|become/m);
});

test("without root, adopt says once which hosts' sshd settings it left out and why, and declares none", async () => {
  const tree = path.join(dir, "plain");
  const result = await adopt(tree);
  assert.equal(result.exitCode, 0, result.stderr);
  const said = result.stderr.split("\n").filter((line) => line.includes("sshd"));
  assert.deepEqual(said, [
    `not declared on ${DB}, ${WEB.join(", ")}, which could not show it: sshd: sshd -T needs root: declare ssh: { become: sudo } for this node`,
  ]);
  assert.match(
    result.stderr,
    /^not declared on db-01, web-01, web-02, which could not show it: accounts: sudo rights: \/etc\/sudoers is not readable by the audit user/m,
  );
  for (const folder of ["", "groups", "nodes"])
    for (const file of (await readdir(path.join(tree, folder))).filter((f) => f.endsWith(".yaml")))
      assert.doesNotMatch(await readFile(path.join(tree, folder, file), "utf8"), /^sshd:/m, file);
});
