import fs from "node:fs";
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
