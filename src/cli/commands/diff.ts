import { UsageError } from "../../errors.js";
import type { DriftItem, NodeResult } from "../../report/schema.js";
import { useColor } from "../options.js";
import { parse } from "../options.js";
import { AUDIT_OPTIONS, auditExitCode, runAudit } from "./audit.js";

const show = (value: unknown): string => (typeof value === "string" ? value : JSON.stringify(value));

/** One drift item as `-want +got` lines; files and units bring their own unified diff. */
export function itemDiff(item: DriftItem, verbose: boolean): string[] {
  const lines = item.diff
    ? item.diff.split("\n").filter((l) => !l.startsWith("Index:") && !l.startsWith("===="))
    : [`-${item.key} = ${show(item.declared)}`, `+${item.key} = ${show(item.live)}`];
  if (item.detail) lines.push(`# ${item.detail}`);
  if (verbose) lines.push(`# declared at ${item.source.file}:${item.source.line}; severity ${item.severity}`, `# remediation: ${item.remediation}`);
  return lines;
}

export function renderDiff(nodes: readonly NodeResult[], category: string, options: { verbose: boolean; color: boolean }): string {
  const paint = (line: string) =>
    !options.color ? line : line.startsWith("-") ? `\x1b[31m${line}\x1b[0m` : line.startsWith("+") ? `\x1b[32m${line}\x1b[0m` : line.startsWith("#") ? `\x1b[2m${line}\x1b[0m` : line;
  const out: string[] = [];
  for (const node of nodes) {
    if (node.status === "unreachable" || node.status === "error" || node.status === "maintenance") {
      out.push(`${node.name}: ${node.status}: ${node.error ?? ""}`);
      continue;
    }
    const unknown = node.unknown?.find((u) => u.domain === category);
    if (unknown) {
      out.push(`${node.name}: ${category} unknown: ${unknown.reason}`);
      continue;
    }
    if (!node.drift.length) {
      if (options.verbose) out.push(`${node.name}: ${category}: no drift`);
      continue;
    }
    out.push(`--- ${node.name} declared`, `+++ ${node.name} live`);
    for (const item of node.drift) out.push(...itemDiff(item, options.verbose).map(paint));
  }
  if (!out.length) out.push(`no ${category} drift on ${nodes.length} node${nodes.length === 1 ? "" : "s"}`);
  return `${out.join("\n")}\n`;
}

export async function diffCommand(argv: string[]): Promise<number> {
  const { node, ...auditOptions } = { node: { type: "string" as const }, ...AUDIT_OPTIONS };
  const { values } = parse("diff", argv, { node, ...auditOptions });
  if (!values.category || values.category.includes(",")) throw new UsageError("diff needs exactly one --category (sysctl, files, ...)");
  const { report } = await runAudit({ ...values, nodes: values.node ?? values.nodes });
  process.stdout.write(renderDiff(report.nodes, values.category, { verbose: values.verbose ?? false, color: useColor(values, process.stdout) }));
  return auditExitCode(report);
}
