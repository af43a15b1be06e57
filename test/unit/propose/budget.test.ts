// At most N new PRs per run; the rest wait, longest-waiting first.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { budget, waitingAfter } from "../../../src/propose/budget.js";
import { plan } from "../../../src/propose/plan.js";
import type { Action, Reconciled } from "../../../src/propose/proposal.js";
import { asPulls, input, kernel, listener, motd, opens, report, somaxconn } from "./fixtures.js";

describe("budget: new pull requests per run", () => {
  it("at most N new PRs per run, the rest deferred and opened on the next run; updates are not limited", () => {
    const r = report({
      "web-01": [somaxconn(8192), listener("tcp/8080")],
      "web-02": [somaxconn(1024)],
      "db-01": [kernel, motd("bye\n")],
    });
    const first = plan(input(r, [], undefined, 2));
    assert.deepEqual(first.map((a) => a.type).sort(), ["defer", "defer", "defer", "open", "open"]);
    // Most severe first: three high-severity groups compete for the two slots, by branch order.
    assert.ok(opens(first).every((a) => a.labels.includes("severity:high")));
    assert.deepEqual(plan(input(r, [], undefined, 2)), first, "stable");
    const pulls = asPulls(first);
    const second = plan(input(r, pulls, undefined, 2));
    assert.deepEqual(second.map((a) => a.type).sort(), ["defer", "open", "open"]);
    const third = plan(input(r, [...pulls, ...asPulls(second, 10)], undefined, 2));
    assert.deepEqual(
      third.map((a) => a.type),
      ["open"],
    );
    const changed = report({
      "web-01": [somaxconn(8192), listener("tcp/8080")],
      "web-02": [somaxconn(1024)],
      "web-03": [somaxconn(8192)],
      "db-01": [kernel, motd("bye\n")],
    });
    const all = [...pulls, ...asPulls(second, 10), ...asPulls(third, 20)];
    assert.deepEqual(
      plan(input(changed, all, undefined, 0)).map((a) => a.type),
      ["update"],
      "an update with a budget of 0",
    );
  });

  it("deferred PRs keep their place: the one waiting longest opens first, ahead of newer, more severe drift", () => {
    const r = report({
      "web-01": [somaxconn(8192), listener("tcp/8080")],
      "web-02": [somaxconn(1024)],
      "db-01": [kernel, motd("bye\n")],
    });
    const first = plan(input(r, [], undefined, 1));
    const deferred = first.filter(
      (a): a is Extract<Action, { type: "defer" }> => a.type === "defer",
    );
    assert.ok(
      deferred.every((a) => a.since === r.startedAt),
      "first deferred now",
    );
    const waiting = waitingAfter(first);
    assert.deepEqual([...waiting.keys()].sort(), deferred.map((a) => a.branch).sort());
    // The least severe deferred PR has waited since an earlier run: it goes before every other.
    const lowest = [...deferred]
      .sort((a, b) => (a.title < b.title ? -1 : 1))
      .find((a) => a.branch.includes("--sysctl--"))!;
    const older = new Map([...waiting, [lowest.branch, "2026-01-01T00:00:00.000Z"]]);
    const next = plan({ ...input(r, asPulls(first), undefined, 1), waiting: older });
    assert.deepEqual(
      opens(next).map((a) => a.branch),
      [lowest.branch],
    );
    assert.equal(waitingAfter(next).get(lowest.branch), undefined, "opened: no longer waiting");
    for (const [branch, since] of waitingAfter(next))
      assert.equal(since, older.get(branch), "the others keep their time");
  });

  it("writes the body of a pull request it opens, never of one it defers", () => {
    const written: string[] = [];
    const open = (branch: string, severity: string): Reconciled => ({
      type: "open",
      kind: "accept",
      branch,
      title: branch,
      body: () => {
        written.push(branch);
        return `body of ${branch}`;
      },
      labels: [`severity:${severity}`],
      files: {},
      marker: { v: 1, kind: "accept", signature: branch, nodes: [], detected: "", content: "" },
      nodes: [],
      owners: [],
      fingerprints: [],
    });
    const kept = budget(
      [open("b-low", "low"), open("a-high", "high"), open("c-low", "low")],
      1,
      new Map(),
      "2026-06-01T00:00:00.000Z",
    );
    assert.deepEqual(
      kept.map((a) => a.type),
      ["defer", "open", "defer"],
    );
    assert.deepEqual(written, ["a-high"]);
    assert.equal((kept[1] as Extract<Action, { type: "open" }>).body, "body of a-high");
  });
});
