// release.yml's check that a tag's commit is on the default branch, its script run by bash in a
// checkout as actions/checkout leaves it (fetch-depth 0: every branch under refs/remotes/origin).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { before, describe, it } from "node:test";
import { execa } from "execa";
import { parse } from "yaml";
import { REPO_ROOT } from "../support/cli.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();
const STEP = "The tag's commit is on the default branch";
const IDENTITY = {
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.com",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.com",
};

describe("release.yml publishes only a tag on the default branch", () => {
  let script: string;
  let checkout: string;
  const commits: Record<string, string> = {};
  before(async () => {
    const workflow = parse(
      await readFile(path.join(REPO_ROOT, ".github/workflows/release.yml"), "utf8"),
    ) as { jobs: { release: { steps: { name?: string; run?: string }[] } } };
    script = workflow.jobs.release.steps.find((s) => s.name === STEP)!.run!;
    const origin = await tree({ "a.txt": "a\n" });
    const git = (cwd: string, ...args: string[]) =>
      execa("git", args, { cwd, env: IDENTITY }).then((r) => r.stdout);
    await git(origin, "init", "-q", "-b", "trunk");
    await git(origin, "add", ".");
    await git(origin, "commit", "-qm", "reviewed");
    commits.reviewed = await git(origin, "rev-parse", "HEAD");
    await git(origin, "checkout", "-qb", "someones-branch");
    await git(origin, "commit", "-q", "--allow-empty", "-m", "never reviewed");
    commits.unreviewed = await git(origin, "rev-parse", "HEAD");
    checkout = path.join(await tree({}), "checkout");
    await execa("git", ["clone", "-q", origin, checkout]);
  });

  const check = (sha: string) =>
    execa("bash", ["-e", "-c", script], {
      cwd: checkout,
      reject: false,
      env: { GITHUB_SHA: sha, GITHUB_REF_NAME: "v9.9.9", DEFAULT_BRANCH: "trunk" },
    });

  it("passes a tag on a commit of the default branch", async () => {
    const result = await check(commits.reviewed!);
    assert.equal(result.exitCode, 0, result.stdout + result.stderr);
  });

  it("fails a tag on a commit only another branch holds, saying so", async () => {
    const result = await check(commits.unreviewed!);
    assert.equal(result.exitCode, 1);
    assert.match(
      result.stdout,
      /^::error::tag v9\.9\.9 is on commit [0-9a-f]{40}, which is not on trunk$/m,
    );
  });
});
