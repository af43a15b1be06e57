// `adopt` from an Ansible inventory folder as a team keeps it: the hosts file, the jump host set only
// in group_vars/all.yml, a host_vars override, a vault value. Real sshd hosts reachable only
// through a jump host; the first audit of the adopted tree runs as the drift-audit workflow runs
// it (the tree's ssh_config, then the defaults pinning the tree's known_hosts). Needs root.
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "yaml";
import type { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { scratchTrees } from "../support/tree.js";

const NODES = ["web-01", "web-02", "web-03", "db-01"];
const APP_CONF = "/etc/qm-e2e/app.conf";
/** The same on every node, but readable by root alone on web-02 (mode 0600). */
const ENV_FILE = "/etc/qm-e2e-env/app.env";
/** A file on every node, the same on each; adopted by a second `adopt --files` only. */
const LIMITS_CONF = "/etc/qm-e2e/limits.conf";
// The web role's config file, the same on web-01 and web-02; web-03 has one setting more.
const CONFS: Record<string, string> = {
  "web-01": "role = web\n",
  "web-02": "role = web\n",
  "web-03": "role = web\nworkers = 8\n",
  "db-01": "role = db\n",
};
const VAULT = [
  "!vault |",
  "  $ANSIBLE_VAULT;1.1;AES256",
  "  62313365396662343061393464336163383764373764613633653634306231386433626436623361",
  "",
].join("\n");
const scratch = scratchTrees();

let fleet: TestFleet;
let dir: string;
/** The operator's own ssh_config: the bastion's alias, the audit key, every host key trusted. */
let operatorConfig: string;
const address = (name: string) => fleet.hosts.find((h) => h.name === name)!.address;

before(async () => {
  fleet = await startFleet([
    { name: "jump-01" },
    ...NODES.map((name) => ({
      name,
      behind: "jump-01",
      files: {
        [APP_CONF]: { contents: CONFS[name]!, mode: "0644" },
        [LIMITS_CONF]: { contents: "nofile = 4096\n", mode: "0644" },
        [ENV_FILE]: { contents: "PORT=8080\n", mode: name === "web-02" ? "0600" : "0644" },
      },
    })),
    { name: "down-01", state: "stopped" as const },
  ]);
  dir = await scratch();
  operatorConfig = path.join(dir, "operator_ssh_config");
  await writeFile(
    operatorConfig,
    [
      `Host bastion\n  HostName ${address("jump-01")}\n  User ${fleet.user}`,
      `Host bastion-down\n  HostName ${address("down-01")}\n  User ${fleet.user}`,
      `Host *\n  IdentityFile "${fleet.identityFile}"\n  IdentitiesOnly yes`,
      `  UserKnownHostsFile "${fleet.knownHosts}"\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n`,
    ].join("\n"),
  );
});
after(() => fleet?.stop());

/**
 * An inventory folder: `hosts` (INI, no extension) with every host's address, db-01's stale; the
 * jump host and user only in group_vars/all.yml, beside a vault value; db-01's address in host_vars.
 */
async function inventoryFolder(name: string, jump = "bastion"): Promise<string> {
  const folder = path.join(dir, name);
  await mkdir(path.join(folder, "group_vars"), { recursive: true });
  await mkdir(path.join(folder, "host_vars"), { recursive: true });
  await writeFile(
    path.join(folder, "hosts"),
    [
      "[web]",
      ...["web-01", "web-02", "web-03"].map((n) => `${n} ansible_host=${address(n)}`),
      "[db]",
      "db-01 ansible_host=192.0.2.99",
      "[prod:children]",
      "web",
      "db",
      "",
    ].join("\n"),
  );
  await writeFile(
    path.join(folder, "group_vars", "all.yml"),
    `ansible_user: ${fleet.user}\nansible_ssh_common_args: '-o ProxyJump=${jump}'\nansible_become_password: ${VAULT}`,
  );
  await writeFile(
    path.join(folder, "host_vars", "db-01.yml"),
    `ansible_host: ${address("db-01")}\n`,
  );
  return folder;
}

const adopt = (inventory: string, manifests: string, extra: string[] = []) =>
  runCli([
    ...["adopt", "--inventory", inventory, "--manifests", manifests],
    ...["--ssh-config", operatorConfig, ...extra],
  ]);

/**
 * The ssh_config the drift-audit workflow writes (ssh/action.yml): the repository's
 * fleet-manifests/ssh_config first, then `Host *` with the key and the tree's known_hosts pinned.
 */
async function workflowSshConfig(tree: string): Promise<string> {
  const file = path.join(dir, `runner_ssh_config_${path.basename(tree)}`);
  await writeFile(
    file,
    [
      await readFile(path.join(tree, "ssh_config"), "utf8"),
      `Host *\n  IdentityFile "${fleet.identityFile}"\n  IdentitiesOnly yes`,
      `  UserKnownHostsFile "${path.join(tree, "known_hosts")}"\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n`,
    ].join("\n"),
  );
  return file;
}

/**
 * An audit of `tree` as the workflow runs it, beside what the team commits with the manifests: an
 * ssh_config with the bastion's address and user.
 */
async function auditCommitted(tree: string, extra: string[] = []) {
  await writeFile(
    path.join(tree, "ssh_config"),
    `Host bastion\n  HostName ${address("jump-01")}\n  User ${fleet.user}\n`,
  );
  return runCli([
    ...["audit", "--manifests", tree, "--ssh-config", await workflowSshConfig(tree)],
    ...extra,
  ]);
}

describe("adopt from an inventory folder whose jump host is set only in group_vars/all.yml", () => {
  let tree: string;
  let adopted: Awaited<ReturnType<typeof adopt>>;

  before(async () => {
    tree = path.join(dir, "fleet-manifests");
    adopted = await adopt(await inventoryFolder("inventory"), tree);
  });

  test("every host adopted through the jump host; the vault value is named and never needed", () => {
    assert.equal(adopted.exitCode, 0, adopted.stderr);
    assert.match(adopted.stderr, /4 of 4 hosts adopted, 0 left out/);
    assert.match(
      adopted.stderr,
      /left out inventory variable ansible_become_password \(\S*inventory\/group_vars\/all\.yml\) \(4 hosts\): vault-encrypted, never decrypted; not needed to connect/,
    );
    assert.doesNotMatch(adopted.stderr, /\n\s+at /);
  });

  test("the tree says how hosts are reached as the inventory tree does: the jump host and user fleet-wide, db-01's address from host_vars", async () => {
    const read = async (rel: string) =>
      parse(await readFile(path.join(tree, rel), "utf8")) as Record<string, any>;
    assert.deepEqual((await read("fleet.yaml")).ssh, { user: fleet.user, proxy_jump: "bastion" });
    assert.equal((await read("nodes/db-01.yaml")).host, address("db-01"));
    const validate = await runCli(["validate", "--manifests", tree]);
    assert.equal(validate.exitCode, 0, validate.stderr);
  });

  test("the packages declared are those apt marks as installed on purpose on the hosts: apt-mark showmanual", async () => {
    const fleetSpec = parse(await readFile(path.join(tree, "fleet.yaml"), "utf8")) as {
      packages: { installed_manifest: Record<string, string> };
    };
    const manual = (await fleet.exec("web-01", "apt-mark showmanual")).split("\n").filter(Boolean);
    assert.ok(manual.length > 10, manual.join(" "));
    assert.deepEqual(Object.keys(fleetSpec.packages.installed_manifest).sort(), manual.sort());
    assert.match(
      adopted.stderr,
      /packages: declared those the package manager marks as installed on purpose; [\d,]+ packages installed as dependencies left to them on 4 hosts \(--packages all declares every one\)/,
    );
  });

  test("the jump host's trusted key is in the tree's known_hosts beside the nodes'", async () => {
    const known = (await readFile(path.join(tree, "known_hosts"), "utf8")).trim().split("\n");
    const trusted = (await readFile(fleet.knownHosts, "utf8")).trim().split("\n");
    const keyOf = (name: string) => trusted.find((l) => l.startsWith(`${address(name)} `))!;
    assert.deepEqual(known.sort(), ["jump-01", ...NODES].map(keyOf).sort());
  });

  test("the first audit of the committed tree, as the workflow runs it, is clean with no host key error", async () => {
    const out = path.join(dir, "report.json");
    const audit = await auditCommitted(tree, ["--format", "json", "--out", out]);
    const report = JSON.parse(await readFile(out, "utf8")) as Report;
    assert.equal(
      audit.exitCode,
      0,
      audit.stderr + JSON.stringify(report.nodes.map((n) => n.error)),
    );
    assert.deepEqual(
      report.nodes.map((n) => [n.name, n.status]),
      NODES.map((n) => [n, "clean"]).sort(),
    );
    assert.doesNotMatch(audit.stderr, /host key/i);
  });
});

describe("the same adoption with --files: config files factored into layers", () => {
  test("the web group's file holds the common contents, the odd host's file its own; the audit is clean", async () => {
    const tree = path.join(dir, "files-tree");
    const adopted = await adopt(await inventoryFolder("inventory-files"), tree, [
      ...["--files", APP_CONF],
    ]);
    assert.equal(adopted.exitCode, 0, adopted.stderr);
    const read = async (rel: string) =>
      parse(await readFile(path.join(tree, rel), "utf8")) as Record<string, any>;
    const filesOf = (spec: Record<string, any>) =>
      (spec.files ?? []) as { path: string; contents?: string; mode?: string }[];
    assert.deepEqual(filesOf(await read("groups/web.yaml")), [
      { path: APP_CONF, contents: CONFS["web-01"], mode: "0644", owner: "root", group: "root" },
    ]);
    assert.deepEqual(
      filesOf(await read("nodes/web-03.yaml")).map((f) => f.contents),
      [CONFS["web-03"]],
    );
    assert.deepEqual(
      filesOf(await read("nodes/db-01.yaml")).map((f) => f.contents),
      [CONFS["db-01"]],
    );
    for (const name of ["web-01", "web-02"])
      assert.equal((await read(`nodes/${name}.yaml`)).files, undefined, name);
    assert.equal((await read("fleet.yaml")).files, undefined);
    const audit = await auditCommitted(tree);
    assert.equal(audit.exitCode, 0, audit.stdout.slice(0, 3000) + audit.stderr);
    // The audit compares the declared contents: web-03's own file holds its own.
    await fleet.exec("web-03", `printf 'role = web\\n' > ${APP_CONF}`);
    try {
      const drifted = await runCli([
        ...["audit", "--manifests", tree, "--ssh-config", await workflowSshConfig(tree)],
        ...["--nodes", "web-03"],
      ]);
      assert.equal(drifted.exitCode, 1, drifted.stdout);
    } finally {
      await fleet.exec("web-03", `printf '%s' '${CONFS["web-03"]}' > ${APP_CONF}`);
    }
  });

  test("adopt again with one more path: the file every node holds alike goes to fleet.yaml after what it holds, nothing else changes; the audit is clean", async () => {
    const tree = path.join(dir, "files-tree");
    const rels = ["fleet.yaml", "groups/web.yaml", "groups/db.yaml", "groups/prod.yaml"];
    rels.push(...NODES.map((n) => `nodes/${n}.yaml`), "known_hosts");
    const before = new Map<string, string>();
    for (const rel of rels)
      before.set(rel, await readFile(path.join(tree, rel), "utf8").catch(() => ""));
    const again = await adopt(path.join(dir, "inventory-files"), tree, [
      ...["--files", `${APP_CONF},${LIMITS_CONF}`],
    ]);
    assert.equal(again.exitCode, 0, again.stderr);
    assert.equal(again.stdout.trim(), `added files or units to ${path.join(tree, "fleet.yaml")}`);
    const read = async (rel: string) => await readFile(path.join(tree, rel), "utf8");
    for (const rel of rels.filter((r) => r !== "fleet.yaml"))
      assert.equal(await read(rel).catch(() => ""), before.get(rel), rel);
    const limits = {
      path: LIMITS_CONF,
      contents: "nofile = 4096\n",
      mode: "0644",
      owner: "root",
      group: "root",
    };
    const spec = parse(await read("fleet.yaml")) as Record<string, any>;
    const old = parse(before.get("fleet.yaml")!) as Record<string, any>;
    // What the file held, in its order, then the new file.
    assert.deepEqual(
      Object.keys(spec),
      old.files ? Object.keys(old) : [...Object.keys(old), "files"],
    );
    if (!old.files) assert.ok((await read("fleet.yaml")).startsWith(before.get("fleet.yaml")!));
    assert.deepEqual(spec.files, [...(old.files ?? []), limits]);
    for (const [key, value] of Object.entries(old))
      if (key !== "files") assert.deepEqual(spec[key], value, key);
    const audit = await runCli([
      ...["audit", "--manifests", tree, "--ssh-config", await workflowSshConfig(tree)],
    ]);
    assert.equal(audit.exitCode, 0, audit.stdout.slice(0, 3000) + audit.stderr);
  });
});

test("a first adopt --files of a file one host holds in another mode, root-only: the group holds the common entry, that host's file its mode and no contents; the audit is clean", async () => {
  const tree = path.join(dir, "env-tree");
  const adopted = await adopt(await inventoryFolder("inventory-env"), tree, ["--files", ENV_FILE]);
  assert.equal(adopted.exitCode, 0, adopted.stderr);
  assert.match(adopted.stderr, /4 of 4 hosts adopted, 0 left out/);
  const read = async (rel: string) =>
    parse(await readFile(path.join(tree, rel), "utf8")) as Record<string, any>;
  const entry = { path: ENV_FILE, owner: "root", group: "root" };
  // Three of prod's four members hold it alike.
  assert.deepEqual((await read("groups/prod.yaml")).files, [
    { ...entry, contents: "PORT=8080\n", mode: "0644" },
  ]);
  // The loader merges an entry field by field: the group's contents are set to null there.
  assert.deepEqual((await read("nodes/web-02.yaml")).files, [
    { ...entry, mode: "0600", contents: null },
  ]);
  for (const name of ["web-01", "web-03", "db-01"])
    assert.equal((await read(`nodes/${name}.yaml`)).files, undefined, name);
  const validate = await runCli(["validate", "--manifests", tree]);
  assert.equal(validate.exitCode, 0, validate.stderr);
  const audit = await auditCommitted(tree);
  assert.equal(audit.exitCode, 0, audit.stdout.slice(0, 3000) + audit.stderr);
});

describe("--files globs, expanded on each host", () => {
  test("/etc/qm-e2e/*.conf declares each match, factored: the file alike everywhere in fleet.yaml, the web one in the web group", async () => {
    const tree = path.join(dir, "glob-tree");
    const adopted = await adopt(await inventoryFolder("inventory-glob"), tree, [
      ...["--files", "/etc/qm-e2e/*.conf"],
    ]);
    assert.equal(adopted.exitCode, 0, adopted.stderr);
    const read = async (rel: string) =>
      parse(await readFile(path.join(tree, rel), "utf8")) as Record<string, any>;
    const pathsOf = async (rel: string) =>
      ((await read(rel)).files ?? []).map((f: { path: string }) => f.path);
    assert.deepEqual(await pathsOf("fleet.yaml"), [LIMITS_CONF]);
    assert.deepEqual(await pathsOf("groups/web.yaml"), [APP_CONF]);
    assert.deepEqual(await pathsOf("nodes/web-03.yaml"), [APP_CONF]);
  });

  test("more matches than the cap: the first 200 declared, and the host says so", async () => {
    const many = "/etc/qm-e2e/many";
    await fleet.exec(
      "web-01",
      `mkdir -p ${many} && for i in $(seq 1000 1250); do echo $i > ${many}/f$i; done`,
    );
    try {
      const tree = path.join(dir, "glob-cap-tree");
      const adopted = await adopt(await inventoryFolder("inventory-glob-cap"), tree, [
        ...["--files", `${many}/*,/etc/qm-e2e/none-*`],
      ]);
      assert.equal(adopted.exitCode, 0, adopted.stderr);
      assert.match(
        adopted.stderr,
        /^web-01: --files \/etc\/qm-e2e\/many\/\*: more than 200 matches; the first 200 declared/m,
      );
      assert.match(adopted.stderr, /^web-01: --files \/etc\/qm-e2e\/none-\*: no match$/m);
      const node = parse(await readFile(path.join(tree, "nodes/web-01.yaml"), "utf8"));
      const paths = (node.files as { path: string }[]).map((f) => f.path);
      assert.equal(paths.length, 200);
      assert.equal(paths.at(-1), `${many}/f1199`);
    } finally {
      await fleet.exec("web-01", `rm -rf ${many}`);
    }
  });
});

describe("hosts left out because of their jump host say so, naming it", () => {
  test("no trusted key for the jump host: each host names it and where its key was looked for", async () => {
    const trusted = (await readFile(fleet.knownHosts, "utf8")).split("\n");
    const partial = path.join(dir, "known_hosts.no-jump");
    await writeFile(
      partial,
      trusted.filter((l) => !l.startsWith(`${address("jump-01")} `)).join("\n"),
    );
    const result = await adopt(await inventoryFolder("inventory-nokey"), path.join(dir, "t2"), [
      ...["--known-hosts", partial],
    ]);
    assert.equal(result.exitCode, 4, result.stderr);
    for (const name of NODES)
      assert.match(
        result.stderr,
        new RegExp(
          `${name}: no trusted host key for its jump host bastion \\(${address("jump-01").replaceAll(".", "\\.")}\\) in \\S*known_hosts\\.no-jump: verify its key .*; not adopted`,
        ),
      );
    assert.match(result.stderr, /0 of 4 hosts adopted, 4 left out/);
  });

  test("an unreachable jump host: each host names it with ssh's words", async () => {
    const result = await adopt(
      await inventoryFolder("inventory-down", "bastion-down"),
      path.join(dir, "t3"),
    );
    assert.equal(result.exitCode, 4, result.stderr);
    for (const name of NODES)
      assert.match(
        result.stderr,
        new RegExp(
          `${name}: its jump host bastion-down cannot be reached \\(ssh: connect to host \\S+ port 22: Connection refused\\); not adopted`,
        ),
      );
  });
});
