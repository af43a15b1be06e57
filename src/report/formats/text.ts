// The human view: grouped by node, worst drift first, a `-want +got` diffs.
import { causeLine } from "../cause-line.js";
import type { NodeResult, NodeStatus, Report, DriftItem } from "../schema.js";
import type { Severity } from "../../domains/domain.js";
import { latentOnly } from "../../domains/latent-words.js";
import { latentSentence } from "../../domains/registry.js";
import { isLatent } from "../tally.js";
import { visible } from "../../text/escape.js";
import {
  compactDeclared,
  compactLive,
  compareDrift,
  compareText,
  plural,
  unauditedText,
} from "./common.js";
import type { Renderer, RenderOptions } from "./format.js";

const SGR = { red: 31, green: 32, yellow: 33, blue: 34, cyan: 36, bold: 1, dim: 2 } as const;
type Style = keyof typeof SGR;

const SEVERITY_STYLE: Record<Severity, Style[]> = {
  critical: ["bold", "red"],
  high: ["red"],
  medium: ["yellow"],
  low: ["cyan"],
};
const STATUS_STYLE: Record<NodeStatus, Style[]> = {
  clean: ["green"],
  drift: ["yellow"],
  unreachable: ["red"],
  error: ["red"],
  maintenance: ["blue"],
};

// Past this width a value is cut in the default view; --verbose shows it whole.
const VALUE_CHARS = 100;
// How much of the line the collapsed list of clean node names may use.
const CLEAN_NAMES_CHARS = 72;

export const renderText: Renderer = (report, options) => {
  const view = new TextView(options);
  const blocks = [...report.nodes].sort(byNodeName).map((node) => view.add(node));
  return blocks.join("") + view.end(report);
};

/**
 * The text a report's nodes make, arriving one at a time in name order: as renderText writes it,
 * with only the counts of the summary line and the clean names it shows held.
 */
export async function* textChunks(
  head: Report,
  nodes: AsyncIterable<NodeResult> | Iterable<NodeResult>,
  options: RenderOptions,
): AsyncGenerator<string> {
  const view = new TextView(options);
  for await (const node of nodes) {
    const block = view.add(node);
    if (block) yield block;
  }
  yield view.end(head);
}

const byNodeName = (a: NodeResult, b: NodeResult) => compareText(a.name, b.name);

/** The text view, node by node: each node's block as it comes, then the lines after them all. */
class TextView {
  private readonly paint: Paint;
  private readonly clean = new CleanNames();
  private retried = 0;
  private partial = 0;
  private unknown = 0;
  private readonly unknownDomains = new Set<string>();

  constructor(private readonly options: RenderOptions) {
    this.paint = (styles, text) =>
      options.color ? `\x1b[${styles.map((s) => SGR[s]).join(";")}m${text}\x1b[0m` : text;
  }

  /** The node's block and the blank line after it; nothing for a clean node unless verbose. */
  add(node: NodeResult): string {
    const latent = node.drift.filter(isLatent).length;
    for (const { domain } of node.unknown ?? []) {
      this.unknown++;
      this.unknownDomains.add(domain);
    }
    // A clean node with latent items shows them: clean now, they say what the next event changes.
    if (node.status === "clean" && latent === 0 && !this.options.verbose) {
      this.clean.add(node);
      if ((node.tries ?? 1) > 1) this.retried++;
      if (node.unknown?.length) this.partial++;
      return "";
    }
    return `${renderNode(node, this.options, this.paint)}\n\n`;
  }

  /** What follows the nodes: the clean ones collapsed, then the summary line. */
  end(head: Report): string {
    const { paint } = this;
    const tail: string[] = [];
    if (this.clean.count > 0) tail.push(paint(["green"], this.clean.line()));
    if (this.retried > 0) {
      const those = this.retried === 1 ? "it" : "them";
      tail.push(
        paint(
          ["dim"],
          `${plural(this.retried, "clean node")} answered only after SSH connection retries (--verbose lists ${those})`,
        ),
      );
    }
    if (this.partial > 0) {
      const those = this.partial === 1 ? "it" : "them";
      tail.push(
        paint(
          ["dim"],
          `${plural(this.partial, "clean node")} could not show some domains (--verbose lists ${those})`,
        ),
      );
    }
    tail.push(this.summaryLine(head));
    return `${tail.join("\n")}\n`;
  }

