// A manifest repository on the real git server, with the GitHub double on top of it: what the
// end-to-end tests of propose and review run the real CLI against.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before } from "node:test";
import { execa } from "execa";
import { gunzipSync } from "node:zlib";
import { REPORT_DIR, REPORT_INDEX } from "../../src/propose/kept-report.js";
import { NODE_LISTS_FILE } from "../../src/propose/node-lists.js";
import { HISTORY_FILE, partsDir, RUNS_FILE, STATE_BRANCH } from "../../src/propose/state.js";
import { startGitServer, type GitServer } from "./git-server.js";
import { startGitHubDouble, type GitHubDouble, type LoggedRequest } from "./github-double/index.js";
import { removeTree, writeTree } from "./tree.js";

export interface TestForge {
  server: GitServer;
  double: GitHubDouble;
}

/** `owner/repo` holding `files` (paths to contents) on a new git server, and the double on it. */
export async function startForge(options: {
  token: string;
  owner: string;
  repo: string;
  files: Record<string, string>;
  botLogin?: string;
  /** The largest blob the double lets a write make (GitHub's 100 MiB unless given). */
  maxBlobBytes?: number;
}): Promise<TestForge> {
  const { token, owner, repo } = options;
  const seed = await writeTree(options.files);
  const server = await startGitServer({ token });
  try {
    await server.createRepo(owner, repo, seed);
  } finally {
    await removeTree(seed);
  }
  const double = await startGitHubDouble({
    git: server,
    owner,
    repo,
    token,
    botLogin: options.botLogin ?? "quartermaster[bot]",
    ...(options.maxBlobBytes !== undefined && { maxBlobBytes: options.maxBlobBytes }),
  });
  return { server, double };
}

/** The repository a test file's forge holds. */
export const OWNER = "acme";
export const REPO = "fleet";

export interface SuiteForge extends TestForge {
  /** A scratch folder, removed with the forge. */
  work: string;
  /** A clone of main as it is now, with the git CLI, in the scratch folder. */
  checkout(): Promise<string>;
  /** The CLI flags that pull the manifests from this repository, cached in the scratch folder. */
  repoArgs(): string[];
  /** The files a branch changes against main, sorted. */
  changedFiles(head: string): Promise<string[]>;
  /** A file's text on a branch. */
  fileAt(head: string, file: string): Promise<string>;
  /** Writes `files` (paths in the repository) and pushes them to main as one commit by "ops". */
  pushToMain(files: Record<string, string>, message: string): Promise<void>;
}

/**
 * A forge shared by a test file's scenarios: `OWNER/REPO` holding `files`, started with a scratch
 * folder before them and stopped after them. Its fields are set once its `before` hook has run;
 * `setup` runs in that hook, the forge started.
 */
export function suiteForge(options: {
  token: string;
  files: Record<string, string>;
  botLogin?: string;
  maxBlobBytes?: number;
  workPrefix: string;
  setup?: (forge: SuiteForge) => Promise<void> | void;
}): SuiteForge {
  const forge = {
    checkout: async () => {
      const dir = await mkdtemp(path.join(forge.work, "checkout-"));
      const url = forge.server
        .repoUrl(OWNER, REPO)
        .replace("http://", `http://x-access-token:${options.token}@`);
      await execa("git", ["clone", "--quiet", url, dir]);
      return dir;
    },
    repoArgs: () => [
      "--repo",
      forge.server.repoUrl(OWNER, REPO),
      "--cache-dir",
      path.join(forge.work, "cache"),
    ],
    changedFiles: async (head: string) =>
      (
        await execa("git", [
          "-C",
          await forge.checkout(),
          "diff",
          "--name-only",
          `origin/main...origin/${head}`,
        ])
      ).stdout
        .split("\n")
        .sort(),
    fileAt: async (head: string, file: string) =>
      (
        await execa("git", ["-C", await forge.checkout(), "show", `origin/${head}:${file}`], {
          stripFinalNewline: false,
        })
      ).stdout,
    pushToMain: async (files: Record<string, string>, message: string) => {
      const dir = await forge.checkout();
      for (const [file, text] of Object.entries(files)) {
        await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
        await writeFile(path.join(dir, file), text);
      }
      const git = (...args: string[]) =>
        execa("git", [
          "-C",
          dir,
          "-c",
          "user.name=ops",
          "-c",
          "user.email=ops@example.com",
          ...args,
        ]);
      await git("add", "-A");
      await git("commit", "-qm", message);
      await git("push", "-q", "origin", "HEAD:main");
    },
  } as SuiteForge;
  before(async () => {
    forge.work = await mkdtemp(path.join(tmpdir(), options.workPrefix));
    const { token, files, botLogin, maxBlobBytes } = options;
    Object.assign(
      forge,
      await startForge({
        token,
        files,
        owner: OWNER,
        repo: REPO,
        ...(botLogin && { botLogin }),
        ...(maxBlobBytes !== undefined && { maxBlobBytes }),
      }),
    );
    await options.setup?.(forge);
  });
  after(async () => {
    try {
      await forge.double?.stop();
    } finally {
      await forge.server?.stop();
      if (forge.work) await rm(forge.work, { recursive: true, force: true });
    }
  });
  return forge;
}

/** The report the state branch of the bare repo `gitDir` keeps: its parts in order, gunzipped. */
export async function keptReportText(gitDir: string): Promise<string> {
  const git = (...args: string[]) =>
    execa("git", ["--git-dir", gitDir, ...args], { encoding: "buffer" });
  const index = JSON.parse(
    Buffer.from((await git("show", `${STATE_BRANCH}:${REPORT_INDEX}`)).stdout).toString("utf8"),
  ) as { parts: string[] };
  const parts = [];
  for (const sha of index.parts) parts.push((await git("cat-file", "blob", sha)).stdout);
  return gunzipSync(Buffer.concat(parts)).toString("utf8");
}

const STATE_FILES = new Set(["deferred.json", HISTORY_FILE, NODE_LISTS_FILE, RUNS_FILE]);
const STATE_DIRS = [REPORT_DIR, partsDir(HISTORY_FILE), partsDir(RUNS_FILE)];
const isStateFile = (path: string) =>
  STATE_FILES.has(path) || STATE_DIRS.some((dir) => path.startsWith(`${dir}/`));
const STATE_COMMITS = new Set([
  "Quartermaster: state kept between runs",
  "Quartermaster: a propose run is writing pull requests",
]);

/**
 * What a run wrote to pull requests and their branches: the records every run keeps (the state
 * branch's commit, the lock taken to write it, the dashboard issue) left out.
 */
export function proposalWrites(writes: readonly LoggedRequest[]): LoggedRequest[] {
  return writes.filter((w) => {
    const body = w.body as { tree?: { path: string }[]; message?: string; ref?: string } | null;
    if (w.operation === "issues/create" || w.operation === "issues/update") return false;
    // Only the parts of the kept report and of large histories are written as blobs of their own.
    if (w.operation === "git/create-blob") return false;
    if (w.operation === "git/create-tree")
      return !body?.tree?.every((entry) => isStateFile(entry.path));
    if (w.operation === "git/create-commit") return !STATE_COMMITS.has(body?.message ?? "");
    if (w.operation === "git/create-ref")
      return !/^refs\/heads\/quartermaster-state(--lock)?$/.test(body?.ref ?? "");
    if (w.operation === "git/update-ref" || w.operation === "git/delete-ref")
      return !w.path.includes("quartermaster-state");
    return true;
  });
}
