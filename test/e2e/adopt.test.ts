// `adopt` end to end: real OpenSSH test hosts, the real CLI, Ansible inventories in YAML and INI.
import assert from "node:assert/strict";
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "yaml";
import { runCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";

const sysctlFile = (lines: string) => ({ "/etc/sysctl.d/90-role.conf": { contents: lines } });
// Two roles differing in a persisted sysctl (a file in /etc/sysctl.d) and a listener; web-02 has
// a value of its own.
const WEB = { sysctls: { "net.ipv4.ip_forward": "1" }, listeners: ["tcp/8080"] };
const DB = { sysctls: { "net.ipv4.ip_forward": "0" }, listeners: ["tcp/5432"] };
const ADOPTED = ["web-01", "web-02", "db-01", "db-02"];

let fleet: TestFleet;
let dir: string;
const cli = (args: string[]) => runCli([...args, "--ssh-config", fleet.sshConfig]);

async function filesOf(tree: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(tree, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) {
      const file = path.join(entry.parentPath, entry.name);
      out.set(path.relative(tree, file), await readFile(file, "utf8"));
    }
  return out;
}

const yamlInventory = (hosts: string[]) =>
  [
    "all:",
    "  vars:",
    "    http_port: 80",
    "  children:",
    "    web:",
    "      hosts:",
    ...hosts.filter((h) => h.startsWith("web")).map((h) => `        ${h}:`),
    "    db:",
    "      hosts:",
    ...hosts.filter((h) => h.startsWith("db")).map((h) => `        ${h}:`),
    "    other:",
    "      hosts:",
    ...hosts.filter((h) => !/^(web|db)/.test(h)).map((h) => `        ${h}:`),
    "",
  ].join("\n");

before(async () => {
  fleet = await startFleet([
    { name: "web-01", ...WEB, files: sysctlFile("net.ipv4.ip_forward = 1\n") },
    {
      name: "web-02",
      ...WEB,
      sysctls: { ...WEB.sysctls, "net.ipv4.tcp_syncookies": "0" },
      files: sysctlFile("net.ipv4.ip_forward = 1\nnet.ipv4.tcp_syncookies = 0\n"),
    },
    { name: "db-01", ...DB, files: sysctlFile("net.ipv4.ip_forward = 0\n") },
    { name: "db-02", ...DB, files: sysctlFile("net.ipv4.ip_forward = 0\n") },
    { name: "web-03", ...WEB, files: sysctlFile("net.ipv4.ip_forward = 1\n") },
    // The odd web node: one listener more than the role's.
    {
      name: "web-04",
      ...WEB,
      listeners: [...WEB.listeners, "tcp/9100"],
      files: sysctlFile("net.ipv4.ip_forward = 1\n"),
    },
    { name: "worker-01", sysctls: { "net.ipv4.ip_forward": "0" }, listeners: ["tcp/7070"] },
    { name: "worker-02", sysctls: { "net.ipv4.ip_forward": "0" }, listeners: ["tcp/7070"] },
    { name: "down-01", state: "stopped" },
  ]);
  dir = await mkdtemp(path.join(os.tmpdir(), "qm-adopt-"));
});
after(async () => {
  await fleet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("adopt from an Ansible YAML inventory", () => {
  let tree: string;
  let first: Awaited<ReturnType<typeof runCli>>;
  let partialKeys: string;
  /** Adopts `hosts`, written as a YAML inventory `file`, into the tree. */
  const adopt = async (file: string, hosts: string[], knownHosts: string) => {
    const inventory = path.join(dir, file);
    await writeFile(inventory, yamlInventory(hosts));
    return cli([
      "adopt",
      "--inventory",
      inventory,
      "--manifests",
      tree,
      "--known-hosts",
      knownHosts,
    ]);
  };

  before(async () => {
    tree = path.join(dir, "yaml-tree");
    // web-03's key is not trusted in this run.
    const lines = (await readFile(fleet.knownHosts, "utf8")).split("\n");
    const web03 = fleet.hosts.find((h) => h.name === "web-03")!;
    partialKeys = path.join(dir, "known_hosts.partial");
    await writeFile(
      partialKeys,
      lines.filter((l) => !l.startsWith(`${web03.address} `)).join("\n"),
    );
    first = await adopt("inventory.yml", [...ADOPTED, "web-03", "down-01"], partialKeys);
  });

  test("an unreachable host and one without a trusted key are named and left out: exit 4", () => {
    assert.equal(first.exitCode, 4, first.stderr);
    assert.match(
      first.stderr,
      /down-01: ssh: connect to host \S+ port \d+: Connection refused; not adopted/,
    );
    assert.match(
      first.stderr,
      /web-03: no trusted host key for \S+ in .*known_hosts\.partial.*not adopted/,
    );
    assert.match(first.stderr, /ignored inventory variable http_port \(6 hosts\)/);
    assert.match(first.stderr, /4 of 6 hosts adopted, 2 left out/);
  });

  test("the tree validates and audits clean right after (a group none of whose hosts was adopted gets no file)", async () => {
    const files = await filesOf(tree);
    assert.deepEqual(
      [...files.keys()].sort(),
      [
        "fleet.yaml",
        "groups/db.yaml",
        "groups/web.yaml",
        "known_hosts",
        ...ADOPTED.map((n) => `nodes/${n}.yaml`),
      ].sort(),
    );
    const validate = await runCli(["validate", "--manifests", tree]);
    assert.equal(validate.exitCode, 0, validate.stderr);
    const audit = await cli(["audit", "--manifests", tree, "--format", "json"]);
    assert.equal(audit.exitCode, 0, audit.stdout.slice(0, 3000) + audit.stderr);
  });

  test("shared values are declared once: fleet, then each role's group, then the node's own", async () => {
    const read = async (rel: string) =>
      parse(await readFile(path.join(tree, rel), "utf8")) as Record<string, any>;
    const fleetSpec = await read("fleet.yaml");
    assert.ok(Object.keys(fleetSpec.packages.installed_manifest).length > 50);
    assert.ok(fleetSpec.networking === undefined || !fleetSpec.networking.listening_ports);
    const web = await read("groups/web.yaml");
    const db = await read("groups/db.yaml");
    assert.deepEqual(web.system.sysctl_parameters, { "net.ipv4.ip_forward": "1" });
    assert.deepEqual(db.system.sysctl_parameters, { "net.ipv4.ip_forward": "0" });
    assert.ok(web.networking.listening_ports.includes("tcp/8080"));
    assert.ok(!web.networking.listening_ports.includes("tcp/5432"));
    assert.ok(db.networking.listening_ports.includes("tcp/5432"));
    assert.ok(
      web.networking.listening_ports.some((p: string) => /^tcp\/\d+-\d+@loopback$/.test(p)),
    );
    for (const name of ADOPTED) {
      const node = await read(`nodes/${name}.yaml`);
      assert.deepEqual(node.groups, [name.slice(0, -3)], name);
      assert.equal(node.packages, undefined, name);
      assert.equal(node.networking, undefined, name);
      const own = node.system?.sysctl_parameters;
      assert.deepEqual(
        own,
        name === "web-02" ? { "net.ipv4.tcp_syncookies": "0" } : undefined,
        name,
      );
    }
  });

  test("the tree is at most a third of the lines of the nodes' separate snapshots", async () => {
    const snapshots = await cli(["snapshot", "--manifests", tree, "--node", "web-*,db-*"]);
    assert.equal(snapshots.exitCode, 0, snapshots.stderr);
    assert.equal(snapshots.stdout.split("\n---\n").length, 4);
    const treeLines = [...(await filesOf(tree))]
      .filter(([rel]) => rel.endsWith(".yaml"))
      .reduce((sum, [, text]) => sum + text.split("\n").length, 0);
    assert.ok(treeLines * 3 <= snapshots.stdout.split("\n").length, `${treeLines} lines`);
    // A node's snapshot keeps what reaches it, so it can replace its file.
    const one = parse(snapshots.stdout.split("\n---\n")[0]!) as Record<string, unknown>;
    assert.deepEqual(one.groups, ["db"]);
  });

  test("a short-lived loopback listener after adoption is no drift; a new reachable one is", async () => {
    /** Listens on web-01 for 30 s, then, once the socket is listening, audits its ports. */
    const listenThenAudit = async (address: string, port: number, ...flags: string[]) => {
      // The local port of a listening (state 0A) socket, as /proc/net/tcp shows it.
      const listening = `:${port.toString(16).toUpperCase()} [0-9A-F:]* 0A `;
      await fleet.exec(
        "web-01",
        `${process.execPath} -e "require('net').createServer().listen(${port}, '${address}'); setTimeout(() => process.exit(), 30000)" >/dev/null 2>&1 &
        for i in $(seq 300); do grep -q '${listening}' /proc/net/tcp && break; sleep 0.1; done`,
      );
      return cli([
        "audit",
        "--manifests",
        tree,
        "--nodes",
        "web-01",
        "--category",
        "ports",
        ...flags,
      ]);
    };
    try {
      const quiet = await listenThenAudit("127.0.0.1", 45123);
      assert.equal(quiet.exitCode, 0, quiet.stdout);
      const loud = await listenThenAudit("0.0.0.0", 45124, "--format", "json");
      assert.equal(loud.exitCode, 1, loud.stdout);
      const drift = (JSON.parse(loud.stdout) as { nodes: { drift: { key: string }[] }[] }).nodes[0]!
        .drift;
      assert.deepEqual(
        drift.map((d) => d.key),
        ["tcp/45124"],
      );
    } finally {
      // Gone before the next adopt snapshots web-01, however slow this machine is today.
      await fleet.exec("web-01", "pkill -f 'listen[(]4512[34],' || true");
    }
  });

  test("a second adopt with one more host changes no existing file and adds that host", async () => {
    // A file the web role declares by hand: a new member's snapshot takes it at its live state.
    await appendFile(
      path.join(tree, "groups/web.yaml"),
      'files:\n  - { path: /etc/sysctl.d/90-role.conf, contents: "net.ipv4.ip_forward = 1\\n" }\n',
    );
    const before = await filesOf(tree);
    const second = await adopt("inventory-more.yml", [...ADOPTED, "web-03"], fleet.knownHosts);
    assert.equal(second.exitCode, 0, second.stderr);
    assert.match(second.stderr, /web-01: already declared/);
    const now = await filesOf(tree);
    for (const [rel, text] of before)
      if (rel === "known_hosts")
        assert.ok(now.get(rel)!.startsWith(text), "known_hosts only grows");
      else assert.equal(now.get(rel), text, rel);
    assert.deepEqual(
      [...now.keys()].filter((rel) => !before.has(rel)),
      ["nodes/web-03.yaml"],
    );
    const node = parse(now.get("nodes/web-03.yaml")!) as Record<string, unknown>;
    assert.deepEqual(node, { groups: ["web"] });
    const audit = await cli(["audit", "--manifests", tree, "--nodes", "web-03"]);
    assert.equal(audit.exitCode, 0, audit.stdout);
  });
});

describe("adopt from an Ansible INI inventory", () => {
  test("the same layers, with $schema comments pointing into the repository's node_modules", async () => {
    const repo = path.join(dir, "repo-b");
    await mkdir(path.join(repo, ".git"), { recursive: true });
    await mkdir(path.join(repo, "node_modules", "quartermaster", "schemas"), { recursive: true });
    const tree = path.join(repo, "fleet-manifests");
    const inventory = path.join(dir, "hosts.ini");
    await writeFile(
      inventory,
      [
        "[web]",
        "web-01",
        "web-02",
        "",
        "[db]",
        "db-0[1:2]",
        "",
        "[prod:children]",
        "web",
        "db",
        "",
      ].join("\n"),
    );
    const result = await cli(["adopt", "--inventory", inventory, "--manifests", tree]);
    assert.equal(result.exitCode, 0, result.stderr);
    const files = await filesOf(tree);
    assert.equal(
      files.get("nodes/db-01.yaml")!.split("\n")[0],
      "# yaml-language-server: $schema=../../node_modules/quartermaster/schemas/node-spec.schema.json",
    );
    assert.match(
      files.get("fleet.yaml")!,
      /^# yaml-language-server: \$schema=\.\.\/node_modules\/quartermaster\/schemas\/fleet\.schema\.json\n/,
    );
    // prod declares nothing of its own: no file, and web no longer names it.
    assert.equal(files.has("groups/prod.yaml"), false);
    assert.equal((parse(files.get("groups/web.yaml")!) as { groups?: string[] }).groups, undefined);
    const audit = await cli(["audit", "--manifests", tree]);
    assert.equal(audit.exitCode, 0, audit.stdout);
  });
});

describe("hostile inventories", () => {
  test("__proto__ and constructor are names like any other", async () => {
    const tree = path.join(dir, "proto-tree");
    const inventory = path.join(dir, "proto.ini");
    // Two web nodes in the group, a db node outside it: the group declares the web values.
    await writeFile(
      inventory,
      "[__proto__]\nconstructor ansible_host=web-01\nvalueOf ansible_host=web-03\n[db]\ntoString ansible_host=db-01\n",
    );
    const result = await cli(["adopt", "--inventory", inventory, "--manifests", tree]);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.deepEqual(
      parse(await readFile(path.join(tree, "nodes/constructor.yaml"), "utf8")).groups,
      ["__proto__"],
    );
    const audit = await cli(["audit", "--manifests", tree]);
    assert.equal(audit.exitCode, 0, audit.stdout);
  });

  test("a host name that is an ssh option, and a 100,000-host inventory with one, are refused by line", async () => {
    const tree = path.join(dir, "refused-tree");
    const small = path.join(dir, "option.ini");
    await writeFile(small, "[web]\nweb-01\n-oProxyCommand=touch${IFS}/tmp/pwned\n");
    const refused = await cli(["adopt", "--inventory", small, "--manifests", tree]);
    assert.equal(refused.exitCode, 2);
    assert.match(
      refused.stderr,
      /option\.ini:3: host name "-oProxyCommand=touch\$\{IFS\}\/tmp\/pwned" starts with "-": ssh would read it as an option/,
    );
    assert.doesNotMatch(refused.stderr, /\n\s+at /);
    const big = path.join(dir, "big.txt");
    const names = Array.from({ length: 100_000 }, (_, i) => `host-${i}`);
    await writeFile(big, `${names.join("\n")}\n-oProxyCommand=x\n`);
    const large = await cli(["adopt", "--inventory", big, "--manifests", tree]);
    assert.equal(large.exitCode, 2);
    assert.match(large.stderr, /big\.txt:100001: host name "-oProxyCommand=x"/);
    await assert.rejects(readdir(tree), "nothing written");
  });
});

describe("adopt from an operator's ssh_config", () => {
  test("each alias, in the file or an Include, gets what ssh -G resolves; no identity path in the tree; it audits clean", async () => {
    const tree = path.join(dir, "ssh-config-tree");
    const address = (name: string) => fleet.hosts.find((h) => h.name === name)!.address;
    const included = path.join(dir, "hosts.d");
    await mkdir(included, { recursive: true });
    await writeFile(
      path.join(included, "db.conf"),
      `Host db-01 db-02\n  HostName %h.unresolvable.invalid\nHost db-01\n  Port 22\n`,
    );
    // The first HostName obtained wins: db.conf's, read through the Include, is never used.
    const inventory = path.join(dir, "operator-ssh-config");
    await writeFile(
      inventory,
      [
        "Host db-01 db-02 web-01",
        `  User ${fleet.user}`,
        ...["web-01", "db-01", "db-02"].map((n) => `Host ${n}\n  HostName ${address(n)}`),
        `Include ${included}/*.conf`,
        "Host * !web-01",
        "  User never-used",
        "Host *",
        `  IdentityFile "${fleet.identityFile}"`,
        "",
      ].join("\n"),
    );
    // What a workflow's ssh config holds: the key and the trusted host keys, no host of its own.
    const runner = path.join(dir, "runner-ssh-config");
    await writeFile(
      runner,
      `Host *\n  IdentityFile "${fleet.identityFile}"\n  IdentitiesOnly yes\n  UserKnownHostsFile "${fleet.knownHosts}"\n  GlobalKnownHostsFile /dev/null\n`,
    );
    const result = await runCli([
      "adopt",
      "--inventory",
      inventory,
      "--manifests",
      tree,
      "--ssh-config",
      runner,
    ]);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(result.stderr, /3 of 3 hosts adopted/);
    const files = await filesOf(tree);
    for (const name of ["web-01", "db-01", "db-02"]) {
      const node = parse(files.get(`nodes/${name}.yaml`)!);
      assert.equal(node.host, address(name), name);
    }
    const text = [...files.values()].join("\n");
    assert.ok(text.includes(fleet.user), "the user ssh resolves is declared");
    assert.ok(!text.includes(fleet.dir), "no path of the adopting machine in the tree");
    assert.ok(!text.includes("never-used") && !text.includes("unresolvable"));
    const audit = await runCli(["audit", "--manifests", tree, "--ssh-config", runner]);
    assert.equal(audit.exitCode, 0, audit.stdout.slice(0, 3000) + audit.stderr);
  });
});

describe("adopt a role whose odd member listens on one more port", () => {
  test("the role's port list is the group's; the odd node's file holds its own list; --packages all declares every package, --pin pins one; it audits clean", async () => {
    const tree = path.join(dir, "majority-tree");
    const inventory = path.join(dir, "majority.ini");
    await writeFile(inventory, "[web]\nweb-01\nweb-03\nweb-04\n[db]\ndb-01\ndb-02\n");
    const result = await cli([
      ...["adopt", "--inventory", inventory, "--manifests", tree],
      ...["--pin", "bash,no-such-package", "--packages", "all"],
    ]);
    assert.equal(result.exitCode, 0, result.stderr);
    const read = async (rel: string) =>
      parse(await readFile(path.join(tree, rel), "utf8")) as Record<string, any>;
    // Only the pinned package takes its live version.
    const installed = (await read("fleet.yaml")).packages.installed_manifest as Record<
      string,
      string
    >;
    assert.match(installed.bash!, /^\d[^*]*$/);
    assert.equal(installed.dash, "*");
    assert.deepEqual(
      Object.keys(installed).filter((name) => installed[name] !== "*"),
      ["bash"],
    );
    const web = (await read("groups/web.yaml")).networking.listening_ports as string[];
    assert.ok(web.includes("tcp/8080") && !web.includes("tcp/9100"), web.join(" "));
    const odd = (await read("nodes/web-04.yaml")).networking.listening_ports as string[];
    assert.deepEqual([...odd].sort(), [...web, "tcp/9100"].sort());
    for (const name of ["web-01", "web-03"])
      assert.equal((await read(`nodes/${name}.yaml`)).networking, undefined, name);
    const audit = await cli(["audit", "--manifests", tree]);
    assert.equal(audit.exitCode, 0, audit.stdout.slice(0, 3000) + audit.stderr);
    // A file declared by path alone: its snapshot holds the live contents, mode and owner.
    await appendFile(path.join(tree, "nodes/web-01.yaml"), "files:\n  - path: /etc/hostname\n");
    const snapshot = await cli(["snapshot", "--manifests", tree, "--node", "web-01"]);
    assert.equal(snapshot.exitCode, 0, snapshot.stderr);
    const live = (await fleet.exec("web-01", "cat /etc/hostname; stat -c '%a %U %G' /etc/hostname"))
      .trimEnd()
      .split("\n");
    const [mode, owner, group] = live.pop()!.split(" ");
    const declared = (parse(snapshot.stdout) as { files: Record<string, unknown>[] }).files;
    assert.deepEqual(
      declared.find((f) => f.path === "/etc/hostname"),
      {
        path: "/etc/hostname",
        contents: `${live.join("\n")}\n`,
        mode: mode!.padStart(4, "0"),
        owner,
        group,
      },
    );
  });
});

describe("adopt a three-role fleet whose ssh settings are shared", () => {
  test("fleet.yaml holds the shared ssh: block, groups the role values, node files only what differs; no path of this machine in the tree; it audits clean", async () => {
    const tree = path.join(dir, "roles-tree");
    const inventory = path.join(dir, "roles.ini");
    await writeFile(
      inventory,
      [
        "[web]\nweb-01\nweb-03\nweb-04\n[db]\ndb-01\ndb-02\n[worker]\nworker-01\nworker-02\n",
        "[prod:children]\nweb\ndb\nworker\n",
        `[all:vars]\nansible_user=${fleet.user}\nansible_ssh_private_key_file=${fleet.identityFile}\n`,
        // A role's own ssh setting: the db group's port.
        "[db:vars]\nansible_port=22\n",
      ].join(""),
    );
    const result = await cli(["adopt", "--inventory", inventory, "--manifests", tree]);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(
      result.stderr,
      /identity files: put them in the runner's ssh config or the workflow's SSH key secret \(7 hosts/,
    );
    const files = await filesOf(tree);
    // prod declares nothing of its own: no file, and no one names it.
    assert.deepEqual([...files.keys()].filter((f) => f.startsWith("groups/")).sort(), [
      "groups/db.yaml",
      "groups/web.yaml",
      "groups/worker.yaml",
    ]);
    const read = (rel: string) => parse(files.get(rel)!) as Record<string, any>;
    assert.deepEqual(read("fleet.yaml").ssh, { user: fleet.user });
    assert.deepEqual(read("groups/db.yaml").ssh, { port: 22 });
    assert.equal(read("groups/web.yaml").ssh, undefined);
    assert.ok(read("groups/worker.yaml").networking.listening_ports.includes("tcp/7070"));
    for (const [rel, text] of files) {
      if (rel === "known_hosts") continue;
      assert.doesNotMatch(text, /\bprod\b|identity_file/, rel);
      // Nothing of the adopting machine: its tmp dirs, its home, the test hosts' folder; nothing
      // inside them (the hosts' own root user has the adopting machine's home, /root, as a value).
      for (const local of [dir, os.tmpdir(), os.homedir(), fleet.dir])
        assert.ok(!text.includes(`${local}/`), `${rel} names a path in ${local}`);
    }
    // A node holding nothing of its own has only its groups: web-04's extra port is its own.
    for (const name of ["web-01", "web-03", "db-01", "db-02", "worker-01", "worker-02"]) {
      const node = read(`nodes/${name}.yaml`);
      assert.deepEqual(
        Object.keys(node).filter((k) => k !== "groups" && k !== "host"),
        [],
        name,
      );
    }
    assert.ok(read("nodes/web-04.yaml").networking.listening_ports.includes("tcp/9100"));
    const validate = await runCli(["validate", "--manifests", tree]);
    assert.equal(validate.exitCode, 0, validate.stderr);
    const audit = await cli(["audit", "--manifests", tree]);
    assert.equal(audit.exitCode, 0, audit.stdout.slice(0, 3000) + audit.stderr);
  });
});
