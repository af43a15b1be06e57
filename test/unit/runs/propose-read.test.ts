// The report propose plans from, dated from the audit history as it is read: the same entries as
// dating the whole report after reading it, whether `startedAt` comes before the nodes (as every
// report Quartermaster writes has it) or after them (a report written by hand).
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { annotateNode, emptyHistory, type ReadHistory } from "../../../src/report/history.js";
import { readDated, reportSource } from "../../../src/runs/propose.js";
import { loadFleetReport } from "../../support/reports.js";

test("a report is dated from the history as it is read, startedAt before or after the nodes", async () => {
  const report = loadFleetReport();
  const drifted = report.nodes.find((n) => n.drift.length > 0)!;
  const history: ReadHistory = { ...emptyHistory(), dropped: [] };
  history.drift.set(drifted.drift[0]!.fingerprint, {
    node: drifted.name,
    domain: drifted.drift[0]!.domain,
    firstSeen: "2026-01-02T03:04:05.000Z",
  });
  const dated = report.nodes.map((node) => annotateNode(node, history, report.startedAt));
  assert.ok(dated.some((n) => n.drift.some((d) => d.firstSeen === "2026-01-02T03:04:05.000Z")));
  const work = await mkdtemp(path.join(tmpdir(), "qm-propose-read-"));
  try {
    const { nodes, ...head } = report;
    for (const [name, text] of [
      ["head-first.json", JSON.stringify({ ...head, nodes })],
      ["nodes-first.json", JSON.stringify({ nodes, ...head })],
    ] as const) {
      const file = path.join(work, name);
      await writeFile(file, text);
      const read = await readDated(reportSource(file, undefined), history);
      assert.deepEqual(read.report, { ...report, nodes: dated }, name);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});