  /**
   * "12 nodes: 9 clean, 2 drifted, 5 drift items, 3 acknowledged, 1 unreachable, 2 items unknown
   * (files)": the items as the summary counts them, acknowledged (waived or ticketed) drift apart, and
   * what could not be read; zero counts are left out.
   */
  private summaryLine(head: Report): string {
    const s = head.summary;
    const unknownDomains = [...this.unknownDomains].sort(compareText).join(", ");
    const parts = [
      s.clean > 0 ? `${s.clean} clean` : "",
      s.drifted > 0 ? `${s.drifted} drifted` : "",
      s.driftItems > 0 ? plural(s.driftItems, "drift item") : "",
      s.acknowledgedItems > 0 ? `${s.acknowledgedItems} acknowledged` : "",
      s.latentItems > 0 ? `${s.latentItems} latent` : "",
      s.unreachable > 0 ? `${s.unreachable} unreachable` : "",
      s.errors > 0 ? plural(s.errors, "error") : "",
      s.maintenance > 0 ? `${s.maintenance} in maintenance` : "",
      this.unknown > 0 ? `${plural(this.unknown, "item")} unknown (${unknownDomains})` : "",
    ].filter(Boolean);
    const dirty = head.manifestDirty ? "; the manifests audited have uncommitted changes" : "";
    const over = head.unauditedBudget?.over;
    const budget = over ? `\nmore nodes not audited than allowed: ${visible(over.join("; "))}` : "";
    return `${plural(s.nodes, "node")}${parts.length > 0 ? `: ${parts.join(", ")}` : ""}${dirty}${budget}`;
  }
}

/** The clean nodes as one line: as many names as fit, then how many more. */
class CleanNames {
  count = 0;
  private readonly names: string[] = [];
  private used = 0;
  private full = false;
  private only: NodeResult["checked"];

  add(node: NodeResult): void {
    if (this.count++ === 0) this.only = node.checked;
    if (this.full) return;
    const name = visible(node.name);
    if (this.names.length > 0 && this.used + name.length + 2 > CLEAN_NAMES_CHARS) {
      this.full = true;
      return;
    }
    this.names.push(name);
    this.used += name.length + 2;
  }

  line(): string {
    const rest = this.count - this.names.length;
    const only = this.count === 1 && this.only ? ` (${checkedText(this.only)})` : "";
    return `${plural(this.count, "clean node")}: ${this.names.join(", ")}${rest > 0 ? `, … and ${rest} more` : ""}${only}`;
  }
}

type Paint = (styles: readonly Style[], text: string) => string;

function renderNode(node: NodeResult, options: RenderOptions, paint: Paint): string {
  const name = visible(node.name) + (node.host !== node.name ? ` (${visible(node.host)})` : "");
  const checked = node.status === "clean" && node.checked ? ` (${checkedText(node.checked)})` : "";
  const errorClass = node.errorClass ? ` (${node.errorClass})` : "";
  const facts = [paint(STATUS_STYLE[node.status], node.status) + errorClass + checked];
  const latent = node.drift.filter(isLatent).length;
  if (node.drift.length > latent) facts.push(plural(node.drift.length - latent, "item"));
  if (latent > 0) facts.push(`${latent} latent`);
  if (node.unknown?.length) facts.push(`${node.unknown.length} unknown`);
  if (node.tries !== undefined && node.tries > 1) facts.push(`${node.tries} SSH tries`);
  if (node.unaudited) facts.push(unauditedText(node.unaudited));
  facts.push(formatDuration(node.durationMs));
  const lines = [`${paint(["bold"], name)}: ${facts.join(", ")}`];
  if (node.error !== undefined) {
    const style: Style[] = node.status === "maintenance" ? ["dim"] : ["red"];
    const label = node.status === "maintenance" ? "" : "error: ";
    node.error.split("\n").forEach((line, i) => {
      lines.push(paint(style, `  ${i === 0 ? label : " ".repeat(label.length)}${visible(line)}`));
    });
  }
  // Appended line by line: a diff of a file rewritten whole has more lines than a call's arguments
  // may.
  for (const item of [...node.drift].sort(compareDrift))
    for (const line of renderItem(item, options, paint)) lines.push(line);
  for (const { domain, reason } of node.unknown ?? []) {
    lines.push(paint(["dim"], `  ${domain}: unknown (${visible(reason)})`));
  }
  return lines.join("\n");
}

