// Property tests: whatever text a host or a manifest holds, nothing Quartermaster prints holds a
// line the GitHub Actions runner acts on (test/support/runner-commands.ts reads output as the
// runner does), and data formats still read back exactly. The CLI's stdout and stderr pass through
// one guard; the last test runs the real CLI over a batch of generated text, through every report
// format and validate.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import fc from "fast-check";
import { parse } from "yaml";
import { FORMAT_NAMES } from "../../../src/report/formats/format.js";
import type { NodeResult, Report } from "../../../src/report/schema.js";
import { defuseRunnerCommands, lineStart, visible } from "../../../src/text/escape.js";
import { stringifyPortable } from "../../../src/text/yaml-scalar.js";
import { runCli } from "../../support/cli.js";
import { renderers } from "../../support/formats.js";
import { reportOf } from "../../support/reports.js";
import { runnerCommandLines } from "../../support/runner-commands.js";
import { scratchTrees } from "../../support/tree.js";

const RUNS = { seed: 20261201, numRuns: 300 } as const;
const tree = scratchTrees();
const renderAll = await renderers();

const PIECES = [
  "::",
  ":",
  "##[",
  "#",
  "[",
  "]",
  "\n",
  "\r",
  "\r\n",
  " ",
  "\t",
  "\u00a0",
  "\u2000",
  "\u200a",
  "\u3000",
  "\ufeff",
  "\u200b",
  "\u2028",
  "\u0085",
  "error",
  "set-output name=x",
  "add-mask",
  "x",
  "%",
  "`",
  "@here",
  "|",
  '"',
  "\\",
];
/** Text made of the pieces runner commands are made of, and arbitrary code points. */
const hostileText = fc.oneof(
  fc
    .array(fc.oneof(fc.constantFrom(...PIECES), fc.string({ unit: "binary", maxLength: 3 })), {
      maxLength: 12,
    })
    .map((parts) => parts.join("")),
  fc.string({ unit: "binary", maxLength: 16 }),
);

const noRunnerLines = (text: string, what: string) =>
  assert.deepEqual(runnerCommandLines(text), [], `${what}:\n${JSON.stringify(text)}`);

/** Text as the CLI's guard passes it on when it is written in these pieces. */
const guarded = (pieces: readonly string[]) => {
  const state = lineStart();
  return pieces.map((piece) => defuseRunnerCommands(piece, state)).join("");
};

/** A report whose every free-text field is host or manifest text. */
function hostileReport(texts: readonly string[]): Report {
  const at = (i: number) => texts[i % texts.length]!;
  const nodes: NodeResult[] = texts.map((text, i) => ({
    name: `n${i}-${text}`,
    host: at(i + 1),
    status: i % 5 === 4 ? "error" : "drift",
    ...(i % 5 === 4 && { error: at(i + 2) }),
    durationMs: 10,
    drift:
      i % 5 === 4
        ? []
        : [
            {
              domain: "files",
              key: at(i + 3),
              declared: at(i + 4),
              live: { [at(i + 5)]: [at(i + 6)] },
              severity: "high",
              fingerprint: i.toString(16).padStart(16, "0"),
              source: { file: `nodes/${at(i + 7)}.yaml`, line: 3 },
              remediation: at(i + 8),
              onDrift: "accept",
              path: ["files", at(i + 3)],
              detail: at(i + 9),
              diff: `--- want\n+++ got\n@@ -1 +1 @@\n-${at(i + 4)}\n+${at(i + 10)}\n`,
            },
          ],
  }));
  return reportOf(nodes);
}

/** Annotations `--format github` means to print: one level, properties, then the message. */
const INTENDED_ANNOTATION = /^::(error|warning|notice)( [^:]*)?::/;

