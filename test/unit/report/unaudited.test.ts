import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { durationMs, overUnauditedBudget, unauditedLimit } from "../../../src/report/unaudited.js";
import type { NodeResult } from "../../../src/report/schema.js";

const T1 = "2026-12-01T10:00:00.000Z";
const T2 = "2026-12-02T11:00:00.000Z";
const node = (name: string, status: NodeResult["status"], since?: string) => ({
  name,
  status,
  ...(since && { unaudited: { since, runs: 2 } }),
});
const DAY = { forMs: 86_400_000, forName: "max_unaudited_for 24h" };

describe("unaudited budget", () => {
  it("reads limits as nodes or a share, and refuses anything else", () => {
    assert.deepEqual(unauditedLimit("0"), { nodes: 0 });
    assert.deepEqual(unauditedLimit(3), { nodes: 3 });
    assert.deepEqual(unauditedLimit("12.5%"), { percent: 12.5 });
    for (const bad of ["-1", "ten", "101%", "5 %", "", "1e3"])
      assert.equal(unauditedLimit(bad), undefined, bad);
  });

  it("reads durations largest unit first", () => {
    assert.equal(durationMs("24h"), 86_400_000);
    assert.equal(durationMs("1d12h"), 129_600_000);
    assert.equal(durationMs("90m"), 5_400_000);
    for (const bad of ["", "h", "12h1d", "1.5h", "24"]) assert.equal(durationMs(bad), undefined);
  });

  it("counts nodes not audited (unreachable, error, maintenance) against the limit", () => {
    const nodes = [node("a", "clean"), node("b", "unreachable"), node("c", "maintenance")];
    assert.deepEqual(overUnauditedBudget(nodes, { ...DAY, limit: { nodes: 2 } }, T1), []);
    assert.deepEqual(
      overUnauditedBudget(
        nodes,
        { ...DAY, limit: { nodes: 1 }, limitName: "--max-unaudited 1" },
        T1,
      ),
      ["2 of 3 nodes not audited, more than --max-unaudited 1 allows (1)"],
    );
    // 50% of 3 nodes is 1 node: 2 are too many.
    assert.equal(overUnauditedBudget(nodes, { ...DAY, limit: { percent: 50 } }, T1).length, 1);
  });

  it("flags a node dark for longer than max_unaudited_for, not one dark for less", () => {
    const reasons = overUnauditedBudget([node("web-03", "unreachable", T1)], DAY, T2);
    assert.deepEqual(reasons, [
      `1 node not audited for longer than max_unaudited_for 24h: web-03 (not audited since ${T1}, 2 runs)`,
    ]);
    assert.deepEqual(overUnauditedBudget([node("web-03", "unreachable", T1)], DAY, T1), []);
  });

  it("names the first ten overdue nodes and counts the rest", () => {
    const names = Array.from({ length: 12 }, (_, i) => `web-${String(i).padStart(2, "0")}`);
    const [reason] = overUnauditedBudget(
      names.map((name) => node(name, "unreachable", T1)),
      DAY,
      T2,
    );
    assert.equal(
      reason,
      `12 nodes not audited for longer than max_unaudited_for 24h: ${names
        .slice(0, 10)
        .map((name) => `${name} (not audited since ${T1}, 2 runs)`)
        .join(", ")} and 2 more`,
    );
  });
});
