import { test } from "node:test";
import assert from "node:assert/strict";
import { NODE_STATUSES } from "../../../src/report/schema.js";
import { summarize } from "../../../src/report/tally.js";
import { loadFleetReport } from "../../support/reports.js";

// The format tests lean on this fixture covering every case; these checks keep it honest.
test("the fleet fixture covers every status and several domains and its summary adds up", () => {
  const report = loadFleetReport();
  assert.deepEqual(report.summary, summarize(report.nodes));
  assert.deepEqual(new Set(report.nodes.map((n) => n.status)), new Set(NODE_STATUSES));
  // Formats treat every domain alike (nothing under src/report names one): several are enough, so
  // a new domain needs no item here.
  const domains = new Set(report.nodes.flatMap((n) => n.drift.map((d) => d.domain)));
  assert.ok(domains.size > 1, "drift in several domains");
  const items = report.nodes.flatMap((n) => n.drift);
  assert.ok(
    items.some((d) => d.acknowledged),
    "an acknowledged item",
  );
  assert.ok(
    items.some((d) => d.domain === "files" && d.diff),
    "a file item with a diff",
  );
  assert.ok(
    items.some((d) => d.domain === "files" && !d.diff && d.detail?.includes("secret")),
    "a secret file",
  );
  assert.ok(
    report.nodes.some((n) => n.unknown?.length),
    "unknown domains",
  );
});
