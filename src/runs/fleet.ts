// Where a run's manifests are and which of their nodes it takes: a tree here, or one pulled from a
// repository, with the environment given by the command rather than read here.
import { existsSync, readdirSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { UsageError } from "../errors.js";
import { globMatch } from "../glob.js";
import { loadFleet, type Fleet, type LoadedNode } from "../manifest/load.js";
import { nearest } from "../manifest/suggest.js";

export const DEFAULT_MANIFESTS = "fleet-manifests";

/** Where the manifests are, as `--manifests`, `--repo`, `--ref` and `--cache-dir` say. */
export interface ManifestSource {
  manifests: string | undefined;
  repo: string | undefined;
  ref: string | undefined;
  cacheDir: string | undefined;
  /** In GitHub Actions: GITHUB_SERVER_URL, GITHUB_REPOSITORY and GITHUB_TOKEN. */
  serverUrl?: string | undefined;
  repository?: string | undefined;
  token?: string | undefined;
}

/** Whether `dir` holds a manifest tree: a fleet.yaml or a nodes/ folder. */
const isManifestTree = (dir: string) =>
  existsSync(path.join(dir, "fleet.yaml")) || existsSync(path.join(dir, "nodes"));

/**
 * Why a folder found while searching upward cannot be trusted to hold this user's manifests: owned
 * by someone else than this user or root, or writable by others (a sticky /tmp included), so
 * another user could have planted a tree there (as git's safe.directory, CVE-2022-24765).
 */
function untrusted(dir: string): string | undefined {
  const info = statSync(dir);
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid && info.uid !== 0)
    return `it is owned by another user (uid ${info.uid})`;
  if (info.mode & 0o002)
    return `it is writable by others (mode ${(info.mode & 0o7777).toString(8).padStart(4, "0")})`;
  return undefined;
}

/**
 * --manifests; else, as git finds .git, the manifest tree this directory is in, or a
 * fleet-manifests/ here or in a parent directory; else fleet-manifests (which then is not found).
 * The search stops at a folder another user could have planted a tree in, and says so.
 */
export function findManifests(flag: string | undefined, cwd = process.cwd()): string {
  if (flag !== undefined) return flag;
  const stop = (dir: string, reason: string) =>
    new UsageError(
      `no manifest tree found: not looking in ${dir}, ${reason}, so anyone could have put one there; name the tree with --manifests`,
    );
  for (let dir = cwd; ; dir = path.dirname(dir)) {
    const reason = untrusted(dir);
    if (reason) throw stop(dir, reason);
    if (isManifestTree(dir)) return path.relative(cwd, dir) || ".";
    const child = path.join(dir, DEFAULT_MANIFESTS);
    if (isManifestTree(child)) {
      const childReason = untrusted(child);
      if (childReason) throw stop(child, childReason);
      return path.relative(cwd, child);
    }
    if (path.dirname(dir) === dir) return DEFAULT_MANIFESTS;
  }
}

/**
 * The tree `adopt` writes into when no --manifests names one: ./fleet-manifests, refused where
 * another user could have planted it, as the search upward refuses such a folder.
 */
export function defaultTreeToWrite(cwd = process.cwd()): string {
  for (const dir of [cwd, path.join(cwd, DEFAULT_MANIFESTS)]) {
    const reason = existsSync(dir) ? untrusted(dir) : undefined;
    if (reason)
      throw new UsageError(
        `not adopting into ${path.join(cwd, DEFAULT_MANIFESTS)}: ${dir} is not to be trusted, ${reason}, so anyone could have put a tree there; name the tree with --manifests`,
      );
  }
  return DEFAULT_MANIFESTS;
}

/**
 * A manifest directory with no nodes/ declares no node: almost always the wrong folder, so say
 * which is right.
 */
function checkTreeShape(dir: string): void {
  if (!existsSync(dir) || existsSync(path.join(dir, "nodes"))) return;
  if (!statSync(dir).isDirectory())
    throw new UsageError(
      `${dir} is a file: --manifests takes the manifest tree, the folder holding fleet.yaml and nodes/`,
    );
  const folders = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  const trees = folders.filter((name) => isManifestTree(path.join(dir, name)));
  const misspelt = nearest("nodes", folders);
  const hint = trees.length
    ? `; ${trees.map((t) => path.join(dir, t)).join(", ")} holds one: use --manifests ${path.join(dir, trees[0]!)}`
    : misspelt
      ? `; is ${misspelt}/ meant to be nodes/?`
      : "; a manifest tree has fleet.yaml, groups/ and nodes/<node>.yaml";
  throw new UsageError(`${dir} has no nodes/ folder${hint}`);
}

