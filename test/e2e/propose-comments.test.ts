// The bot's comments, end to end: manifests on the real git server, the GitHub double on top,
// `propose` through the real CLI on reports the audit's own code builds. A commenter's copy of the
// bot's left-alone mark does not silence the bot's notice; a node name holding `@` (GitHub would
// mention someone) never reaches a comment: the tree is refused first. Scenarios run in order and
// share the repository's history.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import type { Finding } from "../../src/domains/domain.js";
import { loadFleet } from "../../src/manifest/load.js";
import { runCli } from "../support/cli.js";
import { OWNER, REPO, suiteForge } from "../support/forge.js";
import { reportOf, sysctlResults } from "../support/reports.js";

const TOKEN = "ghs_propose_comments";
const BOT = "quartermaster[bot]";
// A node name whose `@` GitHub would link and notify if it were shown raw.
const VICTIM = "ops[@qm-victim]";

const forge = suiteForge({
  token: TOKEN,
  botLogin: BOT,
  workPrefix: "qm-propose-comments-",
  files: {
    "fleet-manifests/fleet.yaml": "policy:\n  sysctl: { on_drift: accept }\n",
    "fleet-manifests/nodes/web-01.yaml": "system:\n  sysctl_parameters:\n    vm.swappiness: 10\n",
  },
});

const swappiness = (live: number): Finding => ({
  key: "vm.swappiness",
  declared: "10",
  live: String(live),
  path: ["system", "sysctl_parameters", "vm.swappiness"],
});

let reports = 0;
/** A report of every node, drift items made by the audit's own code. */
async function fleetReport(drift: Record<string, Finding[]>): Promise<string> {
  const dir = await forge.checkout();
  const fleet = await loadFleet(path.join(dir, "fleet-manifests"), {
    displayPrefix: "fleet-manifests",
  });
  const ctx = { policy: fleet.settings.policy ?? {}, waivers: [], tickets: [], now: new Date() };
  const nodes = sysctlResults(fleet.nodes, drift, ctx);
  const file = path.join(forge.work, `report-${++reports}.json`);
  await writeFile(file, JSON.stringify(reportOf(nodes)));
  return file;
}

async function propose(report: string, exitCode = 0) {
  const result = await runCli(
    [
      "propose",
      "--report",
      report,
      "--repo",
      forge.server.repoUrl(OWNER, REPO),
      "--cache-dir",
      path.join(forge.work, "cache"),
    ],
    { env: forge.double.cliEnv() },
  );
  assert.equal(result.exitCode, exitCode, result.stdout + result.stderr);
  return result;
}

const openPullOf = (node: string) =>
  forge.double.pulls().find((p) => p.state === "open" && (p.body ?? "").includes(node));

describe("the bot's comments", () => {
  it("a commenter's copy of the left-alone mark does not silence the bot; its own does", async () => {
    await propose(await fleetReport({ "web-01": [swappiness(60)] }));
    const pull = openPullOf("web-01");
    assert.ok(pull, "an accept PR for web-01");
    await forge.double.pushCommit(pull.head, {
      "fleet-manifests/nodes/web-01.yaml": "system:\n  sysctl_parameters:\n    vm.swappiness: 60\n",
    });
    await forge.double.addComment(
      pull.number,
      "nothing to see\n\n<!-- quartermaster-left-alone -->",
      "mallory",
    );
    // The drift changed: the bot would push to the branch, but a person pushed there first.
    for (let run = 0; run < 2; run++)
      await propose(await fleetReport({ "web-01": [swappiness(70)] }));
    const notices = forge.double
      .comments(pull.number)
      .filter((c) => c.body.includes("leaves this pull request alone"));
    assert.deepEqual(
      notices.map((c) => c.by),
      [BOT],
      "one notice, by the bot, however many runs",
    );
    assert.equal(forge.double.pulls().find((p) => p.number === pull.number)!.state, "open");
  });
  it("a node name holding @ is refused before anything reaches GitHub: no comment, no PR", async () => {
    const report = await fleetReport({ "web-01": [swappiness(60)] });
    const before = forge.double
      .pulls()
      .map((p) => [p.number, p.state, forge.double.comments(p.number).length]);
    await forge.double.pushCommit("main", {
      [`fleet-manifests/nodes/${VICTIM}.yaml`]:
        "system:\n  sysctl_parameters:\n    vm.swappiness: 10\n",
    });
    const result = await propose(report, 2);
    assert.match(result.stderr, /nodes\/ops\[@qm-victim\]\.yaml: node name "ops\[@qm-victim\]"/);
    assert.doesNotMatch(result.stderr, /\n\s+at /);
    assert.deepEqual(
      forge.double.pulls().map((p) => [p.number, p.state, forge.double.comments(p.number).length]),
      before,
      "no pull request opened, closed or commented on",
    );
  });
});
