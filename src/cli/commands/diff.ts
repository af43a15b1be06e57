import { io } from "../io.js";
import { UsageError } from "../../errors.js";
import type { DriftItem, NodeResult } from "../../report/schema.js";
import { headedDiff } from "../../report/formats/text.js";
import { visible } from "../../text/escape.js";
import { parseFlags, saying } from "../flags.js";
import { useColor } from "../color.js";
import { CATEGORY_FLAG, nodeGlobs } from "../options.js";
import { writeOut } from "../output.js";
import { checkOut } from "../output-options.js";
import { runAudit } from "../../runs/audit.js";
import { AUDIT_FLAGS, auditOptions, type AuditRunConfig } from "../audit-options.js";
import { auditExitCode } from "../exit.js";

const show = (value: unknown): string =>
  typeof value === "string" ? value : JSON.stringify(value);

/**
 * One drift item as `-want +got` lines; files and units bring their own unified diff, headed by
 * the item's key (the file's path or the unit's name). Every line is host text: escaped.
 */
function itemDiff(item: DriftItem, verbose: boolean): string[] {
  const lines = item.diff
    ? headedDiff(item)
    : [`-${item.key} = ${show(item.declared)}`, `+${item.key} = ${show(item.live)}`];
  if (item.detail) lines.push(`# ${item.detail}`);
  if (verbose)
    lines.push(
      `# declared at ${item.source.file}:${item.source.line}; severity ${item.severity}`,
      `# remediation: ${item.remediation}`,
    );
  return lines.map((line) => visible(line));
}

function renderDiff(
  nodes: readonly NodeResult[],
  category: string,
  options: { verbose: boolean; color: boolean },
): string {
  const paint = (line: string) =>
    !options.color
      ? line
      : line.startsWith("-")
        ? `\x1b[31m${line}\x1b[0m`
        : line.startsWith("+")
          ? `\x1b[32m${line}\x1b[0m`
          : line.startsWith("#")
            ? `\x1b[2m${line}\x1b[0m`
            : line;
  const out: string[] = [];
  for (const node of nodes) {
    if (node.status === "unreachable" || node.status === "error" || node.status === "maintenance") {
      out.push(visible(`${node.name}: ${node.status}: ${node.error ?? ""}`));
      continue;
    }
    const unknown = node.unknown?.find((u) => u.domain === category);
    if (unknown) {
      out.push(visible(`${node.name}: ${category} unknown: ${unknown.reason}`));
      continue;
    }
    if (!node.drift.length) {
      if (options.verbose) out.push(`${node.name}: ${category}: no drift`);
      continue;
    }
    out.push(`--- ${node.name} declared`, `+++ ${node.name} live`);
    // Line by line: a file rewritten whole has more lines than a call's arguments may.
    for (const item of node.drift)
      for (const line of itemDiff(item, options.verbose)) out.push(paint(line));
  }
  if (!out.length)
    out.push(`no ${category} drift on ${nodes.length} node${nodes.length === 1 ? "" : "s"}`);
  return `${out.join("\n")}\n`;
}

// The audit's flags but its output's format (a diff is its own) and shards (a diff is read by a
// person, not merged).
const { format: _format, shard: _shard, ...DIFF_AUDIT_FLAGS } = AUDIT_FLAGS;

const DIFF_FLAGS = {
  node: {
    ...nodeGlobs("NAME", "the node to look at (or --nodes for several)"),
    excludes: { nodes: "diff takes --node NAME or --nodes LIST, not both" },
  },
  ...DIFF_AUDIT_FLAGS,
  category: saying(CATEGORY_FLAG, "the one domain to show: sysctl, files, ...", "DOMAIN"),
};

/** `diff`'s argv as its config: one domain, and the audit run that shows it. */
function diffConfig(argv: string[]) {
  const { config } = parseFlags("diff", argv, DIFF_FLAGS);
  const { node, category, ...rest } = config;
  if (category?.length !== 1)
    throw new UsageError("diff needs exactly one --category (sysctl, files, ...)");
  const run: AuditRunConfig = {
    ...rest,
    category,
    nodes: node ?? config.nodes,
    shard: undefined,
  };
  return { ...config, domain: category[0]!, run };
}

export async function diffCommand(argv: string[]): Promise<number> {
  const config = diffConfig(argv);
  await checkOut(config.out);
  const { report } = await runAudit(auditOptions(config.run));
  const color = !config.out && useColor(config, io().stdout);
  const text = renderDiff(report.nodes, config.domain, { verbose: config.verbose, color });
  if (config.out) await writeOut(config.out, text);
  else io().stdout.write(text);
  return auditExitCode(report);
}
