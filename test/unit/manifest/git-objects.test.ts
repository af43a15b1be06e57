// A repository's objects read as git reads them (git cat-file the oracle), loose and packed, with
// deltas against an offset or an id; damaged ones refused in words, never read past their ends.
import assert from "node:assert/strict";
import { readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { execa } from "execa";
import {
  applyDelta,
  GitObjectError,
  ObjectStore,
  type GitObject,
} from "../../../src/manifest/git-objects.js";
import { manifestDirty, revisionTime } from "../../../src/manifest/revision.js";
import { scratchTrees } from "../../support/tree.js";

const tree = scratchTrees();

/** A repository of many commits, each editing one node file of many alike: trees that delta well. */
async function history(): Promise<{ repo: string; git: (...args: string[]) => Promise<string> }> {
  const files: Record<string, string> = {};
  for (let i = 0; i < 40; i++) files[`fleet-manifests/nodes/web-${i}.yaml`] = `host: web-${i}\n`;
  const repo = await tree(files);
  const git = async (...args: string[]) =>
    (
      await execa("git", ["-c", "user.name=t", "-c", "user.email=t@example.net", ...args], {
        cwd: repo,
      })
    ).stdout;
  await git("init", "-q");
  await git("add", ".");
  await git("commit", "-qm", "fleet");
  for (let i = 0; i < 30; i++) {
    await writeFile(
      path.join(repo, "fleet-manifests/nodes", `web-${i % 7}.yaml`),
      `host: web-${i % 7}\ngroups: [g${i}]\n${"x: 1\n".repeat(i)}`,
    );
    await git("commit", "-qam", `edit ${i}`);
  }
  return { repo, git };
}

/** Every object of the repository as git cat-file gives it. */
async function everyObject(repo: string): Promise<Map<string, GitObject>> {
  const ids = (
    await execa("git", ["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"], {
      cwd: repo,
    })
  ).stdout.split("\n");
  const raw = Buffer.from(
    (
      await execa("git", ["cat-file", "--batch"], {
        cwd: repo,
        input: ids.join("\n"),
        encoding: "buffer",
      })
    ).stdout,
  );
  const objects = new Map<string, GitObject>();
  for (let at = 0; at < raw.length;) {
    const end = raw.indexOf(0x0a, at);
    const [oid, type, size] = raw.toString("latin1", at, end).split(" ");
    const data = Buffer.from(raw.subarray(end + 1, end + 1 + Number(size)));
    objects.set(oid!, { type: type as GitObject["type"], data });
    at = end + 1 + Number(size) + 1;
  }
  return objects;
}

/** Objects whose pack entry is a delta, by `git verify-pack -v` (a depth after the sizes). */
async function deltas(repo: string): Promise<number> {
  const packs = path.join(repo, ".git/objects/pack");
  const idx = (await readdir(packs)).filter((n) => n.endsWith(".idx"));
  let count = 0;
  for (const name of idx) {
    const verified = await execa("git", ["verify-pack", "-v", path.join(packs, name)]);
    count += verified.stdout
      .split("\n")
      .filter((l) => /^[0-9a-f]{40} \w+ +\d+ \d+ \d+ \d+ [0-9a-f]{40}$/.test(l)).length;
  }
  return count;
}

describe("ObjectStore", () => {
  for (const [layout, repack] of [
    ["loose objects", [] as string[]],
    ["one pack, deltas against an offset", ["repack", "-q", "-a", "-d", "-f", "--depth=50"]],
    [
      "one pack, deltas against an id",
      ["-c", "repack.useDeltaBaseOffset=false", "repack", "-q", "-a", "-d", "-f", "--depth=50"],
    ],
  ] as const)
    it(`reads every object as git cat-file does (${layout})`, async () => {
      const { repo, git } = await history();
      if (repack.length) {
        await git(...repack);
        assert.ok((await deltas(repo)) > 10, "the pack holds deltas");
      }
      const store = new ObjectStore(path.join(repo, ".git/objects"));
      const objects = await everyObject(repo);
      assert.ok(objects.size > 90);
      for (const [oid, expected] of objects) assert.deepEqual(store.read(oid), expected, oid);
      assert.throws(() => store.read("0".repeat(40)), GitObjectError);

      // What the audit reads of it: HEAD's files under the manifests, the commit's time.
      const manifests = path.join(repo, "fleet-manifests");
      assert.equal(await manifestDirty(manifests), false, "committed");
      await writeFile(path.join(manifests, "nodes/web-3.yaml"), "host: web-33\n");
      assert.equal(await manifestDirty(manifests), true, "an edit");
      await git("checkout", "-q", "fleet-manifests/nodes/web-3.yaml");
      assert.equal(await manifestDirty(manifests), false, "undone");
      const head = await git("rev-parse", "HEAD");
      const committed = await git("log", "-1", "--format=%ct");
      assert.equal(
        await revisionTime(manifests, head),
        new Date(Number(committed) * 1000).toISOString().replace(/\.000Z$/, "Z"),
      );
    });

  it("refuses a damaged pack or loose object in words, and a dirty check then calls it clean", async () => {
    const { repo, git } = await history();
    await git("repack", "-q", "-a", "-d", "-f");
    const head = await git("rev-parse", "HEAD");
    const packs = path.join(repo, ".git/objects/pack");
    const pack = path.join(
      packs,
      (await readdir(packs)).find((n) => n.endsWith(".pack"))!,
    );
    const bytes = await readFile(pack);
    // Every byte after the pack's header flipped: no object inflates or names a sane base.
    for (let i = 12; i < bytes.length; i++) bytes[i] = bytes[i]! ^ 0x5a;
    await writeFile(pack, bytes);
    const store = new ObjectStore(path.join(repo, ".git/objects"));
    assert.throws(() => store.read(head));
    assert.equal(await manifestDirty(path.join(repo, "fleet-manifests")), false);
    assert.equal(await revisionTime(repo, head), undefined);
  });
});

describe("applyDelta", () => {
  const base = Buffer.from("0123456789");
  // Sizes: the base's (10), the result's; then ops.
  const delta = (...bytes: number[]) => Buffer.from(bytes);

  it("copies from the base and inserts what the delta carries", () => {
    // copy offset 2 size 3, insert "ab", copy offset 0 size 1.
    const result = applyDelta(base, delta(10, 6, 0x91, 2, 3, 2, 0x61, 0x62, 0x90, 1));
    assert.equal(result.toString(), "234ab0");
  });

  it("refuses a delta for another base, a copy past the base's end, a result of another size", () => {
    assert.throws(() => applyDelta(base, delta(9, 1, 1, 0x61)), /another base/);
    assert.throws(() => applyDelta(base, delta(10, 3, 0x91, 9, 3)), /out of bounds/);
    assert.throws(() => applyDelta(base, delta(10, 3, 1, 0x61)), /short of its size/);
    assert.throws(() => applyDelta(base, delta(10, 1, 2, 0x61, 0x62)), /out of bounds/);
    assert.throws(() => applyDelta(base, delta(10, 1, 0)), /git does not write/);
    assert.throws(() => applyDelta(base, delta(10, 0x80)), /cut short/);
  });
});
