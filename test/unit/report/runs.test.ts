import assert from "node:assert/strict";
import { test } from "node:test";
import {
  appendRun,
  emptyRuns,
  MAX_RUNS,
  parseRuns,
  replayRuns,
  serializeRuns,
} from "../../../src/report/runs.js";
import type { NodeResult } from "../../../src/report/schema.js";

const DAY = 86_400_000;
const at = (hours: number) =>
  new Date(Date.parse("2026-01-01T00:00:00Z") + hours * 3_600_000).toISOString();
const drift = (fingerprint: string) => ({
  domain: "sysctl" as const,
  key: "net.ipv4.ip_forward",
  declared: 0,
  live: 1,
  severity: "medium" as const,
  fingerprint,
  source: { file: "nodes/a.yaml", line: 1 },
  remediation: "",
  onDrift: "accept" as const,
  path: [],
});
const node = (name: string, status: NodeResult["status"], fps: string[] = []): NodeResult => ({
  name,
  host: name,
  status,
  durationMs: 1,
  drift: fps.map(drift),
});
const run = (hours: number, nodes: NodeResult[]) => ({
  startedAt: at(hours),
  manifestRevision: null,
  nodes,
});

test("drift that appears and vanishes between decisions is kept, resolved only where the run looked", () => {
  let h = emptyRuns();
  h = appendRun(h, run(0, [node("a", "clean"), node("b", "clean")]));
  h = appendRun(h, run(1, [node("a", "drift", ["00000000000000f1"]), node("b", "clean")]));
  h = appendRun(h, run(2, [node("a", "unreachable"), node("b", "clean")]));
  assert.equal(
    h.drift.get("00000000000000f1")!.resolved,
    undefined,
    "a dark node resolves nothing",
  );
  h = appendRun(h, run(3, [node("a", "clean"), node("b", "clean")]));
  assert.equal(h.drift.get("00000000000000f1")!.resolved, at(3));
  // Runs after the first carry only the nodes that changed.
  assert.deepEqual(Object.keys(h.runs[3]!.nodes), ["a"]);
  const last = [...replayRuns(h.runs)].at(-1)!.nodes;
  assert.deepEqual(
    [...last],
    [
      ["a", ["clean"]],
      ["b", ["clean"]],
    ],
  );
  // The same run appended again counts once; the text reads back the same.
  assert.equal(appendRun(h, run(3, [node("a", "clean"), node("b", "clean")])).runs.length, 4);
  const text = serializeRuns(h);
  assert.equal(serializeRuns(parseRuns(text) as typeof h), text);
});

test("bounded: at most MAX_RUNS runs and 90 days, the oldest folded into the first kept", () => {
  let h = emptyRuns();
  h = appendRun(h, run(0, [node("a", "drift", ["00000000000000f2"]), node("b", "clean")]));
  for (let i = 1; i <= MAX_RUNS + 5; i++)
    h = appendRun(h, run(i, [node("a", "clean"), node("b", i % 2 ? "clean" : "unreachable")]));
  assert.equal(h.runs.length, MAX_RUNS);
  assert.deepEqual(
    Object.keys(h.runs[0]!.nodes).sort(),
    ["a", "b"],
    "the first kept run holds every node",
  );
  assert.equal(
    h.drift.has("00000000000000f2"),
    false,
    "drift only dropped runs saw goes with them",
  );
  h = appendRun(h, run(MAX_RUNS * 2 + 91 * 24, [node("a", "clean")]));
  assert.equal(h.runs.length, 1, "nothing older than 90 days");
  assert.ok(Date.parse(h.runs[0]!.at) - Date.parse(at(0)) > 90 * DAY);
});

test("a malformed run or drift entry costs only that entry", () => {
  const h = appendRun(emptyRuns(), run(0, [node("a", "drift", ["00000000000000f3"])]));
  const json = JSON.parse(serializeRuns(h));
  json.runs.push({ at: "yesterday" });
  json.drift["bad"] = { node: 1 };
  const parsed = parseRuns(JSON.stringify(json));
  assert.ok(typeof parsed !== "string");
  assert.equal(parsed.runs.length, 1);
  assert.deepEqual([...parsed.drift.keys()], ["00000000000000f3"]);
  assert.match(parseRuns("{") as string, /not JSON/);
});

test("a history over its bound is written trimmed, never refused: resolved drift first, then the oldest runs", () => {
  // A user opening 40 new ports every run: 40 new fingerprints a run, the last run's resolved.
  let h = emptyRuns();
  const fp = (r: number, i: number) => (r * 100 + i).toString(16).padStart(16, "0");
  for (let r = 0; r < 120; r++)
    h = appendRun(
      h,
      run(r, [
        node(
          "a",
          "drift",
          Array.from({ length: 40 }, (_, i) => fp(r, i)),
        ),
        node("b", "clean"),
      ]),
    );
  const whole = serializeRuns(h, Number.MAX_SAFE_INTEGER);
  const max = 100_000;
  assert.ok(whole.length > 4 * max, `${whole.length}`);
  const text = serializeRuns(h, max);
  assert.ok(text.length <= max, `${text.length}`);
  const read = parseRuns(text);
  assert.ok(typeof read !== "string", String(read));
  // The newest run and the drift it found stand; the nodes replay as the newest run left them.
  assert.equal(read.runs.at(-1)!.at, at(119));
  for (let i = 0; i < 40; i++) assert.equal(read.drift.get(fp(119, i))?.resolved, undefined);
  const last = [...replayRuns(read.runs)].at(-1)!.nodes;
  assert.deepEqual(last.get("b"), ["clean"]);
  assert.equal(last.get("a")!.length, 41);
  // Under the bound: written whole.
  assert.equal(serializeRuns(read, max), serializeRuns(read, Number.MAX_SAFE_INTEGER));
});
