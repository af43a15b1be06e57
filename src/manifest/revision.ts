import fs from "node:fs";
import path from "node:path";
import git from "isomorphic-git";

/** The commit the manifests were read at, or null outside a git checkout. */
export async function manifestRevision(dir: string): Promise<string | null> {
  try {
    const gitdir = await git.findRoot({ fs, filepath: dir });
    return await git.resolveRef({ fs, dir: gitdir, ref: "HEAD" });
  } catch {
    return null;
  }
}

/**
 * Whether the manifests under `dir` differ from that commit (changed, added or deleted files, not
 * ignored ones): the audit then checked what no commit holds, and the report says so.
 */
export async function manifestDirty(dir: string): Promise<boolean> {
  try {
    const root = await git.findRoot({ fs, filepath: dir });
    const under = path.relative(root, path.resolve(dir));
    const rows = await git.statusMatrix({ fs, dir: root, ...(under && { filepaths: [under] }) });
    // [file, HEAD, workdir, stage]: 1,1,1 is unchanged.
    return rows.some(([, head, workdir, stage]) => head !== 1 || workdir !== 1 || stage !== 1);
  } catch {
    return false;
  }
}
