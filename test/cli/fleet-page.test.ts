// The fleet page through the CLI (`report --format html --history FILE`), opened in real headless
// Chromium with no network: charts present, numbers equal to the history's, host text shown as text.
import assert from "node:assert/strict";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fleetFigures } from "../../src/report/fleet-page/figures.js";
import { appendRun, emptyRuns, serializeRuns } from "../../src/report/runs.js";
import type { NodeResult, Report } from "../../src/report/schema.js";
import { summarize } from "../../src/report/tally.js";
import { dumpDom, nodeSection, screenshot } from "../support/chromium.js";
import { runCli } from "../support/cli.js";

const HOSTILE = `evil"'</svg><script>document.title="owned"</script>`;
const DAY = 86_400_000;

const item = (fingerprint: string, key: string) => ({
  domain: "sysctl" as const,
  key,
  declared: 0,
  live: 1,
  severity: "medium" as const,
  fingerprint,
  source: { file: "nodes/x.yaml", line: 1 },
  remediation: "fix",
  onDrift: "accept" as const,
  path: ["system"],
  cause: { kind: "package" as const, at: "2026-11-01T09:00:00Z", by: HOSTILE, evidence: HOSTILE },
});

function report(day: number, nodes: NodeResult[]): Report {
  const at = new Date(Date.parse("2026-11-01T10:00:00Z") + day * DAY).toISOString();
  return {
    schemaVersion: 1,
    startedAt: at,
    finishedAt: at,
    manifestRevision: null,
    nodes,
    summary: summarize(nodes),
  };
}
const node = (name: string, status: NodeResult["status"], drift: NodeResult["drift"] = []) => ({
  name,
  host: name,
  status,
  durationMs: 1,
  drift,
});

test("the page in headless Chromium: charts, the history's numbers, host text as text, a screenshot", async () => {
  const work = await mkdtemp(path.join(tmpdir(), "qm-fleet-page-"));
  const owners = new Map([["web-01", ["acme/web"]]]);
  let history = emptyRuns();
  const runs = [
    [node("web-01", "drift", [item("00000000000000a1", HOSTILE)]), node("db-01", "clean")],
    [node("web-01", "drift", [item("00000000000000a1", HOSTILE)]), node("db-01", "unreachable")],
    [node("web-01", "clean"), node("db-01", "clean")],
    [
      node("web-01", "drift", [item("00000000000000b2", "net.core.somaxconn")]),
      node("db-01", "clean"),
    ],
  ];
  runs.forEach((nodes, day) => (history = appendRun(history, report(day * 3, nodes), { owners })));
  const historyFile = path.join(work, "run-history.json");
  await writeFile(historyFile, serializeRuns(history));
  const last = report(9, runs.at(-1)!);
  const reportFile = path.join(work, "report.json");
  await writeFile(reportFile, JSON.stringify(last));
  const page = path.join(work, "fleet.html");
  const made = await runCli([
    "report",
    "--report",
    reportFile,
    "--format",
    "html",
    "--history",
    historyFile,
    "--out",
    page,
  ]);
  assert.equal(made.exitCode, 0, made.stderr);
  const source = await readFile(page, "utf8");
  assert.doesNotMatch(
    source,
    /<script|\bsrc=|https?:\/\/(?!www\.w3\.org\/2000\/svg)/,
    "nothing to run or fetch",
  );
  assert.doesNotMatch(source, /^\s*::|##\[/m);

  const dom = await dumpDom(page);
  const figures = fleetFigures(history);
  assert.equal([...dom.matchAll(/<g class="run" /g)].length, 4, "one bar per run");
  for (const run of figures.runs)
    assert.match(
      dom,
      new RegExp(
        `data-at="${run.at}" data-clean="${run.counts.clean}" data-drift="${run.counts.drift}" data-unreachable="${run.counts.unreachable}"`,
      ),
    );
  assert.match(dom, /<svg id="age-chart"/);
  const web = figures.owners.find((o) => o.owner === "acme/web")!;
  assert.equal(web.open, 1);
  // a1 resolved after 6 days: within 7 and 30, not 1; b2 open for 0 days: no outcome yet.
  assert.deepEqual(
    web.within.map((w) => [w.days, w.resolved, w.of]),
    [
      [1, 0, 1],
      [7, 1, 1],
      [30, 1, 1],
    ],
  );
  for (const w of web.within)
    assert.match(
      dom,
      new RegExp(`data-within="${w.days}" data-resolved="${w.resolved}" data-of="${w.of}"`),
    );
  assert.match(dom, /data-node="web-01" data-episodes="2"/, "web-01 turned to drift twice");
  // Each node's timeline: its status changes, then a row per drift with its resolution.
  const section = (name: string) => nodeSection(dom, name);
  assert.match(
    section("db-01"),
    /unreachable 2026-11-04 10:00:00 → <i class="s-clean"><\/i>clean 2026-11-07 10:00:00/,
  );
  assert.match(
    section("web-01"),
    /<tr data-fp="00000000000000a1"><td>sysctl <code>[^<]*<\/code> \(medium\)<\/td><td>2026-11-01 10:00:00<\/td><td>2026-11-04 10:00:00<\/td><td>package run by <code>[^<]*<\/code> at 2026-11-01 09:00:00: <code>[^<]*<\/code><\/td><td><\/td><td><\/td><td>2026-11-07 10:00:00 \(after 6 days\)<\/td><\/tr>/,
  );
  assert.match(section("web-01"), /<tr data-fp="00000000000000b2">.*<td>open<\/td><\/tr>/);
  // Hostile text arrives as text: no element made from it, the title untouched.
  assert.doesNotMatch(dom, /<script/);
  assert.match(dom, /&lt;\/svg&gt;&lt;script&gt;document\.title="owned"&lt;\/script&gt;/);
  assert.match(dom, /<title>Quartermaster fleet/);

  const shot = path.join(work, "fleet.png");
  await screenshot(page, shot);
  assert.equal((await readFile(shot)).subarray(1, 4).toString(), "PNG");
  process.stdout.write(`# fleet page screenshot: ${shot}\n`);
});
