// adopt and snapshot through the real CLI against a stand-in `ssh` on the PATH that runs the probe
// on this machine, through a filter per host: a host that leaves a section out, and one whose
// package database holds a name with control characters.
import assert from "node:assert/strict";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
// A process of its own: the stand-in is found on the PATH the CLI starts ssh with.
import { spawnCli } from "../support/cli.js";

let dir: string;
let env: Record<string, string>;

const FAKE_SSH = `#!/bin/sh
mode=run; host=
while [ $# -gt 0 ]; do case "$1" in -G) mode=resolve;; --) host=$2; break;; esac; shift; done
if [ $mode = resolve ]; then
  printf 'hostname %s\\nport 22\\nuserknownhostsfile %s\\n' "$host" "$QM_TEST_KNOWN_HOSTS"; exit 0
fi
case $host in
  missing) sh -s | sed '/ begin kernel$/,/ end kernel$/d' ;;
  hostile) sh -s | awk '{ print } / mark dpkg$/ { printf "Package: evil\\033[31m: x\\nStatus: install ok installed\\nVersion: 1\\nArchitecture: amd64\\n" }' ;;
  *) exec sh -s ;;
esac
`;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "qm-adopt-cli-"));
  const bin = path.join(dir, "bin");
  await mkdir(bin);
  await writeFile(path.join(bin, "ssh"), FAKE_SSH);
  await chmod(path.join(bin, "ssh"), 0o755);
  await execa("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "key")]);
  const key = (await readFile(path.join(dir, "key.pub"), "utf8")).split(" ").slice(0, 2).join(" ");
  const knownHosts = path.join(dir, "known_hosts");
  await writeFile(knownHosts, ["plain", "missing", "hostile"].map((h) => `${h} ${key}\n`).join(""));
  env = { PATH: `${bin}:${process.env.PATH}`, QM_TEST_KNOWN_HOSTS: knownHosts };
});
after(() => rm(dir, { recursive: true, force: true }));

describe("a host whose snapshot cannot be trusted", () => {
  test("snapshot: a host that leaves a section out is that node's error, exit 4, no stack trace", async () => {
    const tree = path.join(dir, "tree");
    await mkdir(path.join(tree, "nodes"), { recursive: true });
    await writeFile(path.join(tree, "nodes", "missing.yaml"), "{}\n");
    await writeFile(path.join(tree, "nodes", "plain.yaml"), "ssh: { user: nobody }\n");
    const result = await spawnCli(
      ["snapshot", "--manifests", tree, "--node", "missing,plain", "--category", "kernel"],
      { env },
    );
    assert.equal(result.exitCode, 4, result.stderr);
    assert.match(
      result.stderr,
      /^quartermaster snapshot: missing: probe output kernel: section missing from probe output; node not audited$/,
    );
    // The other node is written, with what its file said about reaching it.
    assert.match(result.stdout, /^ssh:\n {2}user: nobody\nsystem:\n {2}kernel_version: /m);
  });

  test("adopt: such hosts are named and left out, nothing is written for them, the rest adopted", async () => {
    const tree = path.join(dir, "adopted");
    const inventory = path.join(dir, "hosts.txt");
    await writeFile(inventory, "plain\nmissing\nhostile\n");
    const result = await spawnCli(["adopt", "--inventory", inventory, "--manifests", tree], {
      env,
    });
    assert.equal(result.exitCode, 4, result.stderr);
    assert.match(
      result.stderr,
      /^missing: probe output kernel: section missing from probe output; not adopted$/m,
    );
    assert.match(
      result.stderr,
      /^hostile: its live state cannot be declared \(packages\.installed_manifest\.evil\\x1b\[31m: x: not a package name/m,
    );
    assert.doesNotMatch(result.stderr, /\x1b|\n\s+at /);
    assert.deepEqual((await readdir(path.join(tree, "nodes"))).sort(), ["plain.yaml"]);
    assert.match(
      await readFile(path.join(tree, "known_hosts"), "utf8"),
      /^plain ssh-ed25519 \S+\n$/,
    );
  });
});

describe("an inventory Ansible reads its own way, through the CLI", () => {
  test("an undefined [x:vars] group is refused with file:line and exit 2, no stack trace", async () => {
    const inventory = path.join(dir, "undefined.ini");
    await writeFile(inventory, "[web]\nplain\n\n[db:vars]\nansible_user=pg\n");
    const result = await spawnCli(
      ["adopt", "--inventory", inventory, "--manifests", path.join(dir, "t1")],
      {
        env,
      },
    );
    assert.equal(result.exitCode, 2, result.stderr);
    assert.match(
      result.stderr,
      /undefined\.ini:4: section \[db:vars\] is for a group never defined/,
    );
    assert.doesNotMatch(result.stderr, /\n\s+at /);
  });

  test("a templated variable is left out and named; the host is adopted", async () => {
    const inventory = path.join(dir, "templated.ini");
    await writeFile(inventory, `[web]\nplain ansible_port="{{ web_port }}"\n`);
    const result = await spawnCli(
      ["adopt", "--inventory", inventory, "--manifests", path.join(dir, "t2")],
      {
        env,
      },
    );
    assert.match(
      result.stderr,
      /left out inventory variable ansible_port \(1 host\): its value is a template/,
    );
    assert.match(result.stderr, /1 of 1 hosts adopted/);
  });
});
