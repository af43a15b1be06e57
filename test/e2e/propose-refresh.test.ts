// The refresh after a merge, end to end: two accepts on adjacent lines of one shared file with
// different owners are two PRs (never combined across owners); merging the first leaves the second
// conflicting (the GitHub double answers `mergeable: false` and 405, as GitHub does); the refresh
// refresh-prs.yml runs rebuilds it on the new base at once, and it merges. Real sshd test hosts,
// the real CLI, the real git server and the OpenAPI-checked double. Needs root.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { OWNER, REPO, suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { testOctokit } from "../support/octokit.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_propose_refresh";
const M = "fleet-manifests";
const SHARED = `${M}/groups/base.yaml`;
const sysctls = (fin: number, keepalive: number) =>
  [
    "system:",
    "  sysctl_parameters:",
    `    net.ipv4.tcp_fin_timeout: ${fin}`,
    `    net.ipv4.tcp_keepalive_time: ${keepalive}`,
    "",
  ].join("\n");

// Each node takes one of the two adjacent lines from the shared file and overrides the other, so
// each accept edits the shared file (its only taker drifted); their owners differ.
const FILES: Record<string, string> = {
  [`${M}/fleet.yaml`]: "policy:\n  sysctl: { on_drift: accept }\n",
  [SHARED]: sysctls(60, 7200),
  [`${M}/nodes/web-01.yaml`]:
    "groups: [base]\nowners: [alice]\nsystem:\n  sysctl_parameters:\n    net.ipv4.tcp_keepalive_time: 7200\n",
  [`${M}/nodes/db-01.yaml`]:
    "groups: [base]\nowners: [bob]\nsystem:\n  sysctl_parameters:\n    net.ipv4.tcp_fin_timeout: 60\n",
};

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-refresh-",
  files: { "README.md": "Fleet manifests.\n", ...FILES },
  setup: async ({ double }) => {
    fleet = await startFleet(
      [
        { name: "web-01", sysctls: { "net.ipv4.tcp_fin_timeout": "30" } },
        { name: "db-01", sysctls: { "net.ipv4.tcp_keepalive_time": "600" } },
      ],
      { prefix: "qmr" },
    );
    double.addCollaborator("alice", "write");
    double.addCollaborator("bob", "write");
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig);
const openPulls = () => forge.double.pulls().filter((p) => p.state === "open");
/** GitHub's REST API as a reviewer's merge button uses it, on the double. */
const github = () =>
  testOctokit({ baseUrl: forge.double.apiUrl, auth: TOKEN, retries: 0 }).octokit.rest.pulls;
const repo = { owner: OWNER, repo: REPO };

describe("a merge refreshes the other PRs at once", () => {
  it("two owners' accepts on adjacent lines of one file are two PRs; after the first merges, the refresh rebuilds the second on the new base and it merges; the next run opens nothing", async () => {
    const { file, report } = await run.audit("run-1", 1);
    assert.deepEqual(
      report.nodes.map((n) => [n.name, n.drift.map((d) => d.key)]),
      [
        ["db-01", ["net.ipv4.tcp_keepalive_time"]],
        ["web-01", ["net.ipv4.tcp_fin_timeout"]],
      ],
    );
    await run.propose(["--report", file]);
    const pulls = openPulls().sort((a, b) => a.number - b.number);
    assert.equal(pulls.length, 2, pulls.map((p) => p.title).join("\n"));
    for (const pull of pulls) assert.deepEqual(await forge.changedFiles(pull.head), [SHARED]);
    assert.deepEqual(
      pulls.map((p) => p.labels.filter((l) => l.startsWith("owner:"))),
      [["owner:bob"], ["owner:alice"]],
    );
    const [first, second] = pulls as [(typeof pulls)[0], (typeof pulls)[0]];

    await github().merge({ ...repo, pull_number: first.number });
    const { data: conflicting } = await github().get({ ...repo, pull_number: second.number });
    assert.equal(conflicting.mergeable, false);
    await assert.rejects(github().merge({ ...repo, pull_number: second.number }), {
      status: 405,
      message: /Pull Request is not mergeable/,
    });

    // What refresh-prs.yml runs when a Quartermaster PR is merged: no audit, no new PR.
    const refresh = await run.propose(["--report-from-repo", "--max-new-prs", "0"]);
    assert.match(refresh.stdout, new RegExp(`^update #${second.number} .*\\(new commit\\)`, "m"));
    assert.doesNotMatch(refresh.stdout, /^(open|close) /m);
    const { data: rebuilt } = await github().get({ ...repo, pull_number: second.number });
    assert.equal(rebuilt.mergeable, true);
    assert.equal(rebuilt.state, "open");
    await github().merge({ ...repo, pull_number: second.number });
    const dir = await forge.checkout();
    assert.equal(await readFile(path.join(dir, SHARED), "utf8"), sysctls(30, 600));

    const next = await run.audit("run-2", 0);
    assert.deepEqual(
      next.report.nodes.map((n) => n.drift),
      [[], []],
    );
    const scheduled = await run.propose(["--report", next.file]);
    assert.doesNotMatch(scheduled.stdout, /^(open|update|close) /m, scheduled.stdout);
    assert.deepEqual(openPulls(), []);
  });
});
