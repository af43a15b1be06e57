// The run history and the fleet page at scale, on stand-in data: 1,000 nodes x 90 runs must build
// in at most 5 s and stay under 2 MB of HTML; 10,000 nodes x 400 runs gives the state file's size.
// Run: node --import tsx bench/fleet-page.ts
import { renderFleetPage } from "../src/report/fleet-page/page.js";
import { appendRun, emptyRuns, serializeRuns, type RunHistory } from "../src/report/runs.js";
import type { NodeResult, Report } from "../src/report/schema.js";
import { summarize } from "../src/report/tally.js";

const HOUR = 3_600_000;

/** Run `r` of a fleet where about 2% of nodes drift and 1% are dark, changing run by run. */
function standIn(nodes: number, r: number): Report {
  const at = new Date(Date.parse("2026-09-01T00:00:00Z") + r * 6 * HOUR).toISOString();
  const results: NodeResult[] = [];
  for (let i = 0; i < nodes; i++) {
    const name = `node-${String(i).padStart(5, "0")}`;
    const roll = (i * 7919 + r * 104729) % 100;
    const drift = roll < 2;
    const status = drift ? "drift" : roll === 2 ? "unreachable" : "clean";
    results.push({
      name,
      host: name,
      status,
      durationMs: 10,
      drift: drift
        ? [
            {
              domain: "sysctl",
              key: "net.core.somaxconn",
              declared: 4096,
              live: 128,
              severity: "medium",
              fingerprint: (i * 131 + (r % 7)).toString(16).padStart(16, "0"),
              source: { file: `nodes/${name}.yaml`, line: 3 },
              remediation: "",
              onDrift: "accept",
              path: ["system"],
              cause: {
                kind: "package",
                at,
                by: "unattended-upgrades",
                evidence: "procps 2:4.0.2-3",
              },
            },
          ]
        : [],
    });
  }
  return {
    schemaVersion: 1,
    startedAt: at,
    finishedAt: at,
    manifestRevision: null,
    nodes: results,
    summary: summarize(results),
  };
}

function build(nodes: number, runs: number): { history: RunHistory; last: Report } {
  let history = emptyRuns();
  let last = standIn(nodes, 0);
  for (let r = 0; r < runs; r++) history = appendRun(history, (last = standIn(nodes, r)));
  return { history, last };
}

let started = performance.now();
const { history, last } = build(1000, 90);
const page = renderFleetPage(last, history);
const seconds = (performance.now() - started) / 1000;
const pageMb = Buffer.byteLength(page) / 1e6;
const share = (value: number, limit: number) => `${Math.round((value / limit) * 100)}% of ${limit}`;
console.log(
  `1,000 nodes x 90 runs: history and page in ${seconds.toFixed(2)} s (${share(seconds, 5)} s), page ${pageMb.toFixed(2)} MB (${share(pageMb, 2)} MB), run-history.json ${(Buffer.byteLength(serializeRuns(history)) / 1e6).toFixed(2)} MB`,
);

started = performance.now();
const big = build(10_000, 400).history;
const stateMb = Buffer.byteLength(serializeRuns(big)) / 1e6;
console.log(
  `10,000 nodes x 400 runs: run-history.json ${stateMb.toFixed(2)} MB (${share(stateMb, 50)} MB; built in ${((performance.now() - started) / 1000).toFixed(1)} s)`,
);
if (seconds > 5 || pageMb >= 2 || stateMb >= 50) {
  console.error(
    "over budget: at most 5 s and 2 MB for the page, 50 MB (GitHub's warning size) for the state file",
  );
  process.exitCode = 1;
}
