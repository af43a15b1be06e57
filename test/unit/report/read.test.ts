import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InputFileError } from "../../../src/errors.js";
import { ReportReader } from "../../../src/report/read.js";
import { Report, type NodeResult } from "../../../src/report/schema.js";
import { summarize } from "../../../src/report/tally.js";
import { loadFleetReport } from "../../support/reports.js";

/** The report as the reader gives it back from `text` cut into pieces of `size` characters. */
function readInPieces(text: string, size: number): Report {
  const nodes: NodeResult[] = [];
  const reader = new ReportReader("r.json", (node) => nodes.push(node));
  for (let i = 0; i < text.length; i += size) reader.push(text.slice(i, i + size));
  return { ...reader.end(), nodes };
}

const refusal = (text: string) => {
  try {
    readInPieces(text, 5);
  } catch (error) {
    assert.ok(error instanceof InputFileError, String(error));
    return error.message;
  }
  assert.fail(`read: ${text.slice(0, 80)}`);
};

// Brackets, commas, quotes and escapes inside strings, where they mean nothing.
const tricky: NodeResult = {
  name: 'n[1],{"x"}\\',
  host: 'h\\"]},',
  status: "error",
  error: "] } , [ { \u2028 \ud800 \u{1f525}",
  durationMs: 1,
  drift: [],
};

describe("the report read a piece at a time", () => {
  it("gives what JSON.parse and the schema give, wherever the pieces are cut", () => {
    const fleet = loadFleetReport();
    const withTricky = { ...fleet, nodes: [...fleet.nodes, tricky] };
    withTricky.summary = summarize(withTricky.nodes);
    const { summary, ...rest } = withTricky;
    const texts = [
      JSON.stringify(withTricky, null, 2),
      JSON.stringify(withTricky),
      // `nodes` spelt with an escape, after the summary; an empty report.
      JSON.stringify({ summary, ...rest }).replace('"nodes"', '"nod\\u0065s"'),
      JSON.stringify({ ...fleet, nodes: [], summary: summarize([]) }, null, 1),
    ];
    for (const text of texts) {
      const expected = Report.parse(JSON.parse(text));
      for (const size of [1, 2, 3, 17, 1000, text.length])
        assert.deepEqual(readInPieces(text, size), expected, `pieces of ${size}`);
    }
  });

  it("refuses what JSON.parse refuses, and a member given twice, naming what is wrong", () => {
    const text = JSON.stringify(loadFleetReport());
    const cases: [string, RegExp][] = [
      ["", /not a JSON report .*empty/],
      ["[]", /not a JSON report .*not a JSON object/],
      [text.slice(0, -1), /not a JSON report .*ends before/],
      [`${text} {}`, /not a JSON report .*after the report/],
      [text.replace('"nodes":[', '"nodes":[,'), /not a JSON report .*nodes\.0/],
      [text.replace('"summary":', '"nodes":[],"summary":'), /"nodes" is in it twice/],
      [
        text.replace('"startedAt":', '"finishedAt":"x","startedAt":'),
        /"finishedAt" is in it twice/,
      ],
      [text.replace('"status":"', '"status":"x'), /schemaVersion 1\): nodes\.0\.status: /],
      [text.replace(/"nodes":\[.*\],"summary"/, '"summary"'), /schemaVersion 1\): nodes: /],
    ];
    for (const [bad, message] of cases) assert.match(refusal(bad), message, bad.slice(0, 200));
  });
});

describe("a report written before acknowledged drift was counted apart", () => {
  it("reads, its acknowledged items counted apart; a summary that adds up neither way is refused", () => {
    const fleet = loadFleetReport();
    const { acknowledgedItems, ...older } = fleet.summary;
    assert.ok(acknowledgedItems > 0);
    const written = { ...older, driftItems: older.driftItems + acknowledgedItems };
    assert.deepEqual(
      readInPieces(JSON.stringify({ ...fleet, summary: written }), 1000).summary,
      fleet.summary,
    );
    assert.match(
      refusal(JSON.stringify({ ...fleet, summary: older })),
      /summary: does not count the report's nodes/,
    );
  });
});

describe("an unreadable drift item", () => {
  it("costs only itself: read without its cause when that is what is wrong, else left out", () => {
    const fleet = loadFleetReport();
    const node = fleet.nodes.find((n) => n.drift.length >= 2)!;
    const [first, second] = node.drift;
    const bad = {
      ...fleet,
      nodes: fleet.nodes.map((n) =>
        n === node
          ? {
              ...n,
              drift: [
                {
                  ...first,
                  cause: { kind: "reboot", at: "+033658-09-27T01:46:39Z", evidence: "e" },
                },
                { ...second, fingerprint: "not a fingerprint" },
                ...n.drift.slice(2),
              ],
            }
          : n,
      ),
    };
    const read = readInPieces(JSON.stringify(bad), 1000);
    const back = read.nodes.find((n) => n.name === node.name)!;
    assert.equal(back.drift.length, node.drift.length - 1);
    assert.deepEqual(back.drift[0]!.cause, {
      kind: "unknown",
      evidence: "unreadable in the report (cause.at: Invalid ISO datetime)",
    });
    assert.equal(back.drift[0]!.fingerprint, first!.fingerprint);
    assert.deepEqual(back.drift.slice(1), node.drift.slice(2));
    assert.deepEqual(read.summary, fleet.summary);
    const others = (r: Report) => r.nodes.filter((n) => n.name !== node.name);
    assert.deepEqual(others(read), others(fleet));
  });
});
