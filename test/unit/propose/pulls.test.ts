// The forge's pull request records read as proposals: only a marker agreeing with the branch
// counts.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { plan } from "../../../src/propose/plan.js";
import { existingPull } from "../../../src/propose/pulls.js";
import { input, opens, report, somaxconn } from "./fixtures.js";

describe("pulls: records from the forge", () => {
  const [pr] = opens(plan(input(report({ "web-01": [somaxconn(8192)] }))));
  const record = {
    number: 3,
    state: "open" as const,
    merged: false,
    branch: pr!.branch,
    title: pr!.title,
    body: pr!.body,
    labels: pr!.labels,
  };

  it("a record whose body ends in the bot's marker is that proposal", () => {
    assert.deepEqual(existingPull(record), { ...record, marker: pr!.marker, nodes: ["web-01"] });
  });

  it("a record on another branch, or without the marker, is no proposal", () => {
    assert.equal(existingPull({ ...record, branch: "feature/x" }).marker, undefined);
    assert.equal(existingPull({ ...record, body: "hand-written" }).marker, undefined);
  });
});
