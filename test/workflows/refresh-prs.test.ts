// refresh-prs.yml run step by step as GitHub would, called from the fleet repository's caller that
// docs/actions.md shows: a scheduled drift-audit opens two pull requests on one node file, one is
// merged through the GitHub double, and the merge's pull_request event plans the other again from
// the report the audit kept on the state branch, with no audit and no new pull request.
// Needs root (test hosts).
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
import { keptReportText } from "../support/forge.js";
import { startGitServer, type GitServer } from "../support/git-server.js";
import { startGitHubDouble, type GitHubDouble } from "../support/github-double/index.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { fleetRunnerOptions, publishRelease, writeFleetRepository } from "./fleet-repo.js";
import { runWorkflow, type RunResult } from "./runner.js";

const OWNER = "acme";
const REPO = "fleet";
const TOKEN = "ghs_workflow_write";
const READ_TOKEN = "ghs_workflow_read";

describe("refresh-prs workflow", () => {
  let fleet: TestFleet;
  let server: GitServer;
  let double: GitHubDouble;
  let work: string;
  let seed: string;
  let runs = 0;

  before(async () => {
    fleet = await startFleet([{ name: "db-01" }], { prefix: "qmr" });
    work = await mkdtemp(path.join(os.tmpdir(), "qm-refresh-e2e-"));
    const live = async (key: string) =>
      Number((await fleet.exec("db-01", `cat /proc/sys/net/ipv4/${key}`)).trim());
    const address = fleet.hosts[0]!.address;
    server = await startGitServer({ token: TOKEN });
    seed = path.join(work, "seed");
    await writeFleetRepository(seed, await publishRelease(server, work), {
      "fleet.yaml": "ssh: { user: qm-audit, connect_timeout: 5, timeout: 60 }\n",
      // Two drifting keys a comment apart: two pull requests on one file.
      "nodes/db-01.yaml": [
        `host: ${address}`,
        "system:",
        "  sysctl_parameters:",
        `    net.ipv4.tcp_fin_timeout: ${(await live("tcp_fin_timeout")) + 1}`,
        "    # keepalive: agreed with the DBA team",
        `    net.ipv4.tcp_keepalive_probes: ${(await live("tcp_keepalive_probes")) + 1}`,
        "",
      ].join("\n"),
      known_hosts: await readFile(fleet.knownHosts, "utf8"),
    });
    await server.createRepo(OWNER, REPO, seed);
    double = await startGitHubDouble({
      git: server,
      owner: OWNER,
      repo: REPO,
      token: TOKEN,
      readToken: READ_TOKEN,
      botLogin: "github-actions[bot]",
    });
  });

  after(async () => {
    await double?.stop();
    await server?.stop();
    await fleet?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const mainSha = async () =>
    (
      await execa("git", ["--git-dir", server.barePath(OWNER, REPO), "rev-parse", "main"])
    ).stdout.trim();

  async function run(
    workflow: string,
    event: { name: string; payload: Record<string, unknown> },
  ): Promise<RunResult> {
    return runWorkflow({
      ...fleetRunnerOptions(path.join(work, "actions-cache")),
      workflow: path.join(seed, ".github/workflows", workflow),
      event,
      inputs: {},
      repository: {
        fullName: `${OWNER}/${REPO}`,
        barePath: server.barePath(OWNER, REPO),
        sha: await mainSha(),
        ref: "refs/heads/main",
      },
      tokens: { write: TOKEN, read: READ_TOKEN },
      secrets: { QUARTERMASTER_SSH_KEY: await readFile(fleet.identityFile, "utf8") },
      apiUrl: double.apiUrl,
      serverUrl: server.url,
      workDir: path.join(work, `run-${++runs}`),
      machineEnv: { QUARTERMASTER_RETRY_AFTER_BASE_MS: "1", QUARTERMASTER_WRITE_SPACING_MS: "0" },
    });
  }
  const failures = (result: RunResult) =>
    result.jobs
      .flatMap((j) =>
        j.steps
          .filter((s) => s.outcome === "failure")
          .map((s) => `${j.name} / ${s.name} (exit ${s.exitCode}):\n${s.stdout}\n${s.stderr}`),
      )
      .join("\n");
  const closed = (head: string, merged: boolean, base = "main") => ({
    name: "pull_request",
    payload: {
      action: "closed",
      pull_request: { merged, head: { ref: head }, base: { ref: base } },
      repository: { default_branch: "main" },
    },
  });
  const keptReport = () => keptReportText(server.barePath(OWNER, REPO));
  const open = () => double.pulls().filter((p) => p.state === "open");

  test("a merged Quartermaster pull request refreshes the others from the kept report, auditing nothing and opening nothing", async () => {
    // Before any scheduled run there is no report to plan from: said, with no stack trace.
    const early = await run("refresh-prs.yml", closed("quartermaster--accept--x", true));
    assert.match(
      failures(early),
      /--report-from-repo: no report kept yet \(quartermaster-state:last-report\/index\.json\)/,
    );
    assert.doesNotMatch(failures(early), /at .*\.js:\d+/);

    const audit = await run("drift-audit.yml", { name: "schedule", payload: {} });
    assert.equal(failures(audit), "");
    const kept = await keptReport();
    assert.match(kept, /net\.ipv4\.tcp_keepalive_probes/);
    const [merged, other] = open();
    assert.equal(open().length, 2, "one pull request per key");
    await double.mergePull(merged!.number);
    const before = double.writes().length;

    const refresh = await run("refresh-prs.yml", closed(merged!.head, true));
    assert.equal(failures(refresh), "");
    const job = refresh.job("refresh")[0]!;
    assert.equal(job.result, "success");
    assert.ok(!job.steps.some((s) => /ssh|audit/i.test(s.name)), "no node is audited");
    const writes = double.writes().slice(before);
    assert.ok(!writes.some((w) => w.operation === "pulls/create"), "no pull request opened");
    const step = job.steps.find((s) => s.name.startsWith("Rebuild"))!;
    // The merged drift is in the manifest now: nothing proposed for it, not even deferred.
    assert.doesNotMatch(step.stdout, /defer|open /);
    assert.doesNotMatch(step.stderr, /Error|at .*\.js:\d+/);
    // The other one is still open and merges onto the base the first merge left.
    assert.deepEqual(
      open().map((p) => p.number),
      [other!.number],
    );
    assert.equal(await keptReport(), kept, "the refresh keeps the report for the next merge");
    await double.mergePull(other!.number);
  });

  test("a merge of someone else's pull request, a close without merging, or a merge into another branch than the default starts nothing", async () => {
    for (const event of [
      closed("fix-typo", true),
      closed("quartermaster--accept--x", false),
      closed("quartermaster--accept--x", true, "release-2026"),
    ]) {
      const writes = double.writes().length;
      const result = await run("refresh-prs.yml", event);
      assert.deepEqual(
        result.jobs.filter((j) => j.result !== "skipped").map((j) => j.id),
        [],
      );
      assert.equal(double.writes().length, writes);
    }
  });
});
