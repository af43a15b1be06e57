import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ReportMergeError } from "../../../src/errors.js";
import { mergeReports, type ShardReport } from "../../../src/report/merge-reports.js";
import { Report, type NodeResult } from "../../../src/report/schema.js";
import { summarize } from "../../../src/report/tally.js";

const REVISION = "0123456789abcdef0123456789abcdef01234567";
const result = (name: string, status: NodeResult["status"] = "clean"): NodeResult => ({
  name,
  host: name,
  status,
  durationMs: 10,
  drift: [],
});

const shard = (
  index: number,
  count: number,
  names: string[],
  overrides: Partial<Report> = {},
): ShardReport => {
  const nodes = names.map((n) => result(n, n.startsWith("down") ? "unreachable" : "clean"));
  return {
    file: `shard-${index}-of-${count}.json`,
    report: {
      schemaVersion: 1,
      startedAt: `2026-03-02T06:0${index}:00.000Z`,
      finishedAt: `2026-03-02T06:1${index}:00.000Z`,
      manifestRevision: REVISION,
      shard: { index, count },
      nodes,
      summary: summarize(nodes),
      ...overrides,
    },
  };
};

const refusal = (shards: ShardReport[], pattern: RegExp) =>
  assert.throws(
    () => mergeReports(shards),
    (e: Error) => e instanceof ReportMergeError && pattern.test(e.message),
  );

describe("merging shard reports", () => {
  it("joins every shard: nodes in name order, summary recomputed, times spanning all shards, no shard", () => {
    const merged = mergeReports([
      shard(2, 3, ["db-01", "down-01"]),
      shard(1, 3, ["web-02", "web-01"]),
      shard(3, 3, []),
    ]);
    assert.deepEqual(
      merged.nodes.map((n) => n.name),
      ["db-01", "down-01", "web-01", "web-02"],
    );
    assert.deepEqual(merged.summary, {
      nodes: 4,
      clean: 3,
      drifted: 0,
      unreachable: 1,
      errors: 0,
      maintenance: 0,
      driftItems: 0,
      acknowledgedItems: 0,
      latentItems: 0,
    });
    assert.equal(merged.startedAt, "2026-03-02T06:01:00.000Z");
    assert.equal(merged.finishedAt, "2026-03-02T06:13:00.000Z");
    assert.equal(merged.manifestRevision, REVISION);
    assert.equal("shard" in merged, false);
    Report.parse(merged);
  });

  it("refuses a shard given twice, naming both files", () => {
    const one = shard(1, 2, ["a"]);
    refusal(
      [one, { ...one, file: "copy.json" }, shard(2, 2, ["b"])],
      /shard-1-of-2\.json and copy\.json both cover shard 1\/2/,
    );
  });

  it("refuses a node present in two shards", () => {
    refusal(
      [shard(1, 2, ["a", "b"]), shard(2, 2, ["b"])],
      /node b appears in both shard-1-of-2\.json and shard-2-of-2\.json/,
    );
  });

  it("refuses missing shards, naming them", () => {
    refusal([shard(1, 4, ["a"]), shard(3, 4, ["b"])], /shards 2\/4, 4\/4 missing/);
  });

  it("refuses shards of different splits", () => {
    refusal(
      [shard(1, 2, ["a"]), shard(2, 3, ["b"])],
      /split the fleet differently: shard-1-of-2\.json is one of 2 shards, shard-2-of-3\.json one of 3/,
    );
  });

  it("refuses shards of different manifest revisions", () => {
    refusal(
      [shard(1, 2, ["a"]), shard(2, 2, ["b"], { manifestRevision: null })],
      /different manifest revisions: .*shard-2-of-2\.json at no revision/,
    );
  });

  it("refuses shards that audited different domains, and keeps the categories of matching ones", () => {
    refusal(
      [shard(1, 2, ["a"], { categories: ["sysctl"] }), shard(2, 2, ["b"])],
      /audited different domains: .*sysctl, .*shard-2-of-2\.json all domains/,
    );
    assert.deepEqual(
      mergeReports([
        shard(1, 2, ["a"], { categories: ["sysctl"] }),
        shard(2, 2, ["b"], { categories: ["sysctl"] }),
      ]).categories,
      ["sysctl"],
    );
  });

  it("refuses a report written without --shard, and an empty list", () => {
    const { shard: _, ...whole } = shard(1, 1, ["a"]).report;
    refusal([{ file: "whole.json", report: whole }], /whole\.json: not a shard report/);
    refusal([], /no shard reports/);
  });
});
