import { io } from "./io.js";
import { statSync } from "node:fs";
import { DOMAIN_NAMES, type DomainName } from "../domains/registry.js";
import { ForgeError, UsageError } from "../errors.js";
import { settingsFromEnv, type GitHubSettings } from "../forge/github-settings.js";
import { globProblem } from "../glob.js";
import { nearest } from "../manifest/suggest.js";
import { PACKAGES_MODES } from "../domains/snapshot-options.js";
import { DEFAULT_CONCURRENCY } from "../runs/audit.js";
import { resolveManifestDir as resolveDir, type ManifestSource } from "../runs/fleet.js";
import { switchFlag, checkedFlag, choiceFlag, textFlag, wholeFlag, type Config } from "./flags.js";

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

/** The manifest flags, and in GitHub Actions the repository the workflow runs for, and its token. */
export function manifestSource(values: ManifestConfig): ManifestSource {
  const { GITHUB_SERVER_URL, GITHUB_REPOSITORY, GITHUB_TOKEN } = io().env;
  return {
    manifests: values.manifests,
    repo: values.repo,
    ref: values.ref,
    cacheDir: values["cache-dir"],
    serverUrl: GITHUB_SERVER_URL,
    repository: GITHUB_REPOSITORY,
    token: GITHUB_TOKEN,
  };
}

/**
 * How to reach GitHub, from the environment GitHub Actions provides, for what `needs` it (a flag;
 * unnamed, the command): a setting missing is the workflow's mistake (exit 2), said before
 * anything is pulled or probed.
 */
export function githubSettings(needs?: string): GitHubSettings {
  try {
    return settingsFromEnv(io().env);
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    throw new UsageError(needs === undefined ? error.message : `${needs}: ${error.message}`);
  }
}

/** The manifests directory the flags name (runs/fleet.ts resolveManifestDir). */
export const resolveManifestDir = (values: ManifestConfig) => resolveDir(manifestSource(values));

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

export const CONCURRENCY_FLAG = wholeFlag(
  "N",
  "nodes audited at once (default: 32); through one jump host, at most its ssh.max_sessions (default: 32 over its one shared connection, 8 when its nodes connect one by one)",
  DEFAULT_CONCURRENCY,
);

/** Absent, each command (and node) has its own default. */
export const TIMEOUT_FLAG = wholeFlag(
  "SECONDS",
  "per-node time limit, connection and probe (default: the node's ssh.timeout, else 60)",
  undefined,
);

/** Checked as a file with the flags, so a wrong one is said before any pull or probe. */
export const SSH_CONFIG_FLAG = checkedFlag(
  "FILE",
  "ssh_config file for the ssh client (ssh -F)",
  (given, name) => {
    if (!statSync(given, { throwIfNoEntry: false })?.isFile())
      throw new UsageError(`--${name}: no such file: ${given}`);
    return given;
  },
);

export const PACKAGES_FLAG = choiceFlag(
  PACKAGES_MODES,
  "MODE",
  "which installed packages are declared: chosen (those the package manager marks as installed on purpose, any version), all or names (every one, any version), versions (every one, pinned) or none (default: names)",
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
