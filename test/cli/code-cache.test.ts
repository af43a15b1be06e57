// The built CLI keeps V8's compiled code of each command in the user's cache folder (or the
// runner's), made at the end of a run so that it holds every function the command ran: what it
// writes, when it writes, what it refuses to run, and that no state of the folder changes what a
// command does.
import assert from "node:assert/strict";
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ensureBuilt, runBuiltCli } from "../support/cli.js";
import { removeTree, writeTree } from "../support/tree.js";

let work: string;
let manifests: string;

before(async () => {
  await ensureBuilt();
  work = await mkdtemp(path.join(tmpdir(), "qm-code-cache-"));
  manifests = await writeTree({
    "fleet.yaml": "system:\n  sysctl_parameters:\n    vm.swappiness: 10\n",
    "nodes/web-01.yaml": "{}\n",
  });
});

after(async () => {
  if (work) await removeTree(work);
  if (manifests) await removeTree(manifests);
});

/** `validate` of the fixture with the cache folder under `home` (XDG_CACHE_HOME). */
const validate = (home: string) =>
  runBuiltCli(["validate", "--manifests", manifests], {
    env: { XDG_CACHE_HOME: home, NODE_COMPILE_CACHE: "" },
  });

const cacheDir = (home: string) => path.join(home, "quartermaster", "compile-cache");
const own = `validate-${process.version}-${process.arch}-`;

async function onlyCache(home: string) {
  const files = await readdir(cacheDir(home));
  assert.equal(files.length, 1, files.join(", "));
  assert.match(files[0]!, new RegExp(`^${own.replaceAll(".", "\\.")}[0-9a-f]{16}\\.bin$`));
  const file = path.join(cacheDir(home), files[0]!);
  return { file, ...(await stat(file)) };
}

function same(result: { exitCode: number; stdout: string; stderr: string }) {
  assert.equal(result.stderr, "");
  assert.equal(result.exitCode, 0);
  assert.match(result.stdout, /: valid \(1 node, 0 groups in use\)$/);
}

describe("the built CLI's code cache", () => {
  it("is made by a command's first run, only its owner may read or change it, and later runs use it as it is", async () => {
    const home = await mkdtemp(path.join(work, "home-"));
    same(await validate(home));
    const first = await onlyCache(home);
    assert.equal(first.mode & 0o777, 0o600);
    assert.equal((await stat(cacheDir(home))).mode & 0o777, 0o700);
    assert.ok(first.size > 100_000, `${first.size} bytes: the compiled code of the whole run`);
    same(await validate(home));
    const second = await onlyCache(home);
    assert.deepEqual([second.ino, second.mtimeMs], [first.ino, first.mtimeMs]);
  });

  it("is made anew, and the command runs as ever, when the cache is not V8's or others may write it", async () => {
    const home = await mkdtemp(path.join(work, "home-"));
    same(await validate(home));
    const made = await onlyCache(home);
    await writeFile(made.file, "not a code cache".repeat(1000), { mode: 0o600 });
    same(await validate(home));
    const remade = await onlyCache(home);
    assert.notEqual(remade.ino, made.ino);
    assert.notEqual((await readFile(remade.file, "latin1")).slice(0, 16), "not a code cache");
    // A cache another user could have written is not run: made anew, the owner's alone.
    await chmod(remade.file, 0o666);
    same(await validate(home));
    const own = await onlyCache(home);
    assert.notEqual(own.ino, remade.ino);
    assert.equal(own.mode & 0o777, 0o600);
  });

  it("removes the same command's caches of other builds on this Node, and keeps the rest", async () => {
    const home = await mkdtemp(path.join(work, "home-"));
    same(await validate(home));
    const current = path.basename((await onlyCache(home)).file);
    const older = `${own}0123456789abcdef.bin`;
    const otherNode = `validate-v0.0.0-${process.arch}-0123456789abcdef.bin`;
    const otherCommand = `audit-${process.version}-${process.arch}-0123456789abcdef.bin`;
    for (const name of [older, otherNode, otherCommand])
      await writeFile(path.join(cacheDir(home), name), "x", { mode: 0o600 });
    await rm(path.join(cacheDir(home), current));
    same(await validate(home));
    assert.deepEqual(
      (await readdir(cacheDir(home))).sort(),
      [otherCommand, current, otherNode].sort(),
    );
  });

  it("is none where it cannot be written, on a --local run, and for the version", async () => {
    const notAFolder = path.join(work, "a-file");
    await writeFile(notAFolder, "");
    same(await validate(notAFolder));
    const home = await mkdtemp(path.join(work, "home-"));
    const env = { XDG_CACHE_HOME: home, NODE_COMPILE_CACHE: "" };
    const local = await runBuiltCli(["audit", "--local", "--help"], { env });
    assert.equal(local.exitCode, 0, local.stderr);
    assert.match(local.stdout, /^usage: quartermaster audit/);
    const version = await runBuiltCli(["--version"], { env });
    assert.match(version.stdout, /^quartermaster \d/);
    assert.deepEqual(await readdir(home), []);
  });
});
