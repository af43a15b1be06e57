// manifest-review.yml run step by step, as GitHub would run it for a pull request: called from a
// fleet repository of its own (the one docs/actions.md shows), with the packed release installed by action.yml.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { appendFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { startGitServer, type GitServer } from "../support/git-server.js";
import {
  fleetRepo,
  fleetRunnerOptions,
  publishRelease,
  type Release,
  type WorkRepo,
} from "./fleet-repo.js";
import { runWorkflow, type RunOptions, type RunResult } from "./runner.js";

const WORKFLOW = ".github/workflows/manifest-review.yml";

describe("manifest-review on a pull request", () => {
  let repo: WorkRepo;
  let base: string;
  let server: GitServer;
  let release: string;
  let published: Release;
  const scratch: string[] = [];

  before(async () => {
    // Serves the release the action downloads; the fleet repository is read from its directory.
    server = await startGitServer({ token: "unused" });
    release = await mkdtemp(path.join(os.tmpdir(), "qm-review-release-"));
    scratch.push(release);
    published = await publishRelease(server, release);
    repo = await fleetRepo(published);
    base = await repo.git("rev-parse", "HEAD");
  });
  after(async () => {
    await server?.stop();
    await repo?.remove();
    await Promise.all(scratch.map((d) => rm(d, { recursive: true, force: true })));
  });

  /**
   * Commits `change` on a branch, then the merge commit GitHub builds for a pull request (first
   * parent: the base).
   */
  async function pullRequest(branch: string, change: () => Promise<void>): Promise<string> {
    await repo.git("checkout", "--quiet", "-b", branch, base);
    await change();
    await repo.commit(`Change on ${branch}`);
    await repo.git("checkout", "--quiet", "--detach", base);
    await repo.git("merge", "--quiet", "--no-ff", "-m", `Merge ${branch} into main`, branch);
    const merge = await repo.git("rev-parse", "HEAD");
    await repo.git("checkout", "--quiet", "main");
    return merge;
  }

  async function review(
    number: number,
    sha: string,
    runner: Partial<RunOptions> = {},
  ): Promise<RunResult> {
    const workDir = await mkdtemp(path.join(os.tmpdir(), "qm-review-run-"));
    scratch.push(workDir);
    return runWorkflow({
      ...fleetRunnerOptions(path.join(release, "actions-cache")),
      ...runner,
      workflow: path.join(repo.dir, WORKFLOW),
      event: {
        name: "pull_request",
        payload: { number, pull_request: { number, base: { sha: base, ref: "main" } } },
      },
      repository: {
        fullName: "acme/fleet",
        barePath: repo.dir,
        sha,
        ref: `refs/pull/${number}/merge`,
      },
      // No secrets and a token that can only read: what a pull request from a fork gets.
      tokens: { write: "never-given", read: "read-only" },
      apiUrl: "http://127.0.0.1:9",
      serverUrl: server.url,
      workDir,
    });
  }

  test("a broken manifest fails the job with an annotation at its file and line", async () => {
    const sha = await pullRequest("break-web-02", async () => {
      const file = path.join(repo.dir, "fleet-manifests/nodes/web-02.yaml");
      const lines = (await readFile(file, "utf8")).split("\n");
      lines.splice(3, 0, "sytem:", "  kernel_version: 6.1.0");
      await writeFile(file, lines.join("\n"));
    });
    const run = await review(7, sha);
    const [job] = run.job("review");
    assert.equal(job!.result, "failure");
    const validate = job!.steps.find((s) => s.name === "Validate the manifests")!;
    assert.equal(validate.outcome, "failure");
    assert.equal(validate.exitCode, 2);
    assert.deepEqual(
      validate.annotations.map((a) => [a.level, a.file, a.line]),
      [["error", "fleet-manifests/nodes/web-02.yaml", 4]],
    );
    assert.match(validate.annotations[0]!.message, /unknown key "sytem".*did you mean "system"/);
    assert.equal(job!.steps.find((s) => s.name.startsWith("Declared state"))!.outcome, "skipped");
    assert.deepEqual(run.limitViolations, []);
  });

  test("a valid change shows each affected node's declared state before and after", async () => {
    const sha = await pullRequest("raise-somaxconn", async () => {
      const file = path.join(repo.dir, "fleet-manifests/groups/web.yaml");
      await writeFile(
        file,
        (await readFile(file, "utf8")).replace(
          "net.core.somaxconn: 4096",
          "net.core.somaxconn: 16384",
        ),
      );
      await appendFile(
        path.join(repo.dir, "fleet-manifests/nodes/web-02.yaml"),
        "    vm.swappiness: 10\n",
      );
    });
    const run = await review(8, sha);
    const [job] = run.job("review");
    assert.equal(
      job!.result,
      "success",
      job!.steps.map((s) => `${s.name}: ${s.outcome}\n${s.stderr}`).join("\n"),
    );
    const summary = job!.steps.find((s) => s.name.startsWith("Declared state"))!.summary;
    // web-01 takes the group's new value; web-02 overrides somaxconn, so only its own new key
    // changes.
    assert.match(
      summary,
      /### web-01\n\n\| key \| before \| after \| declared at \|\n\|---\|---\|---\|---\|\n\| `system\.sysctl_parameters\[net\.core\.somaxconn\]` \| `4096` \| `16384` \| `fleet-manifests\/groups\/web\.yaml:8` \|/,
    );
    assert.match(
      summary,
      /### web-02\n\n[^#]*\| `system\.sysctl_parameters\[vm\.swappiness\]` \| `\(not declared\)` \| `10` \| `fleet-manifests\/nodes\/web-02\.yaml:11` \|/,
    );
    assert.doesNotMatch(summary, /### web-02[^#]*somaxconn/);
    assert.doesNotMatch(summary, /### db-01/);
    assert.deepEqual(run.limitViolations, []);
  });

  test("the fleet's workflows wait for a runner with the labels they name", async () => {
    await assert.rejects(review(9, base, { labels: ["ubuntu-24.04"] }), {
      message: /runs-on \["self-hosted","fleet"\]: no runner has \["self-hosted","fleet"\]/,
    });
  });

  test("a release replaced later, .sha256 and all, is not installed: the caller pinned the digest", async () => {
    const name = `quartermaster-${published.tag.slice(1)}.tgz`;
    const tarball = path.join(release, name);
    const original = await readFile(tarball);
    const sums = await readFile(`${tarball}.sha256`, "utf8");
    // What whoever can replace a release asset can do: a new tarball and a .sha256 that matches it.
    const replaced = Buffer.concat([original, Buffer.from("\0")]);
    const digest = createHash("sha256").update(replaced).digest("hex");
    await writeFile(tarball, replaced);
    await writeFile(`${tarball}.sha256`, `${digest}  ${name}\n`);
    try {
      // A cache of its own: the release is downloaded, not restored.
      const run = await review(10, base, { cacheDir: path.join(release, "other-cache") });
      const [job] = run.job("review");
      assert.equal(job!.result, "failure");
      const install = job!.steps.find((s) => s.name === "Install Quartermaster")!;
      assert.equal(install.outcome, "failure");
      assert.deepEqual(
        install.annotations.map((a) => a.message),
        [`${name} has SHA-256 ${digest}, expected ${published.sha256}`],
      );
      assert.equal(job!.steps.find((s) => s.name === "Validate the manifests")!.outcome, "skipped");
    } finally {
      await writeFile(tarball, original);
      await writeFile(`${tarball}.sha256`, sums);
    }
  });
});
