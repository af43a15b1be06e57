// Inventories read as Ansible reads them: every inventory under test/fixtures/inventories (real
// public ones, see its README, and one per construct Ansible treats specially) is read by
// Quartermaster and by `ansible-inventory --list`, and the two must agree host for host on
// address, port, user and groups, and group for group on children. An inventory Ansible cannot
// parse must be refused, naming a line. Every tree under test/fixtures/inventory-trees (an
// inventory with its group_vars/ and host_vars/) must agree the same way, jump hosts included.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { before, test } from "node:test";
import {
  planAdoption,
  readAdjacentVars,
  readInventory,
  readInventorySources,
} from "../../src/adopt/inventory/index.js";
import { readSshArgs } from "../../src/adopt/inventory/ssh-args.js";
import { readInventoryTree } from "../../src/adopt/inventory/sources.js";
import { InventoryErrors } from "../../src/errors.js";

const run = promisify(execFile);
const CORPUS = path.resolve("test/fixtures/inventories");
const TREES = path.resolve("test/fixtures/inventory-trees");

interface AnsibleGroup {
  hosts?: string[];
  children?: string[];
}
/** `--list` output: groups by name, and `_meta.hostvars` (read through `hostVars`). */
type AnsibleList = Record<string, AnsibleGroup>;
const hostVars = (list: AnsibleList) =>
  (list._meta as unknown as { hostvars: Record<string, Record<string, unknown>> }).hostvars;

/**
 * `ansible-inventory -i FILE --list` for each file, as its own process forked from one Python that
 * imported Ansible once: each run is the command's own `main` in a fresh copy of that Python, and
 * Ansible's start-up (0.4 s of CPU) is paid once, not once per inventory.
 */
const FORKED_ANSIBLE_INVENTORY = `
import json, os, sys, tempfile
from ansible.cli.inventory import main
runs = []
for file in json.load(sys.stdin):
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        code = 0
        try:
            main(["ansible-inventory", "-i", file, "--list"])
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    os.waitpid(pid, 0)
    out.seek(0)
    err.seek(0)
    runs.append({"stdout": out.read().decode("utf-8", "replace"), "stderr": err.read().decode("utf-8", "replace")})
json.dump(runs, sys.stdout)
`;

/** The Python that ansible-inventory on PATH runs: its `#!` line's. */
function ansiblePython(): string {
  const dir = (process.env.PATH ?? "")
    .split(":")
    .find((d) => existsSync(path.join(d, "ansible-inventory")));
  if (!dir) throw new Error("ansible-inventory is not on PATH");
  const shebang = readFileSync(path.join(dir, "ansible-inventory"), "utf8").split("\n")[0]!;
  return /^#! *(\S+)/.exec(shebang)![1]!;
}

/** What Ansible makes of each file, or undefined when it parses no inventory from it. */
async function ansibleLists(files: string[]): Promise<(AnsibleList | undefined)[]> {
  const child = run(ansiblePython(), ["-c", FORKED_ANSIBLE_INVENTORY], {
    env: { ...process.env, ANSIBLE_INVENTORY_UNPARSED_WARNING: "true", ANSIBLE_NOCOLOR: "1" },
    maxBuffer: 256 * 1024 * 1024,
  });
  child.child.stdin!.end(JSON.stringify(files));
  const runs = JSON.parse((await child).stdout) as { stdout: string; stderr: string }[];
  return runs.map(({ stdout, stderr }) =>
    /Unable to parse|Failed to parse/.test(stderr)
      ? undefined
      : (JSON.parse(stdout) as AnsibleList),
  );
}

interface Seen {
  address: string;
  port?: number;
  user?: string;
  /** The jump hosts of `ansible_ssh_common_args` / `ansible_ssh_extra_args`, trees only. */
  jump?: string;
  groups: string[];
}

/** Each host as Ansible resolves it: `ansible_ssh_*` before `ansible_*`, the name by default. */
function ansibleHosts(list: AnsibleList, jumps = false): Map<string, Seen> {
  const hosts = new Map<string, Seen>();
  const vars = new Map(Object.entries(hostVars(list)));
  const direct = new Map<string, string[]>();
  for (const [group, entry] of Object.entries(list))
    for (const host of entry.hosts ?? [])
      if (group !== "ungrouped" && group !== "_meta")
        direct.set(host, [...(direct.get(host) ?? []), group]);
  const names = new Set([...vars.keys(), ...Object.values(list).flatMap((g) => g.hosts ?? [])]);
  for (const name of names) {
    const v = new Map(Object.entries(vars.get(name) ?? {}));
    const pick = (key: string) => v.get(`ansible_ssh_${key}`) ?? v.get(`ansible_${key}`);
    const templated = (x: unknown) => typeof x === "string" && x.includes("{{");
    const address = pick("host");
    const port = pick("port");
    const user = pick("user");
    // As ssh reads the arguments Ansible passes: the common ones, then the extra ones.
    const args = ["common", "extra"].map((k) => v.get(`ansible_ssh_${k}_args`));
    const jump = args
      .filter((a): a is string => typeof a === "string" && !templated(a))
      .map((a) => readSshArgs(a).jump)
      .find((j) => j !== undefined);
    hosts.set(name, {
      address: address === undefined || templated(address) ? name : String(address),
      ...(port !== undefined && !templated(port) && { port: Number(port) }),
      ...(user !== undefined && !templated(user) && { user: String(user) }),
      ...(jumps && jump !== undefined && { jump }),
      groups: (direct.get(name) ?? []).sort(),
    });
  }
  return hosts;
}

