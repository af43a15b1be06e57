// Markdown for PR bodies and GitHub job summaries. A body is capped at 65,536 characters, so
// the output is shortened to fit: diffs go first, then the least urgent drift rows, and the
// text says what was left out. The size is counted in UTF-8 bytes, which covers both caps.
import { causeLine } from "../cause-line.js";
import { SEVERITIES, type Severity } from "../../domains/domain.js";
import { latentOnly } from "../../domains/latent-words.js";
import { latentSentence } from "../../domains/registry.js";
import type { DriftItem, NodeResult, Report } from "../schema.js";
import { codeCell, fencedBlock, htmlCode, textCell, truncate } from "../../text/markdown.js";
import {
  compactDeclared,
  compactLive,
  compareDrift,
  compareText,
  plural,
  severityRank,
  unauditedText,
} from "./common.js";
import type { RenderOptions, Renderer } from "./format.js";

export const DEFAULT_MARKDOWN_MAX_BYTES = 60_000;

// Table cells stay readable: the diff and the JSON report carry whole values.
const VALUE_CHARS = 120;
const ERROR_CHARS = 300;
const REMEDIATION_CHARS = 300;
// One runaway diff must not crowd out all the others.
const DIFF_LINES = 200;
const DIFF_CHARS = 20_000;

interface Row {
  node: NodeResult;
  item: DriftItem;
  line: string;
  diff?: string;
}

export function renderMarkdown(report: Report, options: RenderOptions): string {
  const maxBytes = options.maxBytes ?? DEFAULT_MARKDOWN_MAX_BYTES;
  const problems = [...report.nodes]
    .filter((n) => n.status !== "clean" && n.status !== "drift")
    .sort(byName);
  // A "first seen" column when the audit knew the history.
  const since = report.nodes.some((n) => n.drift.some((d) => d.firstSeen !== undefined));
  const rows: Row[] = report.nodes
    .flatMap((node) => node.drift.map((item) => ({ node, item })))
    .sort(
      (a, b) =>
        byUrgency(a.item, b.item) ||
        compareText(a.node.name, b.node.name) ||
        compareDrift(a.item, b.item),
    )
    .map(({ node, item }) => ({
      node,
      item,
      line: driftRow(node, item, since),
      ...(item.diff ? { diff: diffBlock(node, item) } : {}),
    }));
  const diffCount = rows.filter((r) => r.diff).length;
  const entries = problems.length + rows.length;

  const attempt = (kept: number, diffs: number): string | undefined => {
    const text = compose(report, problems, rows, kept, diffs, since);
    return Buffer.byteLength(text, "utf8") <= maxBytes ? text : undefined;
  };
  const full = attempt(entries, diffCount);
  if (full !== undefined) return full;
  // Largest n in [0, high] for which fits(n) holds, given that fits(0) does.
  const largest = (high: number, fits: (n: number) => boolean): number => {
    let low = 0;
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (fits(mid)) low = mid;
      else high = mid - 1;
    }
    return low;
  };
  if (attempt(entries, 0) !== undefined) {
    return attempt(
      entries,
      largest(diffCount, (d) => attempt(entries, d) !== undefined),
    )!;
  }
  if (attempt(0, 0) === undefined)
    throw new RangeError(`maxBytes ${maxBytes} is too small even for the audit summary`);
  return attempt(
    largest(entries, (k) => attempt(k, 0) !== undefined),
    0,
  )!;
}

export const renderMarkdownFormat: Renderer = (report, options) => renderMarkdown(report, options);

/**
 * The report with the first `kept` entries (failed nodes, then drift rows by urgency) and `diffs`
 * diffs.
 */
