import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DEFAULT_MARKDOWN_MAX_BYTES,
  renderMarkdown,
} from "../../../src/report/formats/markdown.js";
import { renderers } from "../../support/formats.js";
import { largeReport, loadFleetReport } from "../../support/reports.js";

const FORMATS = await renderers();

const options = { color: false, verbose: false };

/** A GFM table row's cells, split the way GitHub does: on pipes not escaped with a backslash. */
function cells(row: string): string[] {
  assert.ok(row.startsWith("| ") && row.endsWith(" |"), row);
  return row
    .slice(2, -2)
    .split(/(?<!\\) \| /)
    .map((c) => c.trim());
}

/** The literal text of a code span cell. */
function codeText(cell: string): string {
  const fence = /^`+/.exec(cell)![0];
  assert.ok(cell.endsWith(fence) && cell.length > 2 * fence.length, cell);
  let inner = cell.slice(fence.length, -fence.length);
  if (inner.startsWith(" ") && inner.endsWith(" ") && inner.trim() !== "")
    inner = inner.slice(1, -1);
  assert.ok(
    !new RegExp(`(?<!\`)${fence}(?!\`)`).test(inner),
    `fence ${fence} closes early in ${cell}`,
  );
  return inner.replace(/\\\|/g, "|");
}

/** The rows of the table under a `### heading`, header excluded. */
function section(markdown: string, heading: string): string[][] {
  const start = markdown.split("\n").findIndex((l) => l.startsWith(`### ${heading}`));
  assert.ok(start >= 0, `no section ${heading}`);
  const lines = markdown.split("\n").slice(start + 1);
  const rows: string[] = [];
  for (const line of lines.slice(lines.findIndex((l) => l.startsWith("|")))) {
    if (!line.startsWith("|")) break;
    rows.push(line);
  }
  const width = cells(rows[0]!).length;
  assert.match(rows[1]!, /^\|(---\|)+$/);
  const body = rows.slice(2).map(cells);
  for (const row of body) assert.equal(row.length, width, `cell count in ${JSON.stringify(row)}`);
  return body;
}

test("markdown is registered as a format and uses the default size limit", () => {
  const report = largeReport(100, 5000);
  assert.equal(
    FORMATS.markdown(report, options),
    renderMarkdown(report, { ...options, maxBytes: DEFAULT_MARKDOWN_MAX_BYTES }),
  );
});

test("a summary table counts nodes by status, and the drift items apart from the acknowledged ones", () => {
  const md = renderMarkdown(loadFleetReport(), options);
  const lines = md.split("\n");
  const header = lines.indexOf(
    "| nodes | clean | drifted | unreachable | errors | maintenance | drift items | acknowledged | latent |",
  );
  assert.ok(header >= 0);
  assert.equal(lines[header + 2], "| 9 | 3 | 3 | 1 | 1 | 1 | 11 | 1 | 0 |");
  assert.ok(md.includes("at manifest revision `9f1c2e4b7a3d`"));
});

test("drift is tabled per severity, most urgent first, acknowledged last", () => {
  const md = renderMarkdown(loadFleetReport(), options);
  const headings = md.split("\n").filter((l) => l.startsWith("### "));
  assert.deepEqual(headings, [
    "### Nodes not audited (3)",
    "### Critical drift (1)",
    "### High drift (7)",
    "### Medium drift (2)",
    "### Low drift (1)",
    "### Acknowledged drift (1)",
  ]);
  const critical = section(md, "Critical drift");
  assert.deepEqual(
    critical[0]!.map((c, i) => (i !== 1 ? codeText(c) : c)),
    [
      "web-01",
      "routes",
      "default",
      '{"dst":"default","via":"10.0.0.1","dev":"eth0"}',
      '{"dst":"default","via":"10.0.0.254","dev":"eth0"}',
      "fleet-manifests/groups/web.yaml:20",
      "Restore the declared route with the network configuration tool; open a ticket if the change was intended.",
    ],
  );
  // Who acknowledged it is a contributor's text (a waiver's reason): a code span, pinging no one.
  assert.deepEqual(section(md, "Acknowledged drift")[0]!.slice(-1), [
    "`remediations/db-01-kernel-2b3c4d5e.yaml`",
  ]);
  assert.deepEqual(
    section(md, "High drift")
      .map((r) => [codeText(r[0]!), codeText(r[2]!)])
      .slice(0, 3),
    [
      ["db-01", "openssl"],
      ["web-01", "/etc/app/secret.env"],
      ["web-01", "/etc/nginx/nginx.conf"],
    ],
  );
});

