// The test run's reporter (scripts/test.sh): node's TAP output, then the slowest test files (each
// file runs in a process of its own; its time is that process's, from start to exit) and, in a run
// with --experimental-test-coverage (npm run test:coverage), a short coverage summary of src/ (per
// directory and in total) in place of node's table, which lists every test file too.
import path from "node:path";
import { tap } from "node:test/reporters";

const SRC = path.resolve("src") + path.sep;

/** Lines and branches covered, summed per directory of src/ and over all of it. */
function summarize(files) {
  const rows = new Map();
  const add = (key, file) => {
    const row = rows.get(key) ?? { lines: 0, covered: 0, branches: 0, coveredBranches: 0 };
    row.lines += file.totalLineCount;
    row.covered += file.coveredLineCount;
    row.branches += file.totalBranchCount;
    row.coveredBranches += file.coveredBranchCount;
    rows.set(key, row);
  };
  for (const file of files) {
    if (!file.path.startsWith(SRC)) continue;
    add(path.dirname(path.relative(".", file.path)), file);
    add("all of src/", file);
  }
  return rows;
}

const percent = (part, whole) => (whole === 0 ? "-" : ((100 * part) / whole).toFixed(1) + "%");

function render(rows) {
  const keys = [...rows.keys()].filter((k) => k !== "all of src/").sort();
  keys.push("all of src/");
  const width = Math.max(...keys.map((k) => k.length));
  if (keys.length === 1) return "# coverage: the test processes loaded no file of src/\n";
  const lines = ["# coverage of src/ by the test processes (lines, branches)"];
  for (const key of keys) {
    const row = rows.get(key);
    if (!row) continue;
    lines.push(
      `# ${key.padEnd(width)}  ${percent(row.covered, row.lines).padStart(6)}  ` +
        percent(row.coveredBranches, row.branches).padStart(6),
    );
  }
  return lines.join("\n") + "\n";
}

const SLOWEST = 12;

/** The slowest test files, with their share of the files' summed time. */
function slowest(files) {
  const total = [...files.values()].reduce((sum, ms) => sum + ms, 0);
  const rows = [...files].sort((a, b) => b[1] - a[1]).slice(0, SLOWEST);
  const lines = [`# slowest test files (of ${files.size}, ${(total / 1000).toFixed(0)} s summed)`];
  for (const [file, ms] of rows)
    lines.push(
      `# ${(ms / 1000).toFixed(1).padStart(7)} s  ${percent(ms, total).padStart(6)}  ${path.relative(".", file)}`,
    );
  return lines.join("\n") + "\n";
}

export default async function* reporter(source) {
  let coverage;
  const files = new Map();
  async function* withoutCoverage() {
    for await (const event of source) {
      if (event.type === "test:coverage") coverage = event.data.summary;
      else {
        // The test node's runner opens for each file (its name is the file's path).
        if (event.type === "test:complete" && event.data.name === event.data.file)
          files.set(event.data.file, event.data.details.duration_ms);
        yield event;
      }
    }
  }
  yield* tap(withoutCoverage());
  if (files.size > 0) yield slowest(files);
  if (coverage) yield render(summarize(coverage.files));
}