function compose(
  report: Report,
  problems: readonly NodeResult[],
  rows: readonly Row[],
  kept: number,
  diffs: number,
  since: boolean,
): string {
  const keptProblems = problems.slice(0, kept);
  const keptRows = rows.slice(0, Math.max(0, kept - problems.length));
  const withDiff = new Set(keptRows.filter((r) => r.diff).slice(0, diffs));
  const allDiffs = rows.filter((r) => r.diff).length;

  const out = ["## Quartermaster drift audit", "", auditLine(report), "", ...summaryTable(report)];
  const retried = report.nodes.filter((n) => (n.tries ?? 1) > 1);
  if (retried.length > 0) {
    const most = Math.max(...retried.map((n) => n.tries!));
    out.push(
      "",
      `${plural(retried.length, "node")} needed more than one SSH connection try (at most ${most}); each node's \`tries\` is in the JSON report.`,
    );
  }
  const over = report.unauditedBudget?.over;
  if (over) out.push("", `**More nodes not audited than allowed**: ${textCell(over.join("; "))}.`);
  const leftOutRows = problems.length - keptProblems.length + rows.length - keptRows.length;
  const leftOutDiffs = allDiffs - withDiff.size;
  if (leftOutRows > 0 || leftOutDiffs > 0) {
    const what = [
      leftOutDiffs > 0 ? plural(leftOutDiffs, "diff") : "",
      leftOutRows > 0 ? `${plural(leftOutRows, "row")} (the least urgent)` : "",
    ];
    out.push(
      "",
      `> **Shortened to fit GitHub's size limit:** left out ${what.filter(Boolean).join(" and ")}. The full report is in the workflow run's artifact.`,
    );
  }
  if (problems.length > 0) {
    out.push(
      "",
      `### Nodes not audited (${headingCount(problems.length, keptProblems.length)})`,
      "",
    );
    out.push("| node | status | error |", "|---|---|---|");
    for (const n of keptProblems)
      out.push(
        `| ${codeCell(n.name)} | ${n.status}${n.errorClass ? ` (${n.errorClass})` : ""}${(n.tries ?? 1) > 1 ? ` after ${n.tries} tries` : ""}${n.unaudited ? `, ${unauditedText(n.unaudited)}` : ""} | ${n.error ? codeCell(truncate(n.error, ERROR_CHARS)) : ""} |`,
      );
  }
  const sections: [string, (r: Row) => boolean][] = [
    ...SEVERITIES.map((s): [string, (r: Row) => boolean] => [
      `${title(s)} drift`,
      (r) => !r.item.acknowledged && r.item.severity === s,
    ]),
    ["Acknowledged drift", (r) => r.item.acknowledged === true],
  ];
  for (const [heading, belongs] of sections) {
    const total = rows.filter(belongs).length;
    if (total === 0) continue;
    const shown = keptRows.filter(belongs);
    const acknowledged = heading.startsWith("Acknowledged");
    out.push("", `### ${heading} (${headingCount(total, shown.length)})`);
    if (shown.length === 0) continue;
    const header = `| node | domain | key | declared | live | source | remediation |${since ? " drifting since |" : ""}`;
    out.push("", `${header}${acknowledged ? " acknowledged by |" : ""}`);
    out.push(`|---|---|---|---|---|---|---|${since ? "---|" : ""}${acknowledged ? "---|" : ""}`);
    // A waiver's reason is a contributor's free text: a code span, where no @mention pings.
    for (const r of shown)
      out.push(
        acknowledged
          ? `${r.line} ${codeCell(r.item.acknowledgedBy ?? "", REMEDIATION_CHARS)} |`
          : r.line,
      );
    for (const r of shown) if (withDiff.has(r)) out.push("", r.diff!);
  }
  return `${out.join("\n")}\n`;
}

function auditLine(report: Report): string {
  const dirty = report.manifestDirty ? " with uncommitted changes" : "";
  const revision = report.manifestRevision
    ? ` at manifest revision \`${report.manifestRevision.slice(0, 12)}\`${dirty}`
    : "";
  const shard = report.shard ? ` (shard ${report.shard.index}/${report.shard.count})` : "";
  return `Audit finished ${report.finishedAt}${revision}${shard}.`;
}

function summaryTable(report: Report): string[] {
  const s = report.summary;
  return [
    "| nodes | clean | drifted | unreachable | errors | maintenance | drift items | acknowledged | latent |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    `| ${s.nodes} | ${s.clean} | ${s.drifted} | ${s.unreachable} | ${s.errors} | ${s.maintenance} | ${s.driftItems} | ${s.acknowledgedItems} | ${s.latentItems} |`,
  ];
}

function driftRow(node: NodeResult, item: DriftItem, since: boolean): string {
  const cells = [
    // Node names as code too: a name may hold `@`, and a mention would ping.
    codeCell(node.name),
    item.domain,
    // Why drift is back, beside its key: the waiver's reason or the ticket is manifest text, as code.
    `${codeCell(item.key, VALUE_CHARS)}${item.lapsed ? ` (no longer acknowledged: ${codeCell(item.lapsed, REMEDIATION_CHARS)})` : ""}${item.cause ? ` (${causeLine(item.cause, (text) => codeCell(text, REMEDIATION_CHARS))})` : ""}`,
    codeCell(compactDeclared(item, VALUE_CHARS)),
    // The detail (who listens, what reboot would change) beside the live value, as code: host text.
    `${codeCell(compactLive(item, VALUE_CHARS))}${item.detail ? ` (${codeCell(item.detail, REMEDIATION_CHARS)})` : ""}${item.latent ? ` (${latentOnly(item) ? "" : "then "}${latentSentence({ ...item, latent: item.latent }, (text) => codeCell(text, REMEDIATION_CHARS))})` : ""}`,
    codeCell(`${item.source.file}:${item.source.line}`, VALUE_CHARS),
    // A code span: a contributor's remediation text renders no markup and pings no @mention.
    codeCell(item.remediation, REMEDIATION_CHARS),
    ...(since ? [item.firstSeen ?? ""] : []),
  ];
  return `| ${cells.join(" | ")} |`;
}

function diffBlock(node: NodeResult, item: DriftItem): string {
  const summary = `${htmlCode(node.name)}: ${item.domain} ${htmlCode(item.key, VALUE_CHARS)}`;
  const block = fencedBlock(item.diff!, "diff", { maxLines: DIFF_LINES, maxChars: DIFF_CHARS });
  return [`<details><summary>${summary}</summary>`, "", block, "", "</details>"].join("\n");
}

// The order rows are kept in when space runs out: acknowledged last, then lowest severity.
function byUrgency(a: DriftItem, b: DriftItem): number {
  return (
    Number(a.acknowledged ?? false) - Number(b.acknowledged ?? false) ||
    severityRank(a.severity) - severityRank(b.severity)
  );
}

function headingCount(total: number, shown: number): string {
  return shown === total ? String(total) : `${total}, ${shown === 0 ? "none" : shown} shown`;
}

function title(severity: Severity): string {
  return severity[0]!.toUpperCase() + severity.slice(1);
}

function byName(a: NodeResult, b: NodeResult): number {
  return compareText(a.name, b.name);
}
