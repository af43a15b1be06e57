// The unaudited budget and the audit history through the CLI, on hand-made shard reports: exit bit
// 8, "unaudited since" from a history file, and every bad input as a usage error naming it.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { Report, type NodeResult } from "../../src/report/schema.js";
import { summarize } from "../../src/report/tally.js";
import { runCli } from "../support/cli.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();
const STARTED = "2026-12-01T10:00:00.000Z";
const LAST_SEEN = "2026-11-28T10:00:00.000Z";

const node = (name: string, status: NodeResult["status"]): NodeResult => ({
  name,
  host: name,
  status,
  durationMs: 5,
  drift: [],
  ...(status === "unreachable" && { error: "ssh: connect to host: Connection refused" }),
});

function shard(index: number, nodes: NodeResult[], budget?: Report["unauditedBudget"]): string {
  const report: Report = {
    schemaVersion: 1,
    startedAt: STARTED,
    finishedAt: STARTED,
    manifestRevision: null,
    ...(budget && { unauditedBudget: budget }),
    shard: { index, count: 2 },
    nodes,
    summary: summarize(nodes),
  };
  return JSON.stringify(report);
}

/** The state branch's history: web-03 last audited three days ago, dark for `missed` runs since. */
const history = (missed: number) =>
  JSON.stringify({
    version: 1,
    nodes: { "web-03": { lastAudited: LAST_SEEN, unauditedRuns: missed } },
    drift: {},
  });

async function shards(budget?: Report["unauditedBudget"], missed = 0) {
  const dir = await tree({
    "shard-1.json": shard(1, [node("web-01", "clean"), node("web-02", "clean")], budget),
    "shard-2.json": shard(2, [node("web-03", "unreachable")], budget),
    "history.json": history(missed),
  });
  return {
    dir,
    files: [path.join(dir, "shard-1.json"), path.join(dir, "shard-2.json")],
    history: path.join(dir, "history.json"),
  };
}

describe("unaudited budget through the CLI", () => {
  it("by default a node may miss one run: bit 4 only; missing a second in a row sets bit 8, named with its last audit", async () => {
    const first = await shards();
    const once = await runCli(["merge-reports", "--state", first.history, ...first.files]);
    // Dark since three days, but this is the first run it missed: the grace of one run.
    assert.equal(once.exitCode, 4, once.stderr);
    const { dir, files, history: state } = await shards(undefined, 1);
    const out = path.join(dir, "merged.json");
    const result = await runCli(["merge-reports", "--state", state, "--out", out, ...files]);
    assert.equal(result.exitCode, 4 + 8, result.stderr);
    const merged = Report.parse(JSON.parse(await readFile(out, "utf8")));
    assert.deepEqual(merged.nodes.find((n) => n.name === "web-03")?.unaudited, {
      since: LAST_SEEN,
      runs: 2,
    });
    assert.deepEqual(merged.unauditedBudget, {
      over: [
        `1 node not audited in more than one run in a row (the grace of one missed run, max_unaudited_for being unset): web-03 (not audited since ${LAST_SEEN}, 2 runs)`,
      ],
    });
    const text = await runCli(["report", "--report", out, "--format", "text"]);
    assert.match(
      text.stdout,
      /web-03: unreachable, unaudited since 2026-11-28T10:00:00.000Z, 2 runs/,
    );
    assert.match(text.stdout, /more nodes not audited than allowed: 1 node not audited in more/);
    const markdown = await runCli(["report", "--report", out, "--format", "markdown"]);
    assert.match(
      markdown.stdout,
      /\| unreachable, unaudited since 2026-11-28T10:00:00.000Z, 2 runs \|/,
    );
  });

  it("max_unaudited_for set: a node dark for longer sets bit 8 on its first missed run", async () => {
    const { files, history: state } = await shards({ maxUnauditedFor: "24h" });
    const result = await runCli(["merge-reports", "--state", state, "--format", "json", ...files]);
    assert.equal(result.exitCode, 4 + 8, result.stderr);
    assert.deepEqual(Report.parse(JSON.parse(result.stdout)).unauditedBudget?.over, [
      `1 node not audited for longer than max_unaudited_for 24h: web-03 (not audited since ${LAST_SEEN}, 1 run)`,
    ]);
  });

  it("without history or limits, a dark node is bit 4 only; a count limit the shards recorded still holds", async () => {
    const plain = await shards();
    assert.equal((await runCli(["merge-reports", ...plain.files])).exitCode, 4);
    const recorded = await shards({ maxUnaudited: 0, maxUnauditedFor: "24h" });
    const result = await runCli(["merge-reports", "--format", "json", ...recorded.files]);
    assert.equal(result.exitCode, 4 + 8, result.stderr);
    // The flag wins over what the shards recorded.
    const flagged = await runCli(["merge-reports", "--max-unaudited", "34%", ...recorded.files]);
    assert.equal(flagged.exitCode, 4, flagged.stderr);
  });

  it("refuses a bad limit, a missing or malformed history, and two history sources", async () => {
    const { dir, files, history: state } = await shards();
    const cases: [string[], RegExp][] = [
      [["--max-unaudited", "ten"], /--max-unaudited takes a number of nodes or a share/],
      [["--state", path.join(dir, "nope.json")], /nope\.json: cannot read the audit history/],
      [["--state", files[0]!], /shard-1\.json: not a Quartermaster audit history/],
      [["--state", state, "--state-from-repo"], /two sources of one history/],
    ];
    for (const [flags, message] of cases) {
      const result = await runCli(["merge-reports", ...flags, ...files]);
      assert.equal(result.exitCode, 2, `${flags.join(" ")}: ${result.stderr}`);
      assert.match(result.stderr, message);
      assert.doesNotMatch(result.stderr, /internal error|\n\s+at /);
    }
  });

  it("validate names a bad audit.max_unaudited or max_unaudited_for at its line", async () => {
    const dir = await tree({
      "fleet.yaml": "audit:\n  max_unaudited: ten\n  max_unaudited_for: 1 day\n",
      "nodes/web-01.yaml": "{}\n",
    });
    const result = await runCli(["validate", "--manifests", dir], { cwd: dir });
    assert.equal(result.exitCode, 2);
    assert.match(result.stderr, /^fleet\.yaml:2:\d+: .*max_unaudited.*"10%"/m);
    assert.match(result.stderr, /^fleet\.yaml:3:\d+: .*max_unaudited_for.*"24h"/m);
  });
});
