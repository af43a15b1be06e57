// Memory across runs, end to end: three scheduled runs (audit over real sshd hosts, then propose)
// against the real git server and the GitHub double, with one node going down after run 1. The
// audit reads the history from the bot's state branch (--state-from-repo), propose writes it.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { GitHub, settingsFromEnv } from "../../src/forge/github.js";
import { HISTORY_FILE, STATE_BRANCH } from "../../src/propose/state.js";
import { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { startForge, type TestForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";

const TOKEN = "ghs_history_e2e";
const OWNER = "acme";
const REPO = "fleet";

let fleet: TestFleet;
let forge: TestForge;
let work: string;

before(async () => {
  fleet = await startFleet([
    { name: "web-01", sysctls: { "net.ipv4.ip_forward": "1" } },
    { name: "web-02" },
    // Its drift is waived: acknowledged, and counted so on the dashboard.
    { name: "db-01", sysctls: { "net.ipv4.ip_forward": "1" } },
  ]);
  work = await mkdtemp(path.join(tmpdir(), "qm-history-e2e-"));
  forge = await startForge({
    token: TOKEN,
    owner: OWNER,
    repo: REPO,
    files: {
      "fleet-manifests/fleet.yaml":
        "policy:\n  sysctl: { severity: medium, on_drift: accept }\n" +
        "ignore:\n  - { node: db-01, domain: sysctl, key: net.ipv4.ip_forward, reason: db replication router, expires: 2099-12-31 }\n",
      "fleet-manifests/groups/web.yaml":
        "system:\n  sysctl_parameters:\n    net.ipv4.ip_forward: 0   # routers only\n",
      "fleet-manifests/groups/db.yaml":
        "system:\n  sysctl_parameters:\n    net.ipv4.ip_forward: 0\n",
      // Declared in the node's own file: an accept of it never waits for web-02, which goes down in
      // run 2 (a group value would wait until every web node is audited again).
      "fleet-manifests/nodes/web-01.yaml":
        "groups: [web]\nsystem:\n  sysctl_parameters:\n    net.ipv4.ip_forward: 0\n",
      "fleet-manifests/nodes/web-02.yaml": "groups: [web]\n",
      "fleet-manifests/nodes/db-01.yaml": "groups: [db]\n",
    },
  });
});

after(async () => {
  await fleet?.stop();
  await forge?.double.stop();
  await forge?.server.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

const env = () => ({ ...forge.double.cliEnv(), GITHUB_RUN_ID: "4242" });
const repoArgs = () => [
  "--repo",
  forge.server.repoUrl(OWNER, REPO),
  "--cache-dir",
  path.join(work, "cache"),
];

/** A scheduled run's audit, reading the history from the state branch. */
async function audit(name: string, extra: string[] = []) {
  const file = path.join(work, `${name}.json`);
  const result = await runCli(
    [
      "audit",
      ...repoArgs(),
      "--ssh-config",
      fleet.sshConfig,
      "--state-from-repo",
      "--format",
      "json",
      "--out",
      file,
      ...extra,
    ],
    { env: env() },
  );
  const report = Report.parse(JSON.parse(await readFile(file, "utf8")));
  return { file, report, result };
}

async function propose(file: string, extra: string[] = []) {
  const result = await runCli(["propose", "--report", file, ...repoArgs(), ...extra], {
    env: env(),
  });
  return result;
}

const dashboard = () => {
  const issues = forge.double.issues();
  assert.equal(issues.length, 1, "one dashboard issue");
  return { number: issues[0]!.number, body: issues[0]!.body ?? "" };
};
const dashboardEdits = () =>
  forge.double.requests.filter((r) => r.operation === "issues/update").length;

describe("memory across runs", () => {
  let t1: string;

  it("run 1: every node audited; the drift is deferred and offered as a box on the dashboard", async () => {
    const run = await audit("run-1", ["--max-unaudited", "0"]);
    assert.equal(run.result.exitCode, 1, run.result.stderr);
    t1 = run.report.startedAt;
    const drift = run.report.nodes.find((n) => n.name === "web-01")!.drift;
    assert.equal(drift[0]?.firstSeen, t1);

    const proposed = await propose(run.file, ["--max-new-prs", "0"]);
    assert.equal(proposed.exitCode, 0, proposed.stderr);
    assert.doesNotMatch(proposed.stderr, /quartermaster:/);
    assert.equal(forge.double.pulls().length, 0);
    const { body } = dashboard();
    assert.match(
      body,
      /\*\*Fleet\*\*: 3 nodes: 2 clean, 1 drift, 0 unreachable, [^;]*; 1 drift item, 1 acknowledged\./,
    );
    assert.match(body, /### Nodes not audited \(0\)/);
    assert.match(body, /- \[ \] `[^`]*net\.ipv4\.ip_forward[^`]*`, waiting since /);
    assert.match(body, /\[workflow run\]\(http:\/\/[^)]+\/acme\/fleet\/actions\/runs\/4242\)/);
    // A person ticks the box: the next run opens that pull request over the budget.
    forge.double.editIssue(dashboard().number, body.replace("- [ ] ", "- [x] "));
  });

  it("run 2: web-02 is down: bit 8 under --max-unaudited 0, not under 1; named unaudited since run 1", async () => {
    await fleet.takeDown("web-02");
    const strict = await audit("run-2-strict", ["--max-unaudited", "0"]);
    assert.equal(strict.result.exitCode, 1 + 4 + 8, strict.result.stderr);
    assert.deepEqual(strict.report.unauditedBudget?.over, [
      "1 of 3 nodes not audited, more than max_unaudited 0 allows (0)",
    ]);
    const run = await audit("run-2", ["--max-unaudited", "1"]);
    assert.equal(run.result.exitCode, 1 + 4, run.result.stderr);
    const web02 = run.report.nodes.find((n) => n.name === "web-02")!;
    assert.equal(web02.status, "unreachable");
    assert.deepEqual(web02.unaudited, { since: t1, runs: 1 });

    const text = await runCli(["report", "--report", run.file, "--format", "text"]);
    assert.match(
      text.stdout,
      new RegExp(`web-02: unreachable \\(refused-by-target\\), unaudited since ${t1}, 1 run`),
    );

    // Propose works for the audited nodes, and still fails the run on bit 8.
    const proposed = await propose(strict.file, ["--max-new-prs", "0"]);
    assert.equal(proposed.exitCode, 8, proposed.stderr);
    assert.match(proposed.stderr, /more nodes not audited than allowed: 1 of 3 nodes/);
    const pulls = forge.double.pulls();
    assert.equal(pulls.length, 1, "the ticked deferred pull request is opened");
    assert.match(pulls[0]!.body ?? "", new RegExp(`Drifting since ${t1}`));
    const { body } = dashboard();
    assert.match(body, new RegExp(`- \`web-02\`: unreachable, unaudited since ${t1}, 1 run`));
    assert.match(body, /\*\*More nodes not audited than allowed\*\*/);
    assert.match(body, new RegExp(`\\| #${pulls[0]!.number} \\|`));
    assert.doesNotMatch(body, /- \[[ x]\] /, "nothing deferred any more");
  });

  it("run 3: web-02's second missed run sets bit 8 (one run of grace by default); the drift's first sighting is run 1's, in the report and the PR; an unchanged dashboard is not edited", async () => {
    const run = await audit("run-3");
    assert.equal(run.result.exitCode, 1 + 4 + 8, run.result.stderr);
    assert.match(
      run.report.unauditedBudget?.over?.[0] ?? "",
      /^1 node not audited in more than one run in a row .*: web-02 /,
    );
    const item = run.report.nodes.find((n) => n.name === "web-01")!.drift[0]!;
    assert.equal(item.firstSeen, t1);
    const web02 = run.report.nodes.find((n) => n.name === "web-02")!;
    assert.deepEqual(web02.unaudited, { since: t1, runs: 2 });
    const metrics = await runCli(["report", "--report", run.file, "--format", "prometheus"]);
    assert.match(
      metrics.stdout,
      /quartermaster_drift_age_seconds\{node="web-01",domain="sysctl",key="net.ipv4.ip_forward"\} \d/,
    );

    const before = dashboardEdits();
    const proposed = await propose(run.file);
    assert.equal(proposed.exitCode, 8, proposed.stderr);
    assert.equal(dashboardEdits(), before + 1, "one edit: web-02 has missed 2 runs now");
    assert.match(dashboard().body, /unaudited since [^,]+, 2 runs/);
    assert.match(forge.double.pulls()[0]!.body ?? "", new RegExp(`Drifting since ${t1}`));

    // The same run proposed again: nothing changed, so no edit.
    const again = await propose(run.file);
    assert.equal(again.exitCode, 8, again.stderr);
    // The state branch as the bot left it: nothing to warn of.
    assert.doesNotMatch(again.stderr, /last written by/);
    assert.equal(dashboardEdits(), before + 1);
    assert.deepEqual(forge.double.violations, []);
  });

  const stateText = async () =>
    (await new GitHub(settingsFromEnv(env())).readFile(STATE_BRANCH, HISTORY_FILE, "test")) ?? "";

  it("run 4: a malformed history entry costs only itself, named in the run; web-02 keeps its clock", async () => {
    const kept = await stateText();
    assert.match(kept, /"web-02":/);
    const planted = kept.replace('"nodes":{\n', '"nodes":{\n"ghost-01":{"unauditedRuns":-1},\n');
    const head = await forge.double.pushCommit(STATE_BRANCH, { [HISTORY_FILE]: planted });

    const run = await audit("run-4");
    assert.equal(run.result.exitCode, 1 + 4 + 8, run.result.stderr);
    const named = `quartermaster-state:audit-history.json: "nodes" entry "ghost-01" is malformed; that entry is left out`;
    assert.ok(run.result.stderr.includes(named), run.result.stderr);
    assert.deepEqual(run.report.nodes.find((n) => n.name === "web-02")!.unaudited, {
      since: t1,
      runs: 3,
    });
    assert.equal(run.report.nodes.find((n) => n.name === "web-01")!.drift[0]!.firstSeen, t1);

    const proposed = await propose(run.file);
    assert.equal(proposed.exitCode, 8, proposed.stderr);
    assert.ok(proposed.stderr.includes(named), proposed.stderr);
    // The planted entry came in a commit by someone else: the run says so, naming the commit.
    assert.match(
      proposed.stderr,
      new RegExp(
        `^quartermaster: quartermaster-state was last written by \\d+\\+fleet-operator@users\\.noreply\\.github\\.com \\(commit ${head.slice(0, 12)}\\), not by quartermaster\\[bot\\]@users\\.noreply\\.github\\.com: check that commit`,
        "m",
      ),
    );
    const next = await stateText();
    assert.doesNotMatch(next, /ghost-01/);
    assert.match(
      next,
      new RegExp(`"web-02":\\{[^}]*"unauditedSince":"${t1}","unauditedRuns":3\\}`),
    );
  });

  it("run 5: a history that cannot be read at all fails the audit and propose (exit 4), and is not overwritten", async () => {
    const planted = '{"version":1,"nodes":{"web-02":{"unauditedRuns":3}}'; // cut short
    await forge.double.pushCommit(STATE_BRANCH, { [HISTORY_FILE]: planted });
    const file = path.join(work, "run-4.json");
    const audited = await runCli(
      ["audit", ...repoArgs(), "--ssh-config", fleet.sshConfig, "--state-from-repo"],
      { env: env() },
    );
    assert.equal(audited.exitCode, 4, audited.stderr);
    assert.match(
      audited.stderr,
      /^quartermaster: quartermaster-state:audit-history\.json: not JSON \(.*\); the run stops rather than start the history again/m,
    );
    const edits = dashboardEdits();
    const proposed = await propose(file);
    assert.equal(proposed.exitCode, 4, proposed.stderr);
    assert.match(proposed.stderr, /quartermaster-state:audit-history\.json: not JSON/);
    assert.doesNotMatch(proposed.stderr, /internal error|\n\s+at /);
    assert.equal(await stateText(), planted);
    assert.equal(dashboardEdits(), edits);
    assert.deepEqual(forge.double.violations, []);
  });
});
