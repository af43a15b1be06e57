import { test } from "node:test";
import assert from "node:assert/strict";
import { driftEvent, Event } from "../../../src/report/events.js";
import { FORMATS } from "../../../src/report/formats/index.js";
import { renderEvents } from "../../../src/report/formats/events.js";
import { loadFleetReport } from "../../support/reports.js";

const options = { color: false, verbose: false };

function parseLines(output: string): Event[] {
  assert.ok(output.endsWith("\n"), "every line ends with a newline");
  return output
    .slice(0, -1)
    .split("\n")
    .map((line) => Event.parse(JSON.parse(line)));
}

test("events is registered as a format", async () => {
  assert.equal((await FORMATS.events()).render, renderEvents);
});

test("every line is one JSON object valid against the Event schema", () => {
  const events = parseLines(renderEvents(loadFleetReport(), options));
  assert.equal(events.length, 12 + 2);
});

test("one drift event per drift item, stamped with the audit's finish time", () => {
  const report = loadFleetReport();
  const drift = parseLines(renderEvents(report, options)).filter((e) => e.event === "drift");
  assert.equal(drift.length, report.summary.driftItems + report.summary.acknowledgedItems);
  assert.ok(drift.every((e) => e.time === "2026-03-02T06:01:12.345Z"));
  const somaxconn = drift.find((e) => e.key === "net.core.somaxconn");
  assert.deepEqual(somaxconn, {
    event: "drift",
    time: "2026-03-02T06:01:12.345Z",
    node: "web-01",
    host: "web-01.example.net",
    domain: "sysctl",
    key: "net.core.somaxconn",
    declared: "4096",
    live: "1024",
    severity: "high",
    fingerprint: "4d5e6f708192a3b4",
    source: { file: "fleet-manifests/groups/web.yaml", line: 12 },
  });
});

test("acknowledged drift is flagged, other drift carries no acknowledged field", () => {
  const drift = parseLines(renderEvents(loadFleetReport(), options)).filter(
    (e) => e.event === "drift",
  );
  assert.deepEqual(
    drift.filter((e) => "acknowledged" in e).map((e) => e.key),
    ["kernel_version"],
  );
});

test("unreachable and failed nodes each give one node_error event; maintenance and clean give none", () => {
  const errors = parseLines(renderEvents(loadFleetReport(), options)).filter(
    (e) => e.event === "node_error",
  );
  assert.deepEqual(
    errors.map((e) => [e.node, e.status, e.error.split("\n")[0]]),
    [
      [
        "db-02",
        "unreachable",
        "ssh: connect to host db-02.example.net port 22: Connection timed out",
      ],
      ["worker-01", "error", "host key verification failed for worker-01.example.net"],
    ],
  );
});

test("a node's control characters and newlines stay inside one JSON line", () => {
  const lines = renderEvents(loadFleetReport(), options).split("\n");
  const motd = lines.find((l) => l.includes('"/etc/motd"'));
  assert.ok(
    motd?.includes(String.raw`"live":"\u001b[31mOWNED\u001b[0m | see ` + "`id`" + String.raw`\n"`),
  );
});

test("the watch mode's event kinds share the schema, and bad events are rejected", () => {
  const base = { time: "2026-03-02T06:05:00Z", node: "web-01", host: "web-01.example.net" };
  Event.parse({ event: "started", ...base, manifestRevision: null });
  Event.parse({ event: "stopped", ...base, reason: "maintenance marker present" });
  Event.parse({
    event: "resolved",
    ...base,
    domain: "files",
    key: "/etc/etc-file",
    severity: "high",
    fingerprint: "0123456789abcdef",
  });
  assert.throws(() => Event.parse({ event: "drifted", ...base }));
  assert.throws(() => Event.parse({ event: "stopped", ...base, time: "yesterday", reason: "x" }));
  const item = loadFleetReport().nodes[0]!.drift[0]!;
  assert.throws(() =>
    Event.parse({
      ...driftEvent({ name: "db-01", host: "db-01" }, item, base.time),
      domain: "cron",
    }),
  );
});
