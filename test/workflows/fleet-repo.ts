// A fleet repository for workflow runs, as a user keeps one: its manifests and the three workflows
// docs/actions.md shows, which call this repository's workflows. Nothing of
// Quartermaster is in it; the runner takes the called workflows and action.yml from the working
// tree under test (TOOL_REPOSITORY), and the action installs the packed release from the git
// server's release download.
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createHash } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { REPO_ROOT } from "../support/cli.js";
import type { GitServer } from "../support/git-server.js";
import { packRelease } from "../support/pack.js";
import type { RunOptions } from "./runner.js";

/** The name this repository goes by in the workflows' and README's `uses:` lines. */
export const TOOL_REPOSITORY = "OWNER/quartermaster";
/** The labels of the self-hosted runner the documented fleet workflows ask for. */
export const FLEET_RUNNER_LABELS = ["self-hosted", "fleet"];

const IDENTITY = {
  GIT_AUTHOR_NAME: "Fleet Operator",
  GIT_AUTHOR_EMAIL: "operator@example.com",
  GIT_COMMITTER_NAME: "Fleet Operator",
  GIT_COMMITTER_EMAIL: "operator@example.com",
};

/**
 * The fleet workflows a Markdown text shows, by file name: its YAML blocks that start
 * `# .github/workflows/NAME in the fleet repository`.
 */
export function fleetWorkflowsIn(markdown: string): Record<string, string> {
  const workflows: Record<string, string> = {};
  for (const [, indent, body] of markdown.matchAll(/^( *)```yaml\n([\s\S]*?)^\1```$/gm)) {
    const text = body!.replace(new RegExp(`^${indent}`, "gm"), "");
    const name = /^# (\.github\/workflows\/[\w-]+\.yml) in the fleet repository\n/.exec(text)?.[1];
    if (name) workflows[name] = text;
  }
  return workflows;
}

/** The fleet workflows docs/actions.md tells a fleet repository to commit. */
export async function documentedFleetWorkflows(): Promise<Record<string, string>> {
  return fleetWorkflowsIn(await readFile(path.join(REPO_ROOT, "docs", "actions.md"), "utf8"));
}

/** The fleet repository's fleet-manifests/ssh_config as docs/actions.md shows it. */
export async function documentedSshConfig(): Promise<string> {
  const docs = await readFile(path.join(REPO_ROOT, "docs", "actions.md"), "utf8");
  const block =
    /^( *)```\n\1# fleet-manifests\/ssh_config in the fleet repository\n([\s\S]*?)^\1```$/m.exec(
      docs,
    );
  if (!block) throw new Error("docs/actions.md shows no fleet-manifests/ssh_config");
  return block[2]!.replace(new RegExp(`^${block[1]}`, "gm"), "");
}

/** The tarball digest the documented callers show, for the operator to replace with their release's. */
export const DOCUMENTED_SHA256 = "0123456789abcdef".repeat(4);

/**
 * Writes a fleet repository's files into `dest`: `manifests` as fleet-manifests/ (default: this
 * repository's sample fleet), an ssh_config beside them, and the fleet workflows docs/actions.md
 * shows, with the release's tarball digest where they show a placeholder, as the docs tell the
 * operator to do.
 */
export async function writeFleetRepository(
  dest: string,
  release: Release,
  manifests?: Record<string, string>,
): Promise<void> {
  const target = path.join(dest, "fleet-manifests");
  if (manifests)
    for (const [file, text] of Object.entries(manifests)) {
      await mkdir(path.dirname(path.join(target, file)), { recursive: true });
      await writeFile(path.join(target, file), text);
    }
  else await cp(path.join(REPO_ROOT, "fleet-manifests"), target, { recursive: true });
  // The documented drift-audit and review-command pass it as ssh-config-file.
  await writeFile(path.join(target, "ssh_config"), await documentedSshConfig());
  for (const [file, text] of Object.entries(await documentedFleetWorkflows())) {
    await mkdir(path.dirname(path.join(dest, file)), { recursive: true });
    await writeFile(path.join(dest, file), text.replaceAll(DOCUMENTED_SHA256, release.sha256));
  }
}

export interface WorkRepo {
  dir: string;
  git(...args: string[]): Promise<string>;
  /** Commits every change in the working tree; returns the commit. */
  commit(message: string): Promise<string>;
  remove(): Promise<void>;
}

/** A git repository holding a fleet repository on `main`. */
export async function fleetRepo(
  release: Release,
  manifests?: Record<string, string>,
): Promise<WorkRepo> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "qm-fleet-repo-"));
  const git = async (...args: string[]) =>
    (await execa("git", args, { cwd: dir, env: IDENTITY })).stdout.trim();
  await git("init", "--quiet", "--initial-branch=main");
  await writeFleetRepository(dir, release, manifests);
  const repo: WorkRepo = {
    dir,
    git,
    async commit(message) {
      await git("add", "--all");
      await git("commit", "--quiet", "--allow-empty", "-m", message);
      return git("rev-parse", "HEAD");
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
  await repo.commit("Fleet repository");
  return repo;
}

/** A release published on the test git server: its tag and its tarball's SHA-256. */
export interface Release {
  tag: string;
  sha256: string;
}

/**
 * Publishes this working tree, packed, as the release the documented fleet workflows install: the tarball
 * and its .sha256 as release assets of TOOL_REPOSITORY on `server`.
 */
export async function publishRelease(server: GitServer, dir: string): Promise<Release> {
  const tarball = await packRelease(dir);
  const digest = createHash("sha256")
    .update(await readFile(tarball))
    .digest("hex");
  await writeFile(`${tarball}.sha256`, `${digest}  ${path.basename(tarball)}\n`);
  const tag = `v${/quartermaster-(.+)\.tgz$/.exec(tarball)![1]}`;
  const [owner, name] = TOOL_REPOSITORY.split("/") as [string, string];
  for (const file of [tarball, `${tarball}.sha256`]) server.addReleaseAsset(owner, name, tag, file);
  return { tag, sha256: digest };
}

/** What a run of a fleet repository's workflows adds to its options: the tool and the runner. */
export const fleetRunnerOptions = (cacheDir: string): Partial<RunOptions> => ({
  repositories: { [TOOL_REPOSITORY]: REPO_ROOT },
  labels: FLEET_RUNNER_LABELS,
  cacheDir,
});