test("pipes, backticks and newlines in values cannot break the table", () => {
  const md = renderMarkdown(loadFleetReport(), options);
  const motd = section(md, "High drift").find((r) => r[2] === "`/etc/motd`")!;
  assert.equal(codeText(motd[3]!), '"Authorized use only | ops `on-call`\\n"');
  // The live value, then its detail, each a code span of its own.
  const [live, detail] = motd[4]!.split(/ \((?=`[^`]*`\)$)/);
  assert.equal(codeText(live!), '"\\u001b[31mOWNED\\u001b[0m | see `id`\\n"');
  assert.equal(
    codeText(detail!.slice(0, -1)),
    'content mismatch for file "/etc/motd" <changed by hand>',
  );

  const report = loadFleetReport();
  const node = report.nodes[0]!;
  node.name = "db|01 *bold* <b> @team";
  node.drift[0]!.key = "a|b\nc`d``e";
  const rows = section(renderMarkdown(report, options), "High drift");
  const row = rows.find((r) => r[0]!.startsWith("`db"))!;
  // A node name is code too: no markup, no HTML, and no mention of @team.
  assert.equal(row[0], "`db\\|01 *bold* <b> @team`");
  assert.equal(codeText(row[2]!), "a|b\\nc`d``e");
});

test("diffs sit in collapsed details as diff blocks; a secret file has none", () => {
  const md = renderMarkdown(loadFleetReport(), options);
  assert.ok(
    md.includes(
      "<details><summary><code>web-01</code>: files <code>/etc/nginx/nginx.conf</code></summary>\n\n```diff\n--- want /etc/nginx/nginx.conf\n+++ got /etc/nginx/nginx.conf\n@@ -1,4 +1,4 @@\n user www-data;\n-worker_processes auto;\n+worker_processes 2;\n events {\n     worker_connections 768;\n```\n\n</details>",
    ),
  );
  assert.equal(md.split("<details>").length - 1, 3);
  assert.ok(!md.includes("secret.env</code></summary>"));
  assert.ok(
    md.includes("+\\x1b[31mOWNED\\x1b[0m | see `id`\\x07\n"),
    "host escapes neutralized in diffs",
  );
  assert.ok(!md.includes("\u001b"));
});

test("a diff containing a code fence gets a longer fence", () => {
  const report = loadFleetReport();
  report.nodes[0]!.drift[0]!.diff = "--- want\n+++ got\n@@ -1 +1 @@\n-```\n+````\n";
  const md = renderMarkdown(report, options);
  assert.ok(md.includes("\n`````diff\n--- want\n+++ got\n@@ -1 +1 @@\n-```\n+````\n`````\n"));
});

test("unreachable, failed and maintenance nodes are listed with their error", () => {
  const rows = section(renderMarkdown(loadFleetReport(), options), "Nodes not audited");
  assert.deepEqual(
    rows.map((r) => [codeText(r[0]!), r[1], codeText(r[2]!)]),
    [
      [
        "db-02",
        "unreachable",
        "ssh: connect to host db-02.example.net port 22: Connection timed out",
      ],
      [
        "worker-01",
        "error",
        "host key verification failed for worker-01.example.net\\nthe host key changed since it was recorded in known_hosts",
      ],
      ["worker-02", "maintenance", "maintenance marker /run/quartermaster/maintenance is present"],
    ],
  );
});

test("a small report is not shortened", () => {
  assert.ok(!renderMarkdown(loadFleetReport(), options).includes("Shortened"));
});

test("5,000 drift items stay under the limit: diffs dropped, then the least urgent rows", () => {
  const report = largeReport(200, 5000);
  const md = renderMarkdown(report, options);
  assert.ok(Buffer.byteLength(md) <= DEFAULT_MARKDOWN_MAX_BYTES, `${Buffer.byteLength(md)} bytes`);
  assert.ok(Buffer.byteLength(md) > DEFAULT_MARKDOWN_MAX_BYTES * 0.9, "uses the room it has");
  assert.ok(!md.includes("<details>"), "diffs go before any row");
  const note = md.split("\n").find((l) => l.startsWith("> **Shortened"))!;
  assert.match(
    note,
    /left out 5000 diffs and \d+ rows \(the least urgent\)\. The full report is in the workflow run's artifact\./,
  );
  // Critical rows alone outgrow the limit here: the others are all left out, critical cut short.
  assert.match(md, /\n### Critical drift \(1250, \d+ shown\)\n/);
  for (const s of ["High", "Medium", "Low"])
    assert.ok(md.includes(`\n### ${s} drift (1250, none shown)\n`), s);
  const dropped = Number(/and (\d+) rows/.exec(note)![1]);
  const shown = md.split("\n").filter((l) => /^\| `node-\d+` \|/.test(l)).length;
  assert.equal(shown + dropped, 5000);
});

test("rows are cut from the lowest severity up", () => {
  // Each row carries its remediation: 50 kB holds three severities' rows and part of the fourth.
  const md = renderMarkdown(largeReport(50, 400), { ...options, maxBytes: 50_000 });
  const headings = md.split("\n").filter((l) => l.startsWith("### "));
  assert.deepEqual(headings.slice(0, 3), [
    "### Critical drift (100)",
    "### High drift (100)",
    "### Medium drift (100)",
  ]);
  assert.match(headings[3]!, /^### Low drift \(100, \d+ shown\)$/);
});

test("when the rows fit but not every diff, only diffs are left out, the most urgent kept", () => {
  const report = largeReport(10, 200);
  const maxBytes = 40_000;
  const md = renderMarkdown(report, { ...options, maxBytes });
  assert.ok(Buffer.byteLength(md) <= maxBytes);
  assert.match(
    md,
    /> \*\*Shortened to fit GitHub's size limit:\*\* left out \d+ diffs\. The full report/,
  );
  assert.equal(md.split("\n").filter((l) => /^\| `node-\d+` \|/.test(l)).length, 200);
  const details = md.split("\n").filter((l) => l.startsWith("<details>"));
  assert.ok(details.length > 0);
  assert.ok(md.indexOf("<details>") < md.indexOf("### High drift"), "critical diffs come first");
});

test("any limit is honoured, and one too small for the summary is refused", () => {
  const report = largeReport(50, 1000);
  for (const maxBytes of [2_000, 10_000, 65_536]) {
    assert.ok(
      Buffer.byteLength(renderMarkdown(report, { ...options, maxBytes })) <= maxBytes,
      String(maxBytes),
    );
  }
  assert.throws(() => renderMarkdown(report, { ...options, maxBytes: 200 }), RangeError);
});

test("each drift row carries its remediation in a code span: markup, mentions and comments stay literal, length capped", () => {
  const report = loadFleetReport();
  const item = report.nodes
    .find((n) => n.name === "web-01")!
    .drift.find((d) => d.domain === "routes")!;
  item.remediation = "Run `ip route replace` | ping @ops <!-- x --> <b>now</b>\nsecond line";
  const row = section(renderMarkdown(report, options), "Critical drift")[0]!;
  assert.equal(
    codeText(row[6]!),
    "Run `ip route replace` | ping @ops <\\x21-- x --> <b>now</b>\\nsecond line",
  );
  assert.match(
    row[6]!,
    /^``[^`]/,
    "a code span, where GitHub renders no markup and links no mention",
  );
  item.remediation = "x".repeat(5000);
  const long = section(renderMarkdown(report, options), "Critical drift")[0]![6]!;
  assert.ok(codeText(long).length === 300 && codeText(long).endsWith("…"), long);
});

test("a key of a megabyte is cut short in its row and its diff, and hides no other row", () => {
  const full = renderMarkdown(loadFleetReport(), options);
  const report = loadFleetReport();
  const item = report.nodes.flatMap((n) => n.drift).find((i) => i.diff && i.severity === "high")!;
  item.key = "k".repeat(1024 * 1024);
  const md = renderMarkdown(report, options);
  assert.ok(md.length < full.length + 1000, `${md.length} bytes against ${full.length}`);
  const row = section(md, "High drift").find((r) => r[2]!.includes("kkk"))!;
  assert.equal(codeText(row[2]!), `${"k".repeat(119)}…`);
  for (const heading of ["Medium drift", "Low drift"])
    assert.equal(section(md, heading).length, section(full, heading).length, heading);
});

test("nodes that needed more than one SSH try are counted, and a failed one says after how many", () => {
  const report = loadFleetReport();
  const byName = (name: string) => report.nodes.find((n) => n.name === name)!;
  byName("db-02").tries = 6;
  byName("web-02").tries = 3;
  byName("web-03").tries = 1;
  const out = renderMarkdown(report, options);
  assert.match(out, /^2 nodes needed more than one SSH connection try \(at most 6\);/m);
  const row = out.split("\n").find((l) => l.startsWith("| `db-02` |"))!;
  assert.equal(cells(row)[1], "unreachable after 6 tries");
  report.nodes.forEach((n) => delete n.tries);
  assert.doesNotMatch(renderMarkdown(report, options), /SSH connection try/);
});