function renderItem(item: DriftItem, options: RenderOptions, paint: Paint): string[] {
  const width = options.verbose ? Infinity : VALUE_CHARS;
  const declared = visible(compactDeclared(item, width));
  const live = visible(compactLive(item, width));
  const tag = paint(SEVERITY_STYLE[item.severity], `[${item.severity}]`);
  const mark = item.acknowledged ? ` ${paint(["dim"], "(acknowledged)")}` : "";
  // Latent only: live as declared, so what it is now and what the event changes.
  const lines = [
    latentOnly(item)
      ? `  ${tag} ${item.domain} ${visible(item.key)}: ${live} now; ${latentSentence({ ...item, domain: item.domain }, visible)}${latentTicket(item)}${mark}`
      : `  ${tag} ${item.domain} ${visible(item.key)}: declared ${declared}, live ${live}${mark}`,
  ];
  if (item.detail) lines.push(`    ${visible(item.detail)}`);
  if (item.latent && !latentOnly(item))
    lines.push(`    then ${latentSentence({ ...item, latent: item.latent }, visible)}`);
  if (item.cause) lines.push(`    ${causeLine(item.cause, visible)}`);
  if (item.firstSeen) lines.push(paint(["dim"], `    drifting since ${item.firstSeen}`));
  if (item.acknowledged && item.acknowledgedBy)
    lines.push(paint(["dim"], `    acknowledged by ${visible(item.acknowledgedBy)}`));
  if (item.lapsed) lines.push(`    no longer acknowledged: ${visible(item.lapsed)}`);
  lines.push(paint(["dim"], `    (declared at ${visible(item.source.file)}:${item.source.line})`));
  if (options.verbose) lines.push(`    remediation: ${visible(item.remediation)}`);
  if (item.diff) for (const line of renderDiff(item, paint)) lines.push(line);
  return lines;
}

/** Latent drift the policy tickets: shown, and said not to count as drift. */
function latentTicket(item: DriftItem): string {
  return item.latentPolicy === "ticket" ? " (a ticket, not counted as drift)" : "";
}

/**
 * A file's or unit's unified diff, headed by its key (the path or unit name) instead of the
 * `want`/`got` placeholders; raw host text: escape each line before printing it.
 */
export function headedDiff(item: Pick<DriftItem, "key" | "diff">): string[] {
  return (item.diff ?? "")
    .replace(/\n$/, "")
    .split("\n")
    .filter((line) => !line.startsWith("Index:") && !line.startsWith("===="))
    .map((line) =>
      line === "--- want"
        ? `--- ${item.key} (declared)`
        : line === "+++ got"
          ? `+++ ${item.key} (live)`
          : line,
    );
}

function renderDiff(item: DriftItem, paint: Paint): string[] {
  return headedDiff(item).map((raw) => {
    const line = `    ${visible(raw)}`;
    if (raw.startsWith("---") || raw.startsWith("+++")) return paint(["bold"], line);
    if (raw.startsWith("@@")) return paint(["cyan"], line);
    if (raw.startsWith("-")) return paint(["red"], line);
    if (raw.startsWith("+")) return paint(["green"], line);
    return line;
  });
}

/** "14 items in 5 domains": what a node's audit compared. */
function checkedText(checked: NonNullable<NodeResult["checked"]>): string {
  return `${plural(checked.items, "item")} in ${plural(checked.domains, "domain")}`;
}

function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, "0")}s`;
}
