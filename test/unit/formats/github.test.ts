import assert from "node:assert/strict";
import { test } from "node:test";
import {
  annotationsFor,
  capAnnotations,
  MAX_ANNOTATIONS_PER_STEP,
  renderGithub,
  workflowCommand,
} from "../../../src/report/formats/github.js";
import { largeReport, loadFleetReport } from "../../support/reports.js";

const options = { color: false, verbose: false };

test("workflow commands escape data and properties as GitHub's runner reads them", () => {
  assert.equal(
    workflowCommand({
      level: "error",
      file: "fleet-manifests/a,b:c.yaml",
      line: 3,
      title: "50% done",
      message: "line 1\nline 2\r::set-env 100%",
    }),
    // A newline cannot end the command early; a carriage return from a host is shown, not sent.
    "::error file=fleet-manifests/a%2Cb%3Ac.yaml,line=3,title=50%25 done::line 1%0Aline 2\\r::set-env 100%25",
  );
  // Control characters from a host never reach the log raw, in a message or a file name.
  assert.equal(workflowCommand({ level: "notice", message: "bell\x07" }), "::notice::bell\\x07");
  assert.equal(
    workflowCommand({ level: "notice", file: "a\x1b[31m\u202e.yaml", message: "m" }),
    "::notice file=a\\x1b[31m\\u{202e}.yaml::m",
  );
});

test("at most 10 per step, worst first, the last slot counting what was left out", () => {
  const report = largeReport(40, 200);
  const lines = renderGithub(report, options).trimEnd().split("\n");
  assert.equal(lines.length, MAX_ANNOTATIONS_PER_STEP);
  assert.ok(
    lines.slice(0, -1).every((l) => l.startsWith("::error ")),
    lines.join("\n"),
  );
  assert.match(
    lines.at(-1)!,
    /^::notice::\d+ more findings in the job summary and the report artifact$/,
  );
  assert.equal(capAnnotations([], "anywhere"), "");
});

test("drift declared at one line and alike on several nodes is one annotation; acknowledged drift none", () => {
  const report = loadFleetReport();
  const annotations = annotationsFor(report.nodes);
  const keys = annotations.map((a) => `${a.file}:${a.line} ${a.title}`);
  assert.equal(new Set(keys).size, keys.length);
  const acknowledged = report.nodes.flatMap((n) =>
    n.drift.filter((d) => d.acknowledged).map((d) => d.key),
  );
  assert.ok(acknowledged.length > 0);
  for (const a of annotations)
    assert.ok(!acknowledged.some((key) => a.title?.endsWith(`: ${key}`)), a.title);
  for (const node of report.nodes.filter(
    (n) => n.status === "unreachable" || n.status === "error",
  )) {
    assert.ok(
      annotations.some((a) => a.title === `${node.name} not audited` && a.level === "error"),
    );
  }
});