const ansibleChildren = (list: AnsibleList) =>
  new Map(
    Object.entries(list)
      .filter(([name, g]) => name !== "_meta" && name !== "all" && (g.children ?? []).length)
      .map(([name, g]) => [name, [...g.children!].sort()]),
  );

// Read by Ansible, refused here on purpose: a node name is a file name, a branch name and an ssh
// destination, so it stays ASCII (docs/manifest.md says so).
const REFUSED = new Map([
  ["class-non-ascii.ini", /class-non-ascii\.ini:2: host name "münchen-01"/],
]);

const files = (await readdir(CORPUS)).filter((f) => f !== "README.md").sort();
const ansible = new Map<string, AnsibleList | undefined>();
before(async () => {
  const lists = await ansibleLists(files.map((file) => path.join(CORPUS, file)));
  files.forEach((file, i) => ansible.set(file, lists[i]));
});

test("the corpus holds the real inventories its README names", async () => {
  const readme = await readFile(path.join(CORPUS, "README.md"), "utf8");
  for (const file of files) assert.ok(readme.includes(`\`${file}\``), `${file} not in README`);
  assert.ok(files.length >= 25, `${files.length} inventories`);
});

for (const file of files)
  test(`${file} reads as ansible-inventory --list reads it`, async () => {
    const full = path.join(CORPUS, file);
    const expected = ansible.get(file);
    const text = await readFile(full, "utf8");
    const refused = REFUSED.get(file);
    if (refused) {
      assert.ok(expected, "Ansible reads it");
      assert.throws(() => readInventory(file, text), refused);
      return;
    }
    if (!expected) {
      assert.throws(
        () => planAdoption(file, readInventory(file, text)),
        (e: unknown) =>
          e instanceof InventoryErrors && new RegExp(`^${file}:\\d+: `).test(e.message),
      );
      return;
    }
    const inventory = readInventory(file, text);
    const plan = planAdoption(file, inventory);
    const ours = new Map<string, Seen>(
      plan.hosts.map((h) => [
        h.name,
        {
          address: h.host ?? h.name,
          ...(h.ssh.port !== undefined && { port: h.ssh.port }),
          ...(h.ssh.user !== undefined && { user: h.ssh.user }),
          groups: [...inventory.hosts.get(h.name)!.groups].sort(),
        },
      ]),
    );
    assert.deepEqual(
      [...ours.keys()].sort(),
      [...ansibleHosts(expected).keys()].sort(),
      "host names",
    );
    for (const [name, seen] of ansibleHosts(expected))
      assert.deepEqual(ours.get(name), seen, `host ${name}`);
    const children = new Map(
      [...inventory.groups.values()]
        .filter((g) => g.children.length)
        .map((g) => [g.name, [...g.children].sort()]),
    );
    assert.deepEqual(children, ansibleChildren(expected), "children");
  });

/** Each tree of the corpus with its `-i` entry, as its README's tables name them. */
const trees = [
  ...(await readFile(path.join(TREES, "README.md"), "utf8")).matchAll(
    /^\| `([^`]+)` \| `([^`]+)` \|/gm,
  ),
].map((m) => ({ tree: m[1]!, entry: path.join(TREES, m[1]!, m[2]!) }));
const treeLists = new Map<string, AnsibleList | undefined>();
before(async () => {
  const lists = await ansibleLists(trees.map((t) => t.entry));
  trees.forEach((t, i) => treeLists.set(t.tree, lists[i]));
});

test("every tree of the tree corpus is in its README", async () => {
  const folders = (await readdir(TREES, { withFileTypes: true })).filter((e) => e.isDirectory());
  assert.deepEqual(folders.map((e) => e.name).sort(), trees.map((t) => t.tree).sort());
  assert.ok(trees.length >= 8, `${trees.length} trees`);
});

for (const { tree, entry } of trees)
  test(`inventory tree ${tree} reads as ansible-inventory --list reads it, group_vars and host_vars included`, async () => {
    const expected = treeLists.get(tree);
    assert.ok(expected, "Ansible reads it");
    const read = await readInventoryTree(entry);
    const inventory = readInventorySources(read);
    const plan = planAdoption(entry, inventory, readAdjacentVars(read, entry));
    assert.deepEqual([...plan.unreadable], []);
    const ours = new Map<string, Seen>(
      plan.hosts.map((h) => [
        h.name,
        {
          address: h.host ?? h.name,
          ...(h.ssh.port !== undefined && { port: h.ssh.port }),
          ...(h.ssh.user !== undefined && { user: h.ssh.user }),
          ...(h.ssh.proxy_jump !== undefined && { jump: h.ssh.proxy_jump }),
          groups: [...inventory.hosts.get(h.name)!.groups].sort(),
        },
      ]),
    );
    const theirs = ansibleHosts(expected, true);
    assert.deepEqual([...ours.keys()].sort(), [...theirs.keys()].sort(), "host names");
    for (const [name, seen] of theirs) assert.deepEqual(ours.get(name), seen, `host ${name}`);
  });
