// The commit a manifest tree was read at, and whether the tree differs from it, checked against
// git's own view of the same repository, one change at a time.
import assert from "node:assert/strict";
import { rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { execa } from "execa";
import { manifestDirty, manifestRevision } from "../../../src/manifest/revision.js";
import { scratchTrees } from "../../support/tree.js";

const tree = scratchTrees();

describe("manifestDirty", () => {
  // A SHA-256 repository's index entries and ids are 32 bytes; isomorphic-git reads none of it.
  for (const format of ["sha1", "sha256"])
    it(`sees each kind of change git sees under the manifests, and none outside them (${format})`, async () => {
      const repo = await tree({
        "fleet-manifests/nodes/a.yaml": "a: 1\n",
        "fleet-manifests/nodes/b.yaml": "b: 1\n",
        "other/x": "x\n",
        ".gitignore": "*.tmp\n",
      });
      const manifests = path.join(repo, "fleet-manifests");
      const git = (...args: string[]) =>
        execa("git", ["-c", "user.name=t", "-c", "user.email=t@example.net", ...args], {
          cwd: repo,
        });
      const at = (file: string) => path.join(repo, file);
      await git("init", "-q", `--object-format=${format}`);
      assert.equal(await manifestDirty(manifests), true, "nothing added yet");
      await git("add", ".");
      assert.equal(await manifestDirty(manifests), true, "added, no commit yet");
      await git("commit", "-qm", "manifests");
      assert.equal(await manifestDirty(manifests), false, "just committed");
      assert.equal(await manifestDirty(repo), false, "the repository's root");

      await writeFile(at("other/x"), "changed\n");
      assert.equal(await manifestDirty(manifests), false, "a change outside the manifests");
      // Same size, same second as the index: only its contents tell.
      await writeFile(at("fleet-manifests/nodes/a.yaml"), "a: 2\n");
      assert.equal(await manifestDirty(manifests), true, "an edit of the same size");
      await git("add", "fleet-manifests/nodes/a.yaml");
      assert.equal(await manifestDirty(manifests), true, "the edit staged");
      await git("commit", "-qam", "edit");
      assert.equal(await manifestDirty(manifests), false, "the edit committed");

      await writeFile(at("fleet-manifests/nodes/a.yaml"), "a: 2\n");
      assert.equal(await manifestDirty(manifests), false, "rewritten with the same contents");
      await writeFile(at("fleet-manifests/nodes/scratch.tmp"), "t\n");
      assert.equal(await manifestDirty(manifests), false, "an ignored file");
      await writeFile(at("fleet-manifests/nodes/c.yaml"), "c: 1\n");
      assert.equal(await manifestDirty(manifests), true, "a new file");
      await rm(at("fleet-manifests/nodes/c.yaml"));
      await rm(at("fleet-manifests/nodes/b.yaml"));
      assert.equal(await manifestDirty(manifests), true, "a deleted file");
      await git("checkout", "-q", "fleet-manifests/nodes/b.yaml");
      await git("rm", "-q", "--cached", "fleet-manifests/nodes/b.yaml");
      assert.equal(await manifestDirty(manifests), true, "a file taken out of the index");
      await git("add", "fleet-manifests/nodes/b.yaml");
      assert.equal(await manifestDirty(manifests), false, "all back as committed");

      // Index version 4 compresses each path against the one before it.
      await git("update-index", "--index-version", "4");
      assert.equal(await manifestDirty(manifests), false, "index version 4, unchanged");
      await writeFile(at("fleet-manifests/nodes/b.yaml"), "b: 22\n");
      assert.equal(await manifestDirty(manifests), true, "index version 4, an edit");
    });

  it("calls a linked worktree's manifests clean, rather than reading an index it cannot find", async () => {
    const repo = await tree({ "fleet-manifests/nodes/a.yaml": "a: 1\n" });
    const git = (...args: string[]) =>
      execa("git", ["-c", "user.name=t", "-c", "user.email=t@example.net", ...args], { cwd: repo });
    await git("init", "-q");
    await git("add", ".");
    await git("commit", "-qm", "manifests");
    const linked = path.join(repo, "..", `${path.basename(repo)}-linked`);
    await git("worktree", "add", "-q", "--detach", linked);
    try {
      // Its `.git` is a file naming the main repository's folder for it.
      assert.equal(await manifestDirty(path.join(linked, "fleet-manifests")), false);
    } finally {
      await rm(linked, { recursive: true, force: true });
    }
  });
});

describe("manifestRevision", () => {
  it("names the commit `git rev-parse HEAD` names, in each layout git keeps its refs in", async () => {
    const repo = await tree({ "fleet-manifests/nodes/a.yaml": "a: 1\n" });
    const manifests = path.join(repo, "fleet-manifests");
    const git = (...args: string[]) =>
      execa("git", ["-c", "user.name=t", "-c", "user.email=t@example.net", ...args], { cwd: repo });
    /** What git itself says HEAD is, for the checkout at `dir`; null where it names no commit. */
    const head = async (dir: string) => {
      const run = await execa("git", ["rev-parse", "--verify", "-q", "HEAD"], {
        cwd: dir,
        reject: false,
      });
      return run.exitCode === 0 ? run.stdout.trim() : null;
    };
    const same = async (dir: string, layout: string) => {
      assert.equal(manifestRevision(dir), await head(dir), layout);
      return manifestRevision(dir);
    };

    assert.equal(manifestRevision(os.tmpdir()), null, "outside a checkout");
    await git("init", "-q", "-b", "main");
    assert.equal(await same(manifests, "before the first commit"), null);
    await git("commit", "-qm", "one", "--allow-empty");
    await git("add", ".");
    await git("commit", "-qm", "two");
    assert.match((await same(manifests, "a loose ref"))!, /^[0-9a-f]{40}$/);
    await git("pack-refs", "--all");
    await same(manifests, "packed-refs only");
    await git("commit", "-qm", "three", "--allow-empty");
    await same(repo, "a loose ref newer than its packed one");
    await git("checkout", "-q", "--detach", "HEAD~1");
    await same(manifests, "a detached HEAD");
    await git("checkout", "-q", "main");
    await git("symbolic-ref", "refs/heads/alias", "refs/heads/main");
    await git("symbolic-ref", "HEAD", "refs/heads/alias");
    await same(manifests, "a symbolic ref to a branch");

    const linked = path.join(repo, "..", `${path.basename(repo)}-linked`);
    await git("worktree", "add", "-q", "-b", "linked", linked, "main~1");
    try {
      // Its `.git` is a file; its HEAD is its own, its branches the main repository's.
      const at = await same(path.join(linked, "fleet-manifests"), "a linked worktree");
      assert.notEqual(at, manifestRevision(manifests), "the worktree's own HEAD");
    } finally {
      await rm(linked, { recursive: true, force: true });
    }

    const sha256 = await tree({ "nodes/a.yaml": "a: 1\n" });
    const git256 = (...args: string[]) =>
      execa("git", ["-c", "user.name=t", "-c", "user.email=t@example.net", ...args], {
        cwd: sha256,
      });
    await git256("init", "-q", "--object-format=sha256");
    await git256("add", ".");
    await git256("commit", "-qm", "one");
    assert.match((await same(sha256, "a SHA-256 repository"))!, /^[0-9a-f]{64}$/);
  });

  it("never reads outside the repository for a ref that climbs out of refs/", async () => {
    const repo = await tree({ "nodes/a.yaml": "a: 1\n" });
    await execa("git", ["init", "-q"], { cwd: repo });
    await writeFile(path.join(repo, "outside"), `${"a".repeat(40)}\n`);
    await writeFile(path.join(repo, ".git", "HEAD"), "ref: refs/../../outside\n");
    assert.equal(manifestRevision(repo), null);
  });
});
