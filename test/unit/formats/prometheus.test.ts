import { test } from "node:test";
import assert from "node:assert/strict";
import { FORMATS } from "../../../src/report/formats/index.js";
import { renderPrometheus } from "../../../src/report/formats/prometheus.js";
import { NODE_STATUSES } from "../../../src/report/schema.js";
import { parseExposition, sampleValue } from "../../support/prometheus.js";
import { loadFleetReport } from "../../support/reports.js";

const options = { color: false, verbose: false };
const render = () => renderPrometheus(loadFleetReport(), options);

test("prometheus is registered as a format", async () => {
  assert.equal((await FORMATS.prometheus()).render, renderPrometheus);
});

test("the output parses as the exposition format, every family a gauge with help, none with timestamps", () => {
  const families = parseExposition(render());
  assert.deepEqual(
    families.map((f) => f.name),
    [
      "quartermaster_acknowledged_drift_items",
      "quartermaster_domain_unknown",
      "quartermaster_drift_items",
      "quartermaster_last_audit_timestamp_seconds",
      "quartermaster_node_audit_duration_seconds",
      "quartermaster_node_status",
      "quartermaster_nodes",
    ],
  );
  for (const f of families) {
    assert.equal(f.type, "gauge", f.name);
    assert.ok(f.help, f.name);
    assert.ok(
      f.samples.every((s) => s.timestamp === undefined),
      f.name,
    );
  }
});

test("exactly one HELP and one TYPE line per family", () => {
  const out = render();
  for (const keyword of ["HELP", "TYPE"]) {
    const names = out
      .split("\n")
      .filter((l) => l.startsWith(`# ${keyword} `))
      .map((l) => l.split(" ")[2]);
    assert.equal(new Set(names).size, names.length, keyword);
    assert.equal(names.length, 7, keyword);
  }
});

test("drift items are counted per node, domain and severity; acknowledged ones separately", () => {
  const families = parseExposition(render());
  assert.equal(
    sampleValue(families, "quartermaster_drift_items", {
      node: "web-01",
      domain: "files",
      severity: "high",
    }),
    2,
  );
  assert.equal(
    sampleValue(families, "quartermaster_drift_items", {
      node: "web-01",
      domain: "routes",
      severity: "critical",
    }),
    1,
  );
  assert.equal(
    sampleValue(families, "quartermaster_drift_items", {
      node: "db-01",
      domain: "kernel",
      severity: "high",
    }),
    undefined,
  );
  assert.equal(
    sampleValue(families, "quartermaster_acknowledged_drift_items", {
      node: "db-01",
      domain: "kernel",
      severity: "high",
    }),
    1,
  );
  const total = families
    .filter((f) => f.name.endsWith("drift_items"))
    .flatMap((f) => f.samples)
    .reduce((sum, s) => sum + s.value, 0);
  const { summary } = loadFleetReport();
  assert.equal(total, summary.driftItems + summary.acknowledgedItems);
});

test("node status is a 0/1 state set over every status", () => {
  const families = parseExposition(render());
  const report = loadFleetReport();
  for (const node of report.nodes) {
    for (const status of NODE_STATUSES) {
      assert.equal(
        sampleValue(families, "quartermaster_node_status", { node: node.name, status }),
        status === node.status ? 1 : 0,
      );
    }
  }
});

test("durations in seconds, the finish time, nodes per status and unknown domains", () => {
  const families = parseExposition(render());
  assert.equal(
    sampleValue(families, "quartermaster_node_audit_duration_seconds", { node: "worker-01" }),
    0.412,
  );
  assert.equal(
    sampleValue(families, "quartermaster_last_audit_timestamp_seconds"),
    Date.UTC(2026, 2, 2, 6, 1, 12, 345) / 1000,
  );
  assert.deepEqual(
    NODE_STATUSES.map((status) => sampleValue(families, "quartermaster_nodes", { status })),
    [3, 3, 1, 1, 1],
  );
  assert.equal(
    sampleValue(families, "quartermaster_domain_unknown", { node: "worker-03", domain: "systemd" }),
    1,
  );
});

test("label values with backslashes, quotes and newlines are escaped and round-trip", () => {
  const report = loadFleetReport();
  const odd = 'web "canary"\\blue\nsecond';
  report.nodes[0]!.name = odd;
  const out = renderPrometheus(report, options);
  assert.ok(out.includes(String.raw`node="web \"canary\"\\blue\nsecond"`));
  assert.equal(
    sampleValue(parseExposition(out), "quartermaster_node_audit_duration_seconds", { node: odd }),
    2.31,
  );
});

test("output is sorted and does not depend on the order of nodes or items in the report", () => {
  const report = loadFleetReport();
  report.nodes.reverse();
  for (const node of report.nodes) node.drift.reverse();
  assert.equal(renderPrometheus(report, options), render());
  const samples = render()
    .split("\n")
    .filter((l) => l.startsWith("quartermaster_node_status{"));
  assert.deepEqual(samples, [...samples].sort());
});

test("a domain unknown for two reasons is still 1, as the help says", () => {
  const report = loadFleetReport();
  report.nodes[0]!.unknown = [
    { domain: "systemd", reason: "a" },
    { domain: "systemd", reason: "b" },
  ];
  const families = parseExposition(renderPrometheus(report, options));
  assert.equal(
    sampleValue(families, "quartermaster_domain_unknown", {
      node: report.nodes[0]!.name,
      domain: "systemd",
    }),
    1,
  );
});

test("the last successful fleet audit time is there only after a run that reached every node", () => {
  const report = loadFleetReport();
  const gauge = "quartermaster_last_successful_fleet_audit_timestamp_seconds";
  const dark = parseExposition(renderPrometheus(report, options));
  assert.ok(report.nodes.some((n) => n.status === "unreachable"));
  assert.equal(
    dark.find((f) => f.name === gauge),
    undefined,
  );
  const reached = {
    ...report,
    nodes: report.nodes.filter((n) => n.status !== "unreachable" && n.status !== "error"),
  };
  const families = parseExposition(renderPrometheus(reached, options));
  assert.equal(sampleValue(families, gauge, {}), Date.parse(report.finishedAt) / 1000);
});
