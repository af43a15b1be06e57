// DirectoryWatch against the real file system: no mocks, events waited for, never timed.
import assert from "node:assert/strict";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { DirectoryWatch, type DirectoryChange } from "../../../src/watch/directory.js";
import { removeTree, writeTree } from "../../support/tree.js";
import { EVENT_WAIT_MS } from "../../support/watcher.js";

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));

const watches: DirectoryWatch[] = [];
after(() => watches.forEach((w) => w.close()));

/** A watch on `dir`; `expect(match)`, called before an action, resolves on the change it causes. */
function watching(dir: string) {
  const changes: DirectoryChange[] = [];
  const errors: Error[] = [];
  let wake = () => {};
  const watch = new DirectoryWatch(
    dir,
    (change) => {
      changes.push(change);
      wake();
    },
    (error) => errors.push(error),
  );
  watches.push(watch);
  const expect = (match: (c: DirectoryChange) => boolean) => {
    changes.length = 0;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no matching change; saw ${JSON.stringify(changes)}`)),
        EVENT_WAIT_MS,
      );
      wake = () => {
        if (!changes.some(match)) return;
        clearTimeout(timer);
        wake = () => {};
        resolve();
      };
    });
  };
  return { watch, expect, errors };
}

const entry = (name: string) => (c: DirectoryChange) => c !== "everything" && c.entry === name;

describe("watching a directory", () => {
  it("sees a write and a rename over an entry", async () => {
    const root = await writeTree({ "etc/app.conf": "a\n" });
    dirs.push(root);
    const { watch, expect } = watching(path.join(root, "etc"));
    assert.equal(watch.arm(), true);
    const written = expect(entry("app.conf"));
    await writeFile(path.join(root, "etc/app.conf"), "b\n");
    await written;
    await writeFile(path.join(root, "etc/.app.conf.tmp"), "c\n");
    const renamed = expect(entry("app.conf"));
    await rename(path.join(root, "etc/.app.conf.tmp"), path.join(root, "etc/app.conf"));
    await renamed;
  });

  it("a directory that does not exist yet is watched through its ancestor until it appears", async () => {
    const root = await writeTree({});
    dirs.push(root);
    const target = path.join(root, "a/b/c");
    const { watch, expect } = watching(target);
    assert.equal(watch.arm(), false);
    // mkdir -p makes a, then b, then c: the watch walks down one component per event until it is on
    // c.
    const appeared = expect((c) => c === "everything" && watch.onTarget);
    await mkdir(target, { recursive: true });
    await appeared;
    assert.equal(watch.onTarget, true);
    const written = expect(entry("f"));
    await writeFile(path.join(target, "f"), "x");
    await written;
  });

  it("a deleted and recreated directory is watched again", async () => {
    const root = await writeTree({ "etc/app.conf": "a\n" });
    dirs.push(root);
    const target = path.join(root, "etc");
    const { watch, expect, errors } = watching(target);
    watch.arm();
    const deleted = expect((c) => c === "everything");
    await rm(target, { recursive: true });
    await deleted;
    assert.equal(watch.onTarget, false);
    const recreated = expect((c) => c === "everything");
    await mkdir(target);
    await recreated;
    assert.equal(watch.onTarget, true);
    const written = expect(entry("app.conf"));
    await writeFile(path.join(target, "app.conf"), "b\n");
    await written;
    assert.deepEqual(errors, []);
  });
});
