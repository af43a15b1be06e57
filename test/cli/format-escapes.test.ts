// Host text holding runner commands, XML-illegal characters and `]]>`, printed by `report` as
// junit and prometheus: on stdout no line the Actions runner acts on, and a parser of the format
// (python3's xml.etree, the exposition parser) reads the same values as from the --out file.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { execa } from "execa";
import { runCli } from "../support/cli.js";
import { parseExposition } from "../support/prometheus.js";
import { loadFleetReport } from "../support/reports.js";
import { runnerCommandLines } from "../support/runner-commands.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();
const KEY = "/etc/##[error]k\u0001]]>";
const LIVE = "a\u0001b]]>c\n::error::x\n  ::warning::y ##[group]z";

// Every element's tag, attributes and text, in document order, as python3's parser reads them.
const PY_DUMP = `import json, sys, xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.buffer.read())
print(json.dumps([[e.tag, e.attrib, e.text] for e in root.iter()]))`;

async function pythonXml(xml: string): Promise<[string, Record<string, string>, string | null][]> {
  const { stdout } = await execa("python3", ["-c", PY_DUMP], { input: xml });
  return JSON.parse(stdout) as [string, Record<string, string>, string | null][];
}

async function hostileReport(): Promise<string> {
  const report = loadFleetReport();
  const [item] = report.nodes[0]!.drift;
  Object.assign(item!, { key: KEY, live: LIVE, firstSeen: report.startedAt });
  const dir = await tree({});
  const file = path.join(dir, "report.json");
  await writeFile(file, JSON.stringify(report));
  return file;
}

describe("junit and prometheus keep host text exact, in their own escapes", () => {
  for (const format of ["junit", "prometheus"] as const) {
    it(`report --format ${format}: stdout parses as the --out file does`, async () => {
      const report = await hostileReport();
      const out = path.join(path.dirname(report), `out.${format}`);
      const printed = await runCli(["report", "--report", report, "--format", format]);
      assert.equal(printed.exitCode, 0, printed.stderr);
      assert.deepEqual(runnerCommandLines(printed.stdout), [], printed.stdout);
      const written = await runCli([
        "report",
        "--report",
        report,
        "--format",
        format,
        "--out",
        out,
      ]);
      assert.equal(written.exitCode, 0, written.stderr);
      const file = await readFile(out, "utf8");
      if (format === "junit") {
        const fromFile = await pythonXml(file);
        assert.deepEqual(await pythonXml(printed.stdout), fromFile);
        const names = fromFile.map(([, attributes]) => attributes.name);
        // XML 1.0 cannot carry U+0001 at all: it is shown as `\x01`.
        const name = `packages ${KEY.replace("\u0001", "\\x01")}`;
        assert.ok(names.includes(name), JSON.stringify(names));
        assert.ok(fromFile.some(([, , text]) => text?.includes("::error::x")));
        return;
      }
      const keys = (text: string) =>
        parseExposition(text)
          .find((f) => f.name === "quartermaster_drift_age_seconds")!
          .samples.map((s) => s.labels.key);
      assert.ok(keys(file).includes(KEY), file);
      // No escape for `[` in the exposition: stdout shows the runner escape, and still parses (the
      // captured stdout lost its final newline).
      assert.ok(keys(`${printed.stdout}\n`).includes(KEY.replace("[", "\\u005b")), printed.stdout);
    });
  }
});
