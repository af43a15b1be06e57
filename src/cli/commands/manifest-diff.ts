import { io } from "../io.js";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { UsageError } from "../../errors.js";
import { diffFleets } from "../../manifest/diff.js";
import { renderManifestDiff } from "../../manifest/diff-markdown.js";
import { loadFleet, type Fleet } from "../../manifest/load.js";
import { parseFlags } from "../flags.js";
import { BASE_FLAG, findManifests, MANIFEST_FLAGS, maxBytesFlag } from "../options.js";

// A job summary holds 1 MiB; leave room for anything else a workflow writes there.
const DEFAULT_MAX_BYTES = 1_000_000;

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

const MIN_BYTES = 1024;

const MANIFEST_DIFF_FLAGS = {
  manifests: MANIFEST_FLAGS.manifests,
  base: BASE_FLAG,
  "max-bytes": maxBytesFlag(DEFAULT_MAX_BYTES),
};

/** `manifest-diff`'s argv as its config: every flag read and checked, nothing read yet. */
function manifestDiffConfig(argv: string[]) {
  const { config } = parseFlags("manifest-diff", argv, MANIFEST_DIFF_FLAGS);
  const { base, "max-bytes": maxBytes } = config;
  if (!base)
    throw new UsageError(
      "manifest-diff needs --base REF (the commit the pull request merges into, e.g. HEAD^1 of its merge commit)",
    );
  // The heading and the closing note are always written; the cap leaves out whole sections.
  if (maxBytes < MIN_BYTES)
    throw new UsageError(`--max-bytes takes at least ${MIN_BYTES}, not ${maxBytes}`);
  return { manifests: config.manifests, base, maxBytes };
}

export async function manifestDiffCommand(argv: string[]): Promise<number> {
  const config = manifestDiffConfig(argv);
  const { base, maxBytes } = config;
  const manifests = findManifests(config.manifests);
  const top = await git(manifests, ["rev-parse", "--show-toplevel"]);
  if (top.exitCode !== 0) throw new UsageError(`${manifests} is not inside a git checkout`);
  const repoRoot = top.stdout.trim();
  const manifestsPath = path.relative(repoRoot, path.resolve(manifests)) || ".";
  const head = await loadFleet(manifests, { displayPrefix: manifestsPath });
  const scratch = await mkdtemp(path.join(os.tmpdir(), "quartermaster-base-"));
  try {
    const before = await fleetAt(repoRoot, manifestsPath, base, scratch);
    io().stdout.write(renderManifestDiff(diffFleets(before, head), maxBytes));
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return 0;
}
