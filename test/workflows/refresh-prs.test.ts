// refresh-prs.yml run step by step as GitHub would, called from the fleet repository's caller that
// docs/actions.md shows: a scheduled drift-audit opens two pull requests on one node file, one is
// merged through the GitHub double, and the merge's pull_request event plans the other again from
// the report the audit kept on the state branch, with no audit and no new pull request.
// Needs root (test hosts).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { keptReportText } from "../support/forge.js";
import type { TestFleet } from "../support/hosts.js";
import {
  closedEvent,
  failures,
  startTwoDriftForge,
  type FleetForge,
  type FleetSite,
} from "./fleet-site.js";

describe("refresh-prs workflow", () => {
  let fleet: TestFleet;
  let forge: FleetForge;
  let site: FleetSite;

  before(async () => {
    ({ fleet, forge } = await startTwoDriftForge({ hosts: "qmr", forge: "qm-refresh-e2e-" }));
    site = await forge.site("fleet");
  });

  after(async () => {
    await forge?.stop();
    await fleet?.stop();
  });

  const keptReport = () => keptReportText(site.bare);
  const open = () => site.double.pulls().filter((p) => p.state === "open");

  test("a merged Quartermaster pull request refreshes the others from the kept report, auditing nothing and opening nothing", async () => {
    // Before any scheduled run there is no report to plan from: said, with no stack trace.
    const early = await site.run("refresh-prs.yml", closedEvent("quartermaster--accept--x", true));
    assert.match(
      failures(early),
      /--report-from-repo: no report kept yet \(quartermaster-state:last-report\/index\.json\)/,
    );
    assert.doesNotMatch(failures(early), /at .*\.js:\d+/);

    const audit = await site.run("drift-audit.yml", { name: "schedule", payload: {} });
    assert.equal(failures(audit), "");
    const kept = await keptReport();
    assert.match(kept, /net\.ipv4\.tcp_keepalive_probes/);
    const [merged, other] = open();
    assert.equal(open().length, 2, "one pull request per key");
    await site.double.mergePull(merged!.number);
    const before = site.double.writes().length;

    const refresh = await site.run("refresh-prs.yml", closedEvent(merged!.head, true));
    assert.equal(failures(refresh), "");
    const job = refresh.job("refresh")[0]!;
    assert.equal(job.result, "success");
    assert.ok(!job.steps.some((s) => /ssh|audit/i.test(s.name)), "no node is audited");
    const writes = site.double.writes().slice(before);
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
    await site.double.mergePull(other!.number);
  });

  test("a merge of someone else's pull request, a close without merging, or a merge into another branch than the default starts nothing", async () => {
    for (const event of [
      closedEvent("fix-typo", true),
      closedEvent("quartermaster--accept--x", false),
      closedEvent("quartermaster--accept--x", true, "release-2026"),
    ]) {
      const writes = site.double.writes().length;
      const result = await site.run("refresh-prs.yml", event);
      assert.deepEqual(
        result.jobs.filter((j) => j.result !== "skipped").map((j) => j.id),
        [],
      );
      assert.equal(site.double.writes().length, writes);
    }
  });
});