describe("runner commands in generated text", () => {
  it("the guard leaves no runner line however the text is cut into writes, and changes nothing else", () => {
    fc.assert(
      fc.property(
        hostileText,
        fc.array(fc.nat(), { maxLength: 4 }),
        fc.constantFrom(...PIECES),
        (text, cuts, before) => {
          const whole = before + text;
          const points = [...new Set(cuts.map((c) => c % (whole.length + 1)))].sort(
            (a, b) => a - b,
          );
          const pieces = [0, ...points].map((from, i) =>
            whole.slice(from, [...points, whole.length][i]),
          );
          const out = guarded(pieces);
          noRunnerLines(out, "guarded output");
          // Only the characters completing a command changed: undone, the text is the same.
          if (!whole.includes("\\"))
            assert.equal(out.replaceAll("\\u003a", ":").replaceAll("\\u005b", "["), whole);
        },
      ),
      RUNS,
    );
  });

  it("visible() text holds none, even before the guard", () => {
    fc.assert(
      fc.property(hostileText, (text) => {
        noRunnerLines(visible(text), "visible");
        noRunnerLines(visible(text, { multiline: true }), "visible multiline");
      }),
      RUNS,
    );
  });

  it("every report format, guarded, holds none but --format github's own annotations; JSON reads back the same", () => {
    fc.assert(
      fc.property(fc.array(hostileText, { minLength: 1, maxLength: 6 }), (texts) => {
        const report = hostileReport(texts);
        for (const [name, render] of Object.entries(renderAll)) {
          const text = render(report, { color: false, verbose: true });
          // The github format bypasses the guard: its lines must be the annotations it means.
          const out = name === "github" ? text : guarded([text]);
          const acted = runnerCommandLines(out).filter(
            (line) =>
              !(name === "github" && INTENDED_ANNOTATION.test(line) && !line.includes("##[")),
          );
          assert.deepEqual(acted, [], `--format ${name}:\n${out}`);
          if (name === "json") assert.deepEqual(JSON.parse(out), JSON.parse(text));
          if (name === "events")
            assert.deepEqual(
              out
                .split("\n")
                .filter(Boolean)
                .map((l) => JSON.parse(l)),
              text
                .split("\n")
                .filter(Boolean)
                .map((l) => JSON.parse(l)),
            );
        }
      }),
      { ...RUNS, numRuns: 60 },
    );
  });

  it("snapshot's YAML holds none on its own, and reads back as the value, guarded or not", () => {
    fc.assert(
      fc.property(
        hostileText,
        fc.dictionary(hostileText, fc.oneof(hostileText, fc.array(hostileText, { maxLength: 3 })), {
          maxKeys: 3,
        }),
        (contents, more) => {
          const value = { files: [{ path: "/etc/x", contents }], more };
          const text = stringifyPortable(value);
          noRunnerLines(text, "YAML");
          assert.equal(guarded([text]), text);
          // As JSON text: generated keys may be __proto__, which only a null-prototype object holds.
          assert.equal(JSON.stringify(parse(text)), JSON.stringify(value));
        },
      ),
      RUNS,
    );
  });

  it("the real CLI prints none: report in every format, and validate with the text as manifest keys", async () => {
    const texts = fc.sample(hostileText, { seed: RUNS.seed, numRuns: 40 });
    const dir = await tree({});
    const reportFile = path.join(dir, "report.json");
    await writeFile(reportFile, JSON.stringify(hostileReport(texts)));
    for (const format of FORMAT_NAMES) {
      const result = await runCli(["report", "--report", reportFile, "--format", format]);
      assert.equal(result.exitCode, 0, result.stderr);
      const acted = runnerCommandLines(result.stdout + result.stderr).filter(
        (line) => !(format === "github" && INTENDED_ANNOTATION.test(line) && !line.includes("##[")),
      );
      assert.deepEqual(acted, [], `report --format ${format}`);
      if (format === "json")
        assert.deepEqual(
          JSON.parse(result.stdout),
          JSON.parse(JSON.stringify(hostileReport(texts))),
        );
      if (format === "github")
        assert.match(result.stdout, /^::error /m, "the annotations still run");
    }
    const manifests = await tree({
      "nodes/web-01.yaml": `${JSON.stringify(Object.fromEntries(texts.map((t, i) => [t, i])))}\n`,
    });
    const result = await runCli(["validate", "--manifests", manifests], {
      env: { GITHUB_ACTIONS: "true" },
    });
    assert.equal(result.exitCode, 2, result.stderr);
    assert.deepEqual(
      runnerCommandLines(result.stdout + result.stderr).filter(
        (line) => !(INTENDED_ANNOTATION.test(line) && !line.includes("##[")),
      ),
      [],
      result.stdout + result.stderr,
    );
    assert.match(result.stdout, /^::error file=/m, "validate still annotates the manifest");
  });
});
