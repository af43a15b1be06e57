import { io, type Output } from "./io.js";
import { existsSync, readdirSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSupportsColor } from "supports-color";
import { DOMAIN_NAMES, type DomainName } from "../domains/registry.js";
import { UsageError } from "../errors.js";
import { globMatch, globProblem } from "../glob.js";
import { loadFleet, type Fleet, type LoadedNode } from "../manifest/load.js";
import { nearest } from "../manifest/suggest.js";
import { PACKAGES_MODES } from "../domains/snapshot-options.js";
import { switchFlag, checkedFlag, choiceFlag, textFlag, wholeFlag, type Config } from "./flags.js";

export const DEFAULT_MANIFESTS = "fleet-manifests";

/** A flag naming something that cannot be empty: `--repo ""` is a mistake, said as `missing`. */
const named = (value: string, help: string, missing: string) =>
  checkedFlag(value, help, (given) => {
    if (given === "") throw new UsageError(missing);
    return given;
  });

/** Where the manifests are: a tree here, or one pulled from a repository. */
export const MANIFEST_FLAGS = {
  manifests: textFlag(
    "DIR",
    "the manifest tree (default: the one this directory is in, or fleet-manifests/ here or above)",
  ),
  repo: named(
    "URL",
    "pull the manifests from this git repository (https; cached)",
    "--repo needs a URL",
  ),
  ref: textFlag("REF", "branch, tag or commit of --repo (default: its default branch)"),
  "cache-dir": named(
    "DIR",
    "where pulled repositories are cached (default: ~/.cache/quartermaster)",
    "--cache-dir needs a folder",
  ),
};

export type ManifestConfig = Config<typeof MANIFEST_FLAGS>;

/**
 * Node names or globs, comma-separated; each glob's syntax is checked here, whether it matches a
 * node once the fleet is loaded (selectNodes).
 */
export function nodeGlobs(value: string, help: string) {
  return checkedFlag(value, help, (given, name) => {
    const globs = given
      .split(",")
      .map((glob) => glob.trim())
      .filter(Boolean);
    for (const glob of globs) {
      const problem = globProblem(glob);
      if (problem) throw new UsageError(`--${name}: bad pattern "${glob}": ${problem}`);
    }
    return globs.length ? globs : undefined;
  });
}

export const CATEGORY_FLAG = checkedFlag(
  "LIST",
  "audit only these domains, comma-separated: sysctl,files",
  parseCategories,
);

/** Which nodes, and which of their domains. */
export const SELECT_FLAGS = {
  nodes: nodeGlobs("LIST", "node names or globs, comma-separated: web-01,db-*"),
  category: CATEGORY_FLAG,
  local: switchFlag("audit this machine through a local shell instead of SSH"),
};

export const DEFAULT_CONCURRENCY = 32;
export const DEFAULT_TIMEOUT_SECONDS = 60;

export const CONCURRENCY_FLAG = wholeFlag(
  "N",
  "nodes audited at once (default: 32); through one jump host, at most its ssh.max_sessions (default: 8)",
  DEFAULT_CONCURRENCY,
);

/** Absent, each command (and node) has its own default. */
export const TIMEOUT_FLAG = wholeFlag(
  "SECONDS",
  "per-node time limit, connection and probe (default: the node's ssh.timeout, else 60)",
  undefined,
);

export const SSH_CONFIG_FLAG = textFlag("FILE", "ssh_config file for the ssh client (ssh -F)");

export const PACKAGES_FLAG = choiceFlag(
  PACKAGES_MODES,
  "MODE",
  "how installed packages are declared: names (any version), versions (pinned) or none (default: names)",
  "names",
);

export const NO_EPHEMERAL_RANGE_FLAG = switchFlag(
  "declare every loopback listener by its port, not the ephemeral port range as one tcp/LOW-HIGH@loopback rule per protocol",
);

export const REPORT_FLAG = textFlag("FILE", "an audit report written with --format json");

export const BASE_FLAG = textFlag(
  "REF",
  "the git ref to compare with or to open pull requests against",
);

/** `--max-bytes`, `fallback` when absent. */
export const maxBytesFlag = <F extends number | undefined>(fallback: F) =>
  wholeFlag(
    "N",
    "Markdown only: cap the output at N bytes (GitHub's job summary takes 1 MiB)",
    fallback,
  );

function parseCategories(text: string): DomainName[] | undefined {
  if (!text) return undefined;
  return text.split(",").map((name) => {
    const trimmed = name.trim();
    if (!(DOMAIN_NAMES as readonly string[]).includes(trimmed)) {
      const suggestion = nearest(trimmed, DOMAIN_NAMES);
      throw new UsageError(
        `unknown category "${trimmed}"${suggestion ? ` (did you mean "${suggestion}"?)` : ""}; categories: ${DOMAIN_NAMES.join(", ")}`,
      );
    }
    return trimmed as DomainName;
  });
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
export async function resolveManifestDir(values: ManifestConfig): Promise<string> {
  return (await locateManifests(values)).dir;
}

async function locateManifests(values: ManifestConfig): Promise<{ dir: string; pulled: boolean }> {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repository } = io().env;
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
    token: io().env.GITHUB_TOKEN,
    ...(server && { serverUrl: server }),
    cacheDir: values["cache-dir"] ?? path.join(os.homedir(), ".cache", "quartermaster"),
  });
  const dir = path.join(pulled.dir, values.manifests ?? DEFAULT_MANIFESTS);
  checkTreeShape(dir);
  return { dir, pulled: true };
}

export async function loadManifests(values: ManifestConfig): Promise<Fleet> {
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

/**
 * Whether to colour a stream, by the conventions operators already use: --no-color, then
 * --color, then NO_COLOR (no-color.org), then FORCE_COLOR, TERM=dumb and whether the stream is a
 * terminal, as supports-color (chalk's) reads them.
 */
export function useColor(
  values: { "no-color"?: boolean; color?: boolean },
  stream: Output,
  env = io().env,
): boolean {
  if (values["no-color"]) return false;
  if (values.color) return true;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  // supports-color reads only the stream's isTTY.
  return createSupportsColor(stream as NodeJS.WriteStream, { sniffFlags: false }) !== false;
}
