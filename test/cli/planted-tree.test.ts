// Upward manifest discovery through the real CLI: a tree planted in a folder another user owns, or
// in a folder anyone may write (a sticky /tmp), is never used, nor written into by adopt; named with
// --manifests it is.
// Needs root (chown).
import assert from "node:assert/strict";
import { chmod, chown, mkdir, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { runCli } from "../support/cli.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();
const NOBODY = 65534;
// A planted tree: one node, whose ssh settings would send the audit wherever the planter likes.
const PLANTED = {
  "fleet-manifests/fleet.yaml": "ssh: { user: root }\n",
  "fleet-manifests/nodes/planted-01.yaml": "{}\n",
};

/** `shared/` holds a planted tree and this user's own folder `shared/work`, the working directory. */
async function planted(shared: (dir: string) => Promise<void>): Promise<string> {
  const base = await tree({ ...prefixed(PLANTED), "shared/work/notes.txt": "mine\n" });
  await chmod(base, 0o755);
  await shared(path.join(base, "shared"));
  return path.join(base, "shared", "work");
}
const prefixed = (files: Record<string, string>) =>
  Object.fromEntries(Object.entries(files).map(([name, text]) => [`shared/${name}`, text]));

describe("upward manifest discovery", () => {
  it("stops at a folder owned by another user, and says why", async () => {
    const work = await planted(async (shared) => {
      for (const dir of [shared, path.join(shared, "fleet-manifests")])
        await chown(dir, NOBODY, NOBODY);
    });
    const result = await runCli(["validate"], { cwd: work });
    assert.equal(result.exitCode, 2, result.stdout + result.stderr);
    assert.match(
      result.stderr,
      /not looking in \S+\/shared, it is owned by another user \(uid 65534\), so anyone could have put one there; name the tree with --manifests/,
    );
    assert.doesNotMatch(result.stdout, /valid/);
  });

  it("stops at a folder writable by others, a sticky one included", async () => {
    const work = await planted((shared) => chmod(shared, 0o1777));
    const result = await runCli(["validate"], { cwd: work });
    assert.equal(result.exitCode, 2, result.stdout + result.stderr);
    assert.match(
      result.stderr,
      /not looking in \S+\/shared, it is writable by others \(mode 1777\)/,
    );
  });

  it("stops at a planted fleet-manifests/ owned by another user in a folder of this user's", async () => {
    const work = await planted((shared) =>
      chown(path.join(shared, "fleet-manifests"), NOBODY, NOBODY),
    );
    const result = await runCli(["validate"], { cwd: work });
    assert.equal(result.exitCode, 2, result.stdout + result.stderr);
    assert.match(
      result.stderr,
      /not looking in \S+\/shared\/fleet-manifests, it is owned by another user/,
    );
  });

  it("uses a tree named with --manifests, and finds one in this user's own folders", async () => {
    const work = await planted((shared) => chmod(shared, 0o1777));
    const named = await runCli(["validate", "--manifests", "../fleet-manifests"], { cwd: work });
    assert.equal(named.exitCode, 0, named.stderr);
    assert.match(named.stdout, /valid \(1 node/);
    const own = await planted(async () => {});
    await mkdir(path.join(own, "deeper"));
    const found = await runCli(["validate"], { cwd: path.join(own, "deeper") });
    assert.equal(found.exitCode, 0, found.stderr);
    assert.match(found.stdout, /^\.\.\/\.\.\/fleet-manifests: valid \(1 node/);
  });

  it("adopt without --manifests writes into no ./fleet-manifests another user could have planted", async () => {
    for (const plant of [
      (shared: string) => chmod(shared, 0o1777),
      (shared: string) => chown(path.join(shared, "fleet-manifests"), NOBODY, NOBODY),
    ]) {
      const work = await planted(plant);
      await writeFile(path.join(work, "hosts.ini"), "[web]\nweb-01\n");
      const shared = path.dirname(work);
      const result = await runCli(["adopt", "--inventory", path.join(work, "hosts.ini")], {
        cwd: shared,
      });
      assert.equal(result.exitCode, 2, result.stdout + result.stderr);
      assert.match(
        result.stderr,
        /^quartermaster: not adopting into \S+\/shared\/fleet-manifests: \S+ is not to be trusted, it is (writable by others \(mode 1777\)|owned by another user \(uid 65534\)), so anyone could have put a tree there; name the tree with --manifests$/m,
      );
      assert.doesNotMatch(result.stderr, /^\s+at /m);
      assert.deepEqual(await readdir(path.join(shared, "fleet-manifests", "nodes")), [
        "planted-01.yaml",
      ]);
    }
  });
});
