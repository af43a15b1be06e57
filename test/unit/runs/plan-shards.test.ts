import assert from "node:assert/strict";
import { test } from "node:test";
import { planShards } from "../../../src/runs/plan-shards.js";
import { MAX_SHARDS } from "../../../src/report/version.js";

const names = (n: number) => Array.from({ length: n }, (_, i) => `node-${i}`);

test("the shards asked for, never more than nodes or than a matrix holds, every one listed", () => {
  assert.deepEqual(planShards(names(6), 3, 200), { count: 3, shards: [1, 2, 3], nodes: 6 });
  assert.deepEqual(planShards(names(2), 5, 200), { count: 2, shards: [1, 2], nodes: 2 });
  assert.deepEqual(planShards([], 3, 200), { count: 1, shards: [1], nodes: 0 });
  assert.equal(planShards(names(100_000), 1000, 200).count, MAX_SHARDS);
});

test("0 chooses from the fleet's size", () => {
  assert.equal(planShards(names(150), 0, 200).count, 1);
  assert.equal(planShards(names(1001), 0, 200).count, 6);
});

test("never more shards than a first hop's ssh.max_sessions: each shard gets at least one", () => {
  assert.equal(planShards(names(100), 6, 200, 4).count, 4);
  assert.equal(planShards(names(2001), 0, 200, 8).count, 8);
  assert.equal(planShards(names(100), 3, 200, 4).count, 3);
});
