// release.yml's checks that a tag's commit is on the default branch and that the workflows pin the
// release's own action, their scripts run by bash in a checkout as actions/checkout leaves it
// (fetch-depth 0: every branch under refs/remotes/origin).
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { before, describe, it } from "node:test";
import { execa } from "execa";
import { parse } from "yaml";
import { REPO_ROOT } from "../support/cli.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();
const STEP = "The tag's commit is on the default branch";
const PIN_STEP = "The workflows pin this release's own action";
const IDENTITY = {
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.com",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.com",
};

/** The script of release.yml's step `name`. */
async function releaseStep(name: string): Promise<string> {
  const workflow = parse(
    await readFile(path.join(REPO_ROOT, ".github/workflows/release.yml"), "utf8"),
  ) as { jobs: { build: { steps: { name?: string; run?: string }[] } } };
  return workflow.jobs.build.steps.find((s) => s.name === name)!.run!;
}

describe("release.yml publishes only a tag on the default branch", () => {
  let script: string;
  let checkout: string;
  const commits: Record<string, string> = {};
  before(async () => {
    script = await releaseStep(STEP);
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

describe("release.yml publishes only workflows that pin the release's own action", () => {
  const WORKFLOWS = ["drift-audit", "manifest-review", "refresh-prs", "review-command"];
  let script: string;
  let origin: string;
  const git = (...args: string[]) =>
    execa("git", args, { cwd: origin, env: IDENTITY }).then((r) => r.stdout);
  /** Commits the workflows installing through `pin` (and the action files given); returns the commit. */
  const commit = async (pin: string, actions: Record<string, string> = {}) => {
    for (const name of WORKFLOWS)
      await writeFile(
        path.join(origin, `.github/workflows/${name}.yml`),
        `jobs:\n  x:\n    steps:\n      - name: Install Quartermaster\n        uses: OWNER/quartermaster@${pin}\n      - uses: OWNER/quartermaster/ssh@${pin}\n`,
      );
    for (const [file, text] of Object.entries(actions))
      await writeFile(path.join(origin, file), text);
    await git("add", "--all");
    await git("commit", "-qm", `pin ${pin}`);
    return git("rev-parse", "HEAD");
  };
  const check = (sha: string) =>
    execa("bash", ["-e", "-c", script], {
      cwd: origin,
      reject: false,
      env: { GITHUB_SHA: sha, TAG: "v9.9.9", GITHUB_REPOSITORY: "OWNER/quartermaster" },
    });

  before(async () => {
    script = await releaseStep(PIN_STEP);
    origin = await tree({
      "action.yml": "first\n",
      "ssh/action.yml": "ssh\n",
      ".github/workflows/x": "",
    });
    await git("init", "-q", "-b", "trunk");
  });

  it("passes workflows pinned, with the tag in the comment, to an earlier commit holding the same actions", async () => {
    const actions = await commit("v1", { "action.yml": "released\n" });
    const tagged = await commit(`${actions} # v9.9.9`);
    const result = await check(tagged);
    assert.equal(result.exitCode, 0, result.stdout + result.stderr);
  });

  it("fails a pin whose commit holds another action.yml than the tag", async () => {
    const old = await git("rev-parse", "HEAD~1");
    const tagged = await commit(`${old} # v9.9.9`, { "action.yml": "changed since\n" });
    const result = await check(tagged);
    assert.equal(result.exitCode, 1);
    assert.match(
      result.stdout,
      new RegExp(
        `^::error::the workflows pin the action at ${old}, whose action.yml or ssh/action.yml differs from v9\\.9\\.9's`,
        "m",
      ),
    );
  });

  it("fails a tag, another release's comment, or a commit outside the tag's history", async () => {
    const tagPinned = await commit("v1");
    assert.match(
      (await check(tagPinned)).stdout,
      /^::error::the workflows must install through OWNER\/quartermaster's own action pinned as @<sha> # v9\.9\.9, not: OWNER\/quartermaster\/ssh@v1 OWNER\/quartermaster@v1 $/m,
    );
    const head = await git("rev-parse", "HEAD");
    const otherRelease = await commit(`${head} # v9.9.8`);
    assert.equal((await check(otherRelease)).exitCode, 1);
    const unrelated = "0123456789abcdef".repeat(2) + "01234567";
    const outside = await commit(`${unrelated} # v9.9.9`);
    assert.match(
      (await check(outside)).stdout,
      new RegExp(
        `^::error::the workflows pin the action at ${unrelated}, which is not in the history of v9\\.9\\.9$`,
        "m",
      ),
    );
  });
});
