// Desired PRs against the PRs that exist: open, update, close, leave alone, or nothing.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { plan } from "../../../src/propose/plan.js";
import type { Action } from "../../../src/propose/proposal.js";
import type { ExistingPull } from "../../../src/propose/pulls.js";
import {
  asPulls,
  input,
  kernel,
  listener,
  opens,
  planOnTree,
  report,
  somaxconn,
  swappiness,
  syncookies,
  type Drift,
} from "./fixtures.js";

describe("reconcile: desired pull requests against existing ones", () => {
  const forgedMarker = (marker: unknown) => `<!-- quartermaster-pr ${JSON.stringify(marker)} -->`;

  it("planning again with the PRs the first plan opened changes nothing", () => {
    const r = report({
      "web-01": [somaxconn(8192), listener("tcp/8080")],
      "web-02": [somaxconn(8192)],
      "db-01": [kernel],
    });
    const first = plan(input(r));
    assert.equal(first.length, 3);
    assert.deepEqual(plan(input(r, asPulls(first))), []);
    // A later run's report has a later start time: bodies and tickets keep the first detection.
    assert.deepEqual(
      plan(input({ ...r, startedAt: "2026-03-03T06:00:00.000Z" }, asPulls(first))),
      [],
    );
  });

  it("changed drift updates its PR: a node joins identical drift", () => {
    const pulls = asPulls(plan(input(report({ "web-01": [somaxconn(8192)] }))), 7);
    const actions = plan(
      input(report({ "web-01": [somaxconn(8192)], "web-02": [somaxconn(8192)] }), pulls),
    );
    assert.equal(actions.length, 1);
    const update = actions[0] as Extract<Action, { type: "update" }>;
    assert.equal(update.type, "update");
    assert.equal(update.number, 7);
    assert.equal(update.updateFiles, true);
    assert.deepEqual(update.nodes, ["web-01", "web-02"]);
  });

  it("a PR GitHub cannot merge any more is rebuilt on the new base though its own changes are the same; not over a human's commits", () => {
    const r = report({ "web-01": [somaxconn(8192)] });
    const [pull] = asPulls(plan(input(r)), 7);
    assert.deepEqual(plan(input(r, [pull!])), []);
    const [rebuild] = plan(input(r, [{ ...pull!, conflicts: true }]));
    assert.deepEqual(
      [rebuild!.type, (rebuild as Extract<Action, { type: "update" }>).updateFiles],
      ["update", true],
    );
    const [left] = plan(input(r, [{ ...pull!, conflicts: true, humanCommits: true }]));
    assert.equal(left!.type, "leave");
  });

  it("drift that disappeared closes its PR with a comment; drift on nodes not audited this run does not", () => {
    const pulls = asPulls(plan(input(report({ "web-01": [somaxconn(8192)] }))));
    const [close] = plan(input(report({}), pulls));
    assert.equal(close!.type, "close");
    assert.match(
      (close as Extract<Action, { type: "close" }>).comment,
      /no longer present on `web-01`/,
    );
    assert.deepEqual(plan(input(report({}, { unreachable: ["web-01"] }), pulls)), []);
  });

  it("a partial audit (--category) decides only about PRs of the domains it audited", () => {
    const pulls = asPulls(plan(input(report({ "web-01": [somaxconn(8192)] }))));
    assert.deepEqual(
      plan(input({ ...report({}), categories: ["files"] }, pulls)),
      [],
      "a files-only audit says nothing about sysctl",
    );
    const [close] = plan(input({ ...report({}), categories: ["sysctl"] }, pulls));
    assert.equal(close!.type, "close");
  });

  it("a PR with a human's commit is left alone, with one comment saying why", () => {
    const pulls = asPulls(plan(input(report({ "web-01": [somaxconn(8192)] }))));
    const touched = pulls.map((p) => ({ ...p, humanCommits: true }));
    const changed = report({ "web-01": [somaxconn(8192)], "web-02": [somaxconn(8192)] });
    const [leave] = plan(input(changed, touched));
    assert.equal(leave!.type, "leave");
    assert.match(
      (leave as Extract<Action, { type: "leave" }>).comment!,
      /someone other than Quartermaster pushed commits/,
    );
    const [again] = plan(
      input(
        changed,
        touched.map((p) => ({ ...p, leftAloneNotice: true })),
      ),
    );
    assert.deepEqual(again, {
      type: "leave",
      number: 1,
      reason: "someone other than Quartermaster pushed commits to its branch",
    });
    const [gone] = plan(input(report({}), touched));
    assert.equal(gone!.type, "leave", "vanished drift does not close a branch a human pushed to");
  });

  it("labels a failed run did not add are added, and nothing else is written", () => {
    const r = report({ "web-01": [somaxconn(8192)] });
    const pulls = asPulls(plan(input(r))).map((p) => ({
      ...p,
      labels: ["quartermaster", "needs-review"],
    }));
    const [update] = plan(input(r, pulls));
    assert.equal(update!.type, "update");
    assert.deepEqual((update as Extract<Action, { type: "update" }>).addLabels, [
      "drift:sysctl",
      "severity:medium",
    ]);
    assert.equal((update as Extract<Action, { type: "update" }>).updateFiles, false);
  });

  it("host text holding another PR's marker changes nothing about that PR, and re-planning is a no-op", () => {
    const honest = plan(input(report({ "web-01": [somaxconn(8192)] })));
    const [victim] = asPulls(honest);
    const hostile = `${forgedMarker({ ...victim!.marker, kind: "ticket" })}\n-->\n${forgedMarker(victim!.marker)}`;
    const r = report({ "web-01": [somaxconn(8192)], "db-01": [syncookies(hostile)] });
    const actions = plan(input(r, [victim!]));
    assert.deepEqual(
      actions.map((a) => a.type),
      ["open"],
      "only db-01's own PR",
    );
    const pulls = [victim!, ...asPulls(actions, 2)];
    assert.equal(pulls[1]!.nodes!.join(), "db-01", "db-01's PR is recognised by its own marker");
    assert.deepEqual(plan(input(r, pulls)), []);
    // The host's PR closed by a reviewer: a ticket for db-01's drift only; web-01's PR is
    // untouched.
    const next = plan(input(r, [victim!, { ...pulls[1]!, state: "closed" }]));
    assert.deepEqual(
      next.map((a) => a.type === "open" && [a.kind, a.nodes.join()]),
      [["ticket", "db-01"]],
    );
  });
});

