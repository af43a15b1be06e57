// A manifest-diff run: what a change to the manifest tree changes, from the tree at a base commit
// (read from git) to the tree checked out.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { UsageError } from "../errors.js";
import { diffFleets, type ManifestDiff } from "../manifest/diff.js";
import { loadFleet, type Fleet } from "../manifest/load.js";
import { findManifests } from "./fleet.js";

export interface ManifestDiffOptions {
  /** `--manifests`, as findManifests reads it. */
  manifests: string | undefined;
  /** The commit the change merges into. */
  base: string;
}

async function git(cwd: string, args: string[]) {
  return execa("git", args, { cwd, reject: false });
}

/**
 * The manifest tree as it is at `ref`, read from git into a temp dir (empty when it did not exist
 * yet).
 */
async function fleetAt(
  repoRoot: string,
  manifestsPath: string,
  ref: string,
  scratch: string,
): Promise<Fleet> {
  // `REF:` names the commit's whole tree: the manifests may be the repository itself.
  const treePath = manifestsPath === "." ? "" : manifestsPath;
  const exists = await git(repoRoot, ["cat-file", "-e", `${ref}:${treePath}`]);
  if (exists.exitCode !== 0) {
    const known = await git(repoRoot, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`]);
    if (known.exitCode !== 0)
      throw new UsageError(
        `--base: "${ref}" is not a commit in this checkout (fetch it, e.g. actions/checkout with fetch-depth: 2)`,
      );
    return { dir: scratch, settings: {}, nodes: [], tickets: [] };
  }
  const archive = await execa("git", ["archive", "--format=tar", ref, "--", manifestsPath], {
    cwd: repoRoot,
    encoding: "buffer",
    reject: false,
  });
  if (archive.exitCode !== 0)
    throw new UsageError(
      `--base: git archive ${ref} failed: ${Buffer.from(archive.stderr).toString().trim()}`,
    );
  await execa("tar", ["-x", "-C", scratch], { input: archive.stdout });
  return loadFleet(path.join(scratch, manifestsPath), { displayPrefix: manifestsPath });
}

/** The change from the tree at `base` to the checked-out tree, each loaded as `audit` loads one. */
export async function runManifestDiff(options: ManifestDiffOptions): Promise<ManifestDiff> {
  const manifests = findManifests(options.manifests);
  const top = await git(manifests, ["rev-parse", "--show-toplevel"]);
  if (top.exitCode !== 0) throw new UsageError(`${manifests} is not inside a git checkout`);
  const repoRoot = top.stdout.trim();
  const manifestsPath = path.relative(repoRoot, path.resolve(manifests)) || ".";
  const head = await loadFleet(manifests, { displayPrefix: manifestsPath });
  const scratch = await mkdtemp(path.join(os.tmpdir(), "quartermaster-base-"));
  try {
    return diffFleets(await fleetAt(repoRoot, manifestsPath, options.base, scratch), head);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
