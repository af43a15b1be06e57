// The release tarball: `npm pack` of the built bundle installs from the tarball alone (no registry,
// an empty cache, no build) and runs. What installs in seconds is what leaves nothing to resolve.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { execa } from "execa";
import { REPO_ROOT } from "../support/cli.js";
import { installOffline, packRelease } from "../support/pack.js";

let work: string;
let tarball: string;
let unpacked: string;
let installed: Awaited<ReturnType<typeof installOffline>>;
const BIN = () => path.join(work, "prefix", "bin", "quartermaster");
const run = (args: string[]) =>
  execa(BIN(), args, { cwd: work, reject: false, env: { NO_COLOR: "1" } });

before(async () => {
  work = await mkdtemp(path.join(tmpdir(), "qm-pack-"));
  tarball = await packRelease(work);
  unpacked = path.join(work, "unpacked");
  await mkdir(unpacked);
  await execa("tar", ["-xzf", tarball, "-C", unpacked]);
  installed = await installOffline(
    tarball,
    path.join(work, "prefix"),
    await mkdtemp(path.join(work, "empty-cache-")),
  );
});

after(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe("the packed release", () => {
  it("leaves npm nothing to resolve, build or warn about on install", async () => {
    const pkg = JSON.parse(await readFile(path.join(unpacked, "package/package.json"), "utf8"));
    for (const field of [
      "dependencies",
      "optionalDependencies",
      "peerDependencies",
      "bundleDependencies",
    ])
      assert.equal(pkg[field], undefined, `${field} in the packed package.json`);
    for (const hook of ["preinstall", "install", "postinstall", "prepare"])
      assert.equal(pkg.scripts?.[hook], undefined, `${hook} script in the packed package.json`);
    assert.equal(pkg.engines.node, ">=20.12");
  });

  it("holds the bundle, which imports nothing but Node's own modules", async () => {
    const root = path.join(unpacked, "package");
    const files = (await readdir(root, { recursive: true, withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => path.relative(root, path.join(e.parentPath, e.name)));
    assert.ok(files.includes("dist/cli/main.js"));
    assert.ok(files.includes("dist/cli/quartermaster.cjs"));
    assert.ok(files.includes("schemas/node-spec.schema.json"));
    assert.deepEqual(
      files.filter((f) => !/^(dist\/cli\/|schemas\/|package\.json$|README\.md$)/.test(f)),
      [],
    );
    const builtins = new Set(builtinModules);
    const outside: string[] = [];
    for (const file of files.filter((f) => /\.c?js$/.test(f))) {
      const text = await readFile(path.join(root, file), "utf8");
      for (const [, specifier] of text.matchAll(
        /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)"([^"\s]+)"/g,
      ))
        if (!specifier!.startsWith(".") && !builtins.has(specifier!.replace(/^node:/, "")))
          outside.push(`${file}: ${specifier}`);
    }
    assert.deepEqual(outside, []);
  });

  it("installs offline from the tarball alone, with no warning", () => {
    assert.equal(installed.exitCode, 0, installed.stderr);
    assert.doesNotMatch(installed.stderr, /warn|EBADENGINE/i);
    assert.match(installed.stdout, /added 1 package/);
  });

  it("runs: --version, and validate of a manifest tree", async () => {
    const { version } = JSON.parse(await readFile(path.join(REPO_ROOT, "package.json"), "utf8"));
    const v = await run(["--version"]);
    assert.equal(v.stdout, `quartermaster ${version}`);
    const valid = await run(["validate", "--manifests", path.join(REPO_ROOT, "fleet-manifests")]);
    assert.equal(valid.exitCode, 0, valid.stderr);
    assert.match(valid.stdout, /: valid \(5 nodes, 3 groups in use\)$/);
    const missing = path.join(work, "missing");
    const broken = await run(["validate", "--manifests", missing]);
    assert.equal(broken.exitCode, 2);
    assert.match(broken.stderr, new RegExp(`^${missing}: manifest directory not found`));
  });
});
