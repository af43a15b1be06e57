import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { DOMAIN_NAMES, type DomainName } from "../domains/domain.js";
import { UsageError } from "../errors.js";
import { globMatch } from "../glob.js";
import { loadFleet, type Fleet, type LoadedNode } from "../manifest/load.js";
import { nearest } from "../manifest/suggest.js";
import { pullRepository } from "../forge/clone.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

export const MANIFEST_OPTIONS = {
  manifests: { type: "string", default: "fleet-manifests" },
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
  "no-color": { type: "boolean", default: false },
} satisfies Options;

/** parseArgs, with its errors turned into usage errors that say which command they belong to. */
export function parse<T extends Options>(command: string, argv: string[], options: T) {
  try {
    return parseArgs({ args: argv, options: { ...options, help: { type: "boolean", default: false } }, strict: true, allowPositionals: false });
  } catch (error) {
    throw new UsageError(`${command}: ${(error as Error).message}`);
  }
}

export function parseCategories(text: string | undefined): DomainName[] | undefined {
  if (!text) return undefined;
  return text.split(",").map((name) => {
    const trimmed = name.trim();
    if (!(DOMAIN_NAMES as readonly string[]).includes(trimmed)) {
      const suggestion = nearest(trimmed, DOMAIN_NAMES);
      throw new UsageError(`unknown category "${trimmed}"${suggestion ? ` (did you mean "${suggestion}"?)` : ""}; categories: ${DOMAIN_NAMES.join(", ")}`);
    }
    return trimmed as DomainName;
  });
}

export function parsePositiveInt(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new UsageError(`--${name} takes a whole number of at least 1, not "${text}"`);
  return value;
}

/**
 * The manifests directory: --manifests, or inside a pull of --repo (isomorphic-git, cached). In
 * GitHub Actions, with no --repo and no --manifests directory, the repository the workflow runs for.
 */
export async function resolveManifestDir(values: { manifests?: string; repo?: string; ref?: string; "cache-dir"?: string }): Promise<string> {
  const manifests = values.manifests ?? "fleet-manifests";
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repository } = process.env;
  const repo = values.repo ?? (server && repository && !existsSync(manifests) ? `${server.replace(/\/+$/, "")}/${repository}.git` : undefined);
  if (!repo) return manifests;
  const pulled = await pullRepository({
    url: repo,
    ref: values.ref,
    token: process.env.GITHUB_TOKEN,
    ...(server && { serverUrl: server }),
    cacheDir: values["cache-dir"] ?? path.join(os.homedir(), ".cache", "quartermaster"),
  });
  return path.join(pulled.dir, manifests);
}

export async function loadManifests(values: { manifests?: string; repo?: string; ref?: string }): Promise<Fleet> {
  const dir = await resolveManifestDir(values);
  const manifests = values.manifests ?? "fleet-manifests";
  // Pulled manifests are named as the repository names them, not by the cache's path.
  return loadFleet(dir, dir !== manifests ? { displayPrefix: manifests } : {});
}

/** `--nodes a,web-*`: comma-separated names or globs; every pattern must match some node. */
export function selectNodes(fleet: Fleet, patterns: string | undefined): LoadedNode[] {
  if (!patterns) return fleet.nodes;
  const globs = patterns.split(",").map((p) => p.trim()).filter(Boolean);
  for (const glob of globs) {
    if (!fleet.nodes.some((n) => globMatch(glob, n.name))) {
      const suggestion = nearest(glob, fleet.nodes.map((n) => n.name));
      throw new UsageError(`--nodes: no node matches "${glob}"${suggestion ? ` (did you mean "${suggestion}"?)` : ""}`);
    }
  }
  return fleet.nodes.filter((n) => globs.some((g) => globMatch(g, n.name)));
}

/** For --local: the node named by --nodes, else the one whose name or host is this hostname, else `localhost`. */
export function localNode(fleet: Fleet, nodes: string | undefined): LoadedNode {
  if (nodes) {
    const selected = selectNodes(fleet, nodes);
    if (selected.length !== 1) throw new UsageError(`--local audits one node, but --nodes "${nodes}" selects ${selected.length}`);
    return selected[0]!;
  }
  const hostname = os.hostname();
  const node =
    fleet.nodes.find((n) => n.name === hostname || n.host === hostname) ?? fleet.nodes.find((n) => n.name === "localhost");
  if (!node) {
    throw new UsageError(
      `--local: no node in ${path.relative(process.cwd(), fleet.dir) || "."} is named "${hostname}" or has host "${hostname}", and there is no "localhost" node; name one with --nodes`,
    );
  }
  return node;
}

export function useColor(values: { "no-color"?: boolean }, stream: NodeJS.WriteStream): boolean {
  return !values["no-color"] && !process.env.NO_COLOR && stream.isTTY === true;
}
