import { after } from "node:test";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";

/** Writes `{ "nodes/web-01.yaml": "..." }` under a fresh temp dir and returns the dir. */
export async function writeTree(
  files: Record<string, string | Buffer>,
  prefix = "qm-tree-",
): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  for (const [name, contents] of Object.entries(files)) {
    const file = path.join(dir, name);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, contents);
  }
  return dir;
}

export const removeTree = (dir: string) => rm(dir, { recursive: true, force: true });

/** A writeTree for one test file: every tree it writes is removed after the file's tests. */
export function scratchTrees(): (files?: Record<string, string | Buffer>) => Promise<string> {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map(removeTree)));
  return async (files = {}) => {
    const dir = await writeTree(files);
    dirs.push(dir);
    return dir;
  };
}

/** `writeTree`, then each file committed in a git repository at the tree's root (propose plans on a commit). */
export async function writeCommittedTree(files: Record<string, string | Buffer>): Promise<string> {
  const dir = await writeTree(files);
  const git = (...args: string[]) =>
    execa("git", ["-c", "user.name=qm", "-c", "user.email=qm@example.invalid", ...args], {
      cwd: dir,
    });
  await git("init", "-q");
  await git("add", ".");
  await git("commit", "-qm", "manifests");
  return dir;
}