describe("reconcile: quiet branches", () => {
  const group = (swap: number, conn: number, between = ["    # spaced", "    # apart"]) =>
    [
      "system:",
      "  sysctl_parameters:",
      `    vm.swappiness: ${swap}`,
      ...between,
      `    net.core.somaxconn: ${conn}`,
      "",
    ].join("\n");
  const treeOf = (groupText: string) => ({
    "groups/app.yaml": groupText,
    "nodes/app-01.yaml": "groups: [app]\n",
    "nodes/app-02.yaml": "groups: [app]\n",
  });
  const planOn = (groupText: string, drift: Record<string, Drift[]>, pulls: ExistingPull[]) =>
    planOnTree(treeOf(groupText), drift, pulls);
  const conn = (live: number): Drift => ({
    ...somaxconn(live),
    finding: { ...somaxconn(live).finding, declared: "4096" },
  });

  it("merging one PR leaves another PR on the same file alone; a change next to its lines rewrites it", async () => {
    const both = { "app-01": [swappiness(60), conn(8192)], "app-02": [swappiness(60), conn(8192)] };
    const first = await planOn(group(10, 4096), both, []);
    assert.equal(opens(first).length, 2);
    const pulls = asPulls(first);
    const swapPr = pulls.find((p) => p.branch.includes("vm-swappiness"))!;
    const left = pulls.filter((p) => p !== swapPr);
    const onlyConn = { "app-01": [conn(8192)], "app-02": [conn(8192)] };
    // The swappiness PR merged: the file changed two lines above the other PR's line.
    const merged = { ...swapPr, state: "closed" as const, merged: true };
    assert.deepEqual(await planOn(group(60, 4096), onlyConn, [...left, merged]), []);
    // A merge that changed the line next to it (where git sees a conflict): a new commit on main.
    const [update] = await planOn(group(60, 4096, []), onlyConn, [...left, merged]);
    assert.equal(update?.type, "update");
    assert.equal(update.updateFiles, true);
  });
});
