import assert from "node:assert/strict";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { jsonChunks, renderJson } from "../../../src/report/formats/json.js";
import { renderText, textChunks } from "../../../src/report/formats/text.js";
import type { NodeResult, Report } from "../../../src/report/schema.js";
import { summarize } from "../../../src/report/tally.js";
import { collectReport, EntrySpool } from "../../../src/report/spool.js";
import { largeReport, loadFleetReport } from "../../support/reports.js";

const options = { color: false, verbose: false };

async function text(chunks: AsyncIterable<string>): Promise<string> {
  let all = "";
  for await (const chunk of chunks) all += chunk;
  return all;
}

/** The report as jsonChunks writes it, its nodes arriving one at a time. */
const streamed = (report: Report) => text(jsonChunks({ ...report, nodes: [] }, report.nodes));

// Hostile names and values: newlines, quotes, control and format characters, a lone surrogate,
// and text outside the Basic Multilingual Plane.
const hostile: NodeResult = {
  name: 'we"ird\nnode\u202e\ud800',
  host: "h\u0000st",
  status: "error",
  error: "line one\nline two \u{1f525}\t\\",
  durationMs: 0,
  drift: [],
};

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A spool made under a TMPDIR of its own: the spool directories there, and its removal. */
async function privateSpool() {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "qm-spool-test-"));
  const before = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  try {
    return {
      spool: new EntrySpool(),
      dirs: async () =>
        (await readdir(tmp))
          .filter((name) => name.startsWith("quartermaster-report-"))
          .map((name) => path.join(tmp, name)),
      remove: () => rm(tmp, { recursive: true, force: true }),
    };
  } finally {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
  }
}

describe("the JSON report written piece by piece", () => {
  it("is byte for byte the text renderJson writes, whatever fields the report has", async () => {
    const fleet = loadFleetReport();
    const reports: Report[] = [
      fleet,
      largeReport(40, 300),
      { ...fleet, nodes: [], summary: summarize([]) },
      // Fields after the nodes, as a sharded or --category audit adds them.
      { ...fleet, manifestDirty: true, shard: { index: 2, count: 3 }, categories: ["files"] },
      { ...fleet, nodes: [hostile], summary: summarize([hostile]) },
    ];
    for (const report of reports) assert.equal(await streamed(report), renderJson(report, options));
  });

  it("reads back as the report, each node entry one line of its own", () => {
    const report = { ...largeReport(5, 20), nodes: [...largeReport(5, 20).nodes, hostile] };
    const text = renderJson(report, options);
    assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(report)));
    const lines = text.split("\n").filter((line) => line.startsWith("    {"));
    assert.deepEqual(
      lines.map((line) => JSON.parse(line.replace(/,$/, "")) as unknown),
      JSON.parse(JSON.stringify(report.nodes)),
    );
  });
});

describe("the text report written piece by piece", () => {
  it("is the text renderText writes, verbose or not, in colour or not", async () => {
    const fleet = loadFleetReport();
    const clean = fleet.nodes.filter((n) => n.status === "clean");
    const reports: Report[] = [
      fleet,
      largeReport(40, 300),
      { ...fleet, nodes: [], summary: summarize([]) },
      { ...fleet, nodes: clean.slice(0, 1), summary: summarize(clean.slice(0, 1)) },
      { ...fleet, nodes: [hostile], summary: summarize([hostile]) },
    ];
    for (const report of reports) {
      const nodes = [...report.nodes].sort((a, b) =>
        a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
      );
      for (const options of [
        { color: false, verbose: false },
        { color: true, verbose: false },
        { color: false, verbose: true },
      ])
        assert.equal(
          await text(textChunks({ ...report, nodes: [] }, nodes, options)),
          renderText(report, options),
        );
    }
  });
});

describe("the entry spool", () => {
  it("gives back every entry in node-name order (code units), with the summary and exit facts", async () => {
    const { nodes } = loadFleetReport();
    const entries = [
      ...nodes,
      hostile,
      { ...nodes[0]!, name: "Zeta" },
      { ...nodes[0]!, name: "a" },
    ];
    const spool = new EntrySpool();
    try {
      for (const entry of [...entries].reverse()) spool.add(entry);
      const back = [...spool.entries()];
      const names = entries.map((n) => n.name).sort(byCodeUnits);
      assert.deepEqual(
        back.map((n) => n.name),
        names,
      );
      assert.deepEqual(
        back,
        names.map((name) => entries.find((n) => n.name === name)),
      );
      assert.deepEqual(spool.counts.summary, summarize(entries));
      assert.equal(spool.counts.unauditedNodes, true);
      assert.equal(
        spool.counts.driftFound,
        entries.some((n) => n.drift.some((d) => !d.acknowledged)),
      );
    } finally {
      spool.close();
    }
  });

  it("holds entries larger than its write chunk, and reads them again as often as asked", async () => {
    const [big] = largeReport(1, 3000).nodes;
    const spool = new EntrySpool();
    try {
      spool.add({ ...big!, name: "b" });
      spool.add({ ...big!, name: "a", host: "\u00e9\u{1f525}".repeat(50_000) });
      const head: Report = { ...largeReport(0, 0), nodes: [] };
      for (let i = 0; i < 2; i++) {
        const report = collectReport({ head, spool });
        assert.deepEqual(
          report.nodes.map((n) => [n.name, n.host.length, n.drift.length]),
          [
            ["a", 150_000, 3000],
            ["b", big!.host.length, 3000],
          ],
        );
      }
    } finally {
      spool.close();
    }
  });

  it("has every entry on disk but the last 256 KB when add returns, however fast they come", async () => {
    const { spool, dirs, remove } = await privateSpool();
    try {
      const [node] = largeReport(1, 40).nodes;
      const line = Buffer.byteLength(`${JSON.stringify(node)}\n`);
      // About 8 MB added with no turn of the event loop in between, as a shard's nodes are read.
      const count = Math.ceil((8 * 1024 * 1024) / line);
      for (let i = 0; i < count; i++) spool.add(node!);
      const [dir] = await dirs();
      const { size } = await stat(path.join(dir!, "entries.ndjson"));
      assert.ok(size > count * line - 256 * 1024, `${size} of ${count * line} bytes written`);
      assert.equal([...spool.texts()].length, count);
    } finally {
      spool.close();
      await remove();
    }
  });

  it("keeps a small fleet's entries in memory, and makes its file only past 256 KB, removed once closed", async () => {
    const [node] = largeReport(1, 40).nodes;
    const entry = (i: number) => ({ ...node!, name: `n${String(i).padStart(4, "0")}` });
    const bytes = Buffer.byteLength(`${JSON.stringify(entry(0))}\n`);
    const under = Math.floor((256 * 1024 - 1) / bytes);
    for (const [count, files] of [
      [under, 0],
      [under + 1, 1],
    ] as const) {
      const { spool, dirs, remove } = await privateSpool();
      try {
        for (let i = count; i > 0; i--) spool.add(entry(i));
        assert.equal((await dirs()).length, files, `${count} entries of ${bytes} bytes`);
        assert.deepEqual(
          [...spool.entries()].map((n) => n.name),
          Array.from({ length: count }, (_, i) => entry(i + 1).name),
        );
        spool.close();
        assert.deepEqual(await dirs(), []);
      } finally {
        spool.close();
        await remove();
      }
    }
  });
});