/**
 * The manifests directory: found as findManifests says, or inside a pull of --repo (isomorphic-git,
 * cached). In GitHub Actions, with no --repo and no manifest tree here, the repository the workflow
 * runs for.
 */
export async function resolveManifestDir(values: ManifestSource): Promise<string> {
  return (await locateManifests(values)).dir;
}

async function locateManifests(values: ManifestSource): Promise<{ dir: string; pulled: boolean }> {
  const { serverUrl: server, repository } = values;
  // With --repo, nothing here is searched for: the tree is in the pull.
  const found = values.repo === undefined ? findManifests(values.manifests) : DEFAULT_MANIFESTS;
  const repo =
    values.repo ??
    (server && repository && !existsSync(found)
      ? `${server.replace(/\/+$/, "")}/${repository}.git`
      : undefined);
  if (!repo) {
    checkTreeShape(found);
    return { dir: found, pulled: false };
  }
  // Loaded only for --repo: isomorphic-git is a large module every other run would pay for.
  const { pullRepository, refProblem, repoUrlProblem, shownUrl } =
    await import("../forge/clone.js");
  // A mistake in the URL or ref is the user's, not an unreachable forge.
  const urlProblem = repoUrlProblem(repo);
  if (urlProblem) throw new UsageError(`--repo takes ${urlProblem}, not "${shownUrl(repo)}"`);
  const problem = values.ref === undefined ? undefined : refProblem(values.ref);
  if (problem) throw new UsageError(`--ref takes ${problem}, not "${values.ref!.slice(0, 100)}"`);
  const pulled = await pullRepository({
    url: repo,
    ref: values.ref,
    token: values.token,
    ...(server && { serverUrl: server }),
    cacheDir: values.cacheDir ?? path.join(os.homedir(), ".cache", "quartermaster"),
  });
  const dir = path.join(pulled.dir, values.manifests ?? DEFAULT_MANIFESTS);
  checkTreeShape(dir);
  return { dir, pulled: true };
}

export async function loadManifests(values: ManifestSource): Promise<Fleet> {
  const { dir, pulled } = await locateManifests(values);
  // Pulled manifests are named as the repository names them, not by the cache's path.
  return loadFleet(dir, pulled ? { displayPrefix: values.manifests ?? DEFAULT_MANIFESTS } : {});
}

/** The nodes `--nodes` (nodeGlobs) selects: every glob must match some node. */
export function selectNodes(
  fleet: Fleet,
  globs: readonly string[] | undefined,
  flag = "--nodes",
): LoadedNode[] {
  if (!globs) return fleet.nodes;
  for (const glob of globs) {
    if (!fleet.nodes.some((n) => globMatch(glob, n.name))) {
      const names = fleet.nodes.map((n) => n.name);
      const suggestion = nearest(glob, names);
      const hint = suggestion
        ? ` (did you mean "${suggestion}"?)`
        : names.length && names.length <= 10
          ? ` (the nodes: ${names.join(", ")})`
          : "";
      throw new UsageError(`${flag}: no node matches "${glob}"${hint}`);
    }
  }
  return fleet.nodes.filter((n) => globs.some((g) => globMatch(g, n.name)));
}

/**
 * For --local: the node named by --nodes, else the one whose name or host is this hostname, else
 * `localhost`.
 */
export function localNode(fleet: Fleet, nodes: readonly string[] | undefined): LoadedNode {
  if (nodes) {
    const selected = selectNodes(fleet, nodes);
    if (selected.length !== 1)
      throw new UsageError(
        `--local audits one node, but --nodes "${nodes.join(",")}" selects ${selected.length}`,
      );
    return selected[0]!;
  }
  const hostname = os.hostname();
  const node =
    fleet.nodes.find((n) => n.name === hostname || n.host === hostname) ??
    fleet.nodes.find((n) => n.name === "localhost");
  if (!node) {
    throw new UsageError(
      `--local: no node in ${path.relative(process.cwd(), fleet.dir) || "."} is named "${hostname}" or has host "${hostname}", and there is no "localhost" node; name one with --nodes`,
    );
  }
  return node;
}
