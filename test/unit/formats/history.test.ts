// What the audit history adds to each format: a drift's first sighting, a dark node's since and runs.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Report } from "../../../src/report/schema.js";
import { parseExposition } from "../../support/prometheus.js";
import { renderers } from "../../support/formats.js";
import { loadFleetReport } from "../../support/reports.js";

const FORMATS = await renderers();

const options = { color: false, verbose: false };
const SEEN = "2026-11-30T08:00:00.000Z";
const DARK = "2026-11-29T08:00:00.000Z";

/** The fleet fixture as an audit with history writes it: every drift first seen at SEEN. */
function withHistory(): Report {
  const report = loadFleetReport();
  const dark = report.nodes.find((n) => n.status === "unreachable")!;
  return {
    ...report,
    nodes: report.nodes.map((n) => ({
      ...n,
      drift: n.drift.map((d) => ({ ...d, firstSeen: SEEN })),
      ...(n === dark && { unaudited: { since: DARK, runs: 3 } }),
    })),
  };
}

test("text says since when each drift exists and each dark node has been unaudited", () => {
  const report = withHistory();
  const text = FORMATS.text(report, options);
  assert.match(text, new RegExp(`^    drifting since ${SEEN}$`, "m"));
  assert.match(text, new RegExp(`: unreachable, .*unaudited since ${DARK}, 3 runs`));
  assert.doesNotMatch(FORMATS.text(loadFleetReport(), options), /drifting since|unaudited since/);
});

test("Markdown has a drifting-since column only when the audit knew the history", () => {
  const markdown = FORMATS.markdown(withHistory(), options);
  assert.match(markdown, /\| remediation \| drifting since \|/);
  assert.match(markdown, new RegExp(`\\| ${SEEN} \\|$`, "m"));
  assert.match(markdown, new RegExp(`\\| unreachable, unaudited since ${DARK}, 3 runs \\|`));
  assert.doesNotMatch(FORMATS.markdown(loadFleetReport(), options), /drifting since/);
});

test("Prometheus gauges a drift's age and a dark node's time without an audit, in seconds", () => {
  const report = withHistory();
  const samples = parseExposition(FORMATS.prometheus(report, options)).flatMap((f) => f.samples);
  const finished = Date.parse(report.finishedAt);
  const ages = samples.filter((s) => s.name === "quartermaster_drift_age_seconds");
  assert.equal(ages.length, report.nodes.flatMap((n) => n.drift).length);
  for (const age of ages) assert.equal(age.value, (finished - Date.parse(SEEN)) / 1000);
  const dark = samples.filter((s) => s.name === "quartermaster_node_unaudited_seconds");
  assert.equal(dark.length, 1);
  assert.equal(dark[0]!.value, (finished - Date.parse(DARK)) / 1000);
});
