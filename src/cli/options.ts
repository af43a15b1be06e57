import { existsSync, readdirSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { createSupportsColor } from "supports-color";
import { DOMAIN_NAMES, type DomainName } from "../domains/domain.js";
import { UsageError } from "../errors.js";
import { globMatch, globProblem } from "../glob.js";
import { loadFleet, type Fleet, type LoadedNode } from "../manifest/load.js";
import { nearest } from "../manifest/suggest.js";
import { visible } from "../text/escape.js";
import { wholeNumber } from "../whole-number.js";
import { HelpRequested, commandHelp } from "./help.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

export const DEFAULT_MANIFESTS = "fleet-manifests";

export const MANIFEST_OPTIONS = {
  manifests: { type: "string" },
  repo: { type: "string" },
  ref: { type: "string" },
  "cache-dir": { type: "string" },
} satisfies Options;

export const SELECT_OPTIONS = {
  nodes: { type: "string" },
  category: { type: "string" },
  local: { type: "boolean", default: false },
} satisfies Options;

export const OUTPUT_OPTIONS = {
  format: { type: "string" },
  out: { type: "string" },
  verbose: { type: "boolean", default: false },
  color: { type: "boolean", default: false },
  "no-color": { type: "boolean", default: false },
} satisfies Options;

/**
 * `--concurrency -1` as `--concurrency=-1`: parseArgs would call the value an ambiguous option,
 * while it is the flag's own check that can say what the flag takes. No option starts with a digit.
 */
function joinDashedValues(argv: readonly string[], options: Options): string[] {
  const end = argv.indexOf("--");
  const flags = end === -1 ? argv : argv.slice(0, end);
  const joined: string[] = [];
  for (let i = 0; i < flags.length; i++) {
    const name = flags[i]!.startsWith("--") ? flags[i]!.slice(2) : "";
    const next = flags[i + 1];
    if (options[name]?.type === "string" && next !== undefined && /^-\d/.test(next))
      joined.push(`${flags[i]}=${flags[++i]}`);
    else joined.push(flags[i]!);
  }
  return end === -1 ? joined : [...joined, ...argv.slice(end)];
}

/**
 * parseArgs for one command, with -h/--help (HelpRequested) and its errors turned into usage
 * errors that name the command and suggest the nearest flag.
 */
export function parse<T extends Options>(
  command: string,
  argv: string[],
  options: T,
  config: { positionals?: boolean } = {},
) {
  const all = {
    ...options,
    help: { type: "boolean", short: "h", default: false },
  } satisfies Options;
  if (argv.includes("--help") || argv.includes("-h"))
    throw new HelpRequested(commandHelp(command, all));
  try {
    return parseArgs({
      args: joinDashedValues(argv, options),
      options: all,
      strict: true,
      allowPositionals: config.positionals ?? false,
    });
  } catch (error) {
    const unknown = /^Unknown option '(-{1,2}[^']*)'/.exec((error as Error).message)?.[1];
    const suggestion = unknown && nearest(unknown.replace(/^-+/, ""), Object.keys(options));
    const message = unknown
      ? `unknown option ${unknown}${suggestion ? ` (did you mean --${suggestion}?)` : ""}`
      : (error as Error).message.replace(
          /\. To specify a positional argument starting with a '-'.*$/,
          "",
        );
    throw new UsageError(`${command}: ${message}`, command);
  }
}

export function parseCategories(text: string | undefined): DomainName[] | undefined {
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

/**
 * A flag's whole number (wholeNumber), `fallback` when the flag is absent; anything else is a usage
 * error naming the flag and what it takes (`hint`, by default "of at least <min>").
 */
export function parseWholeNumber<F extends number | undefined>(
  name: string,
  text: string | undefined,
  fallback: F,
  { min = 1, hint = `of at least ${min}` }: { min?: number; hint?: string } = {},
): number | F {
  if (text === undefined) return fallback;
  const value = wholeNumber(text, min);
  if (value === undefined)
    throw new UsageError(`--${name} takes a whole number ${hint}, not "${visible(text)}"`);
  return value;
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
export async function resolveManifestDir(values: ManifestValues): Promise<string> {
  return (await locateManifests(values)).dir;
}

type ManifestValues = { manifests?: string; repo?: string; ref?: string; "cache-dir"?: string };

async function locateManifests(values: ManifestValues): Promise<{ dir: string; pulled: boolean }> {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repository } = process.env;
  // With --repo, nothing here is searched for: the tree is in the pull.
  const found = values.repo === undefined ? findManifests(values.manifests) : DEFAULT_MANIFESTS;
  const repo =
    values.repo ??
    (server && repository && !existsSync(found)
      ? `${server.replace(/\/+$/, "")}/${repository}.git`
      : undefined);
  if (values.repo === "") throw new UsageError("--repo needs a URL");
  if (values["cache-dir"] === "") throw new UsageError("--cache-dir needs a folder");
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
    token: process.env.GITHUB_TOKEN,
    ...(server && { serverUrl: server }),
    cacheDir: values["cache-dir"] ?? path.join(os.homedir(), ".cache", "quartermaster"),
  });
  const dir = path.join(pulled.dir, values.manifests ?? DEFAULT_MANIFESTS);
  checkTreeShape(dir);
  return { dir, pulled: true };
}

export async function loadManifests(values: ManifestValues): Promise<Fleet> {
  const { dir, pulled } = await locateManifests(values);
  // Pulled manifests are named as the repository names them, not by the cache's path.
  return loadFleet(dir, pulled ? { displayPrefix: values.manifests ?? DEFAULT_MANIFESTS } : {});
}

/** `--nodes a,web-*`: comma-separated names or globs; every pattern must match some node. */
export function selectNodes(
  fleet: Fleet,
  patterns: string | undefined,
  flag = "--nodes",
): LoadedNode[] {
  if (!patterns) return fleet.nodes;
  const globs = patterns
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
  for (const glob of globs) {
    const problem = globProblem(glob);
    if (problem) throw new UsageError(`${flag}: bad pattern "${glob}": ${problem}`);
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
export function localNode(fleet: Fleet, nodes: string | undefined): LoadedNode {
  if (nodes) {
    const selected = selectNodes(fleet, nodes);
    if (selected.length !== 1)
      throw new UsageError(
        `--local audits one node, but --nodes "${nodes}" selects ${selected.length}`,
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
  stream: NodeJS.WriteStream,
  env = process.env,
): boolean {
  if (values["no-color"]) return false;
  if (values.color) return true;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  return createSupportsColor(stream, { sniffFlags: false }) !== false;
}
