// A fleet repository for workflow runs: this project's files (so `npm ci` and `npx quartermaster`
// work as in a repository that holds Quartermaster and its manifests), committed with git.
import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { REPO_ROOT } from "../support/cli.js";

const IDENTITY = {
  GIT_AUTHOR_NAME: "Fleet Operator",
  GIT_AUTHOR_EMAIL: "operator@example.com",
  GIT_COMMITTER_NAME: "Fleet Operator",
  GIT_COMMITTER_EMAIL: "operator@example.com",
};

/**
 * The project's tracked and new files (the working tree under test), without fleet-manifests/ when
 * `manifests` replaces it.
 */
export async function copyProject(dest: string, manifests?: Record<string, string>): Promise<void> {
  const { stdout } = await execa(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    { cwd: REPO_ROOT },
  );
  const files = stdout
    .split("\0")
    .filter((f) => f && f !== "node_modules" && !f.startsWith("node_modules/"))
    .filter((f) => !manifests || !f.startsWith("fleet-manifests/"));
  for (const file of files) {
    await mkdir(path.dirname(path.join(dest, file)), { recursive: true });
    await cp(path.join(REPO_ROOT, file), path.join(dest, file)).catch(
      (error: NodeJS.ErrnoException) => {
        // Deleted in the working tree but not yet committed.
        if (error.code !== "ENOENT") throw error;
      },
    );
  }
  for (const [file, text] of Object.entries(manifests ?? {})) {
    await mkdir(path.dirname(path.join(dest, "fleet-manifests", file)), { recursive: true });
    await writeFile(path.join(dest, "fleet-manifests", file), text);
  }
}

export interface WorkRepo {
  dir: string;
  git(...args: string[]): Promise<string>;
  /** Commits every change in the working tree; returns the commit. */
  commit(message: string): Promise<string>;
  remove(): Promise<void>;
}

/** A git repository holding a copy of the project on `main`. */
export async function projectRepo(manifests?: Record<string, string>): Promise<WorkRepo> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "qm-fleet-repo-"));
  const git = async (...args: string[]) =>
    (await execa("git", args, { cwd: dir, env: IDENTITY })).stdout.trim();
  await git("init", "--quiet", "--initial-branch=main");
  await copyProject(dir, manifests);
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
