import fs from "node:fs";
import path from "node:path";

/**
 * isomorphic-git, loaded only when a `.git` lies at or above `dir` (where its findRoot looks): a
 * large module that an audit of manifests outside a checkout would load for nothing.
 */
async function gitFor(dir: string): Promise<typeof import("isomorphic-git").default | undefined> {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    if (fs.existsSync(path.join(at, ".git"))) return (await import("isomorphic-git")).default;
    if (path.dirname(at) === at) return undefined;
  }
}

/** The commit the manifests were read at, or null outside a git checkout. */
export async function manifestRevision(dir: string): Promise<string | null> {
  const git = await gitFor(dir);
  if (!git) return null;
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
  const git = await gitFor(dir);
  if (!git) return false;
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
