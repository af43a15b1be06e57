// GitHub Actions workflow commands (`::error file=…,line=…::message`) that annotate the manifest
// line declaring each drifted value. GitHub shows at most 10 error annotations per step (50 per
// job), so only the worst drift is annotated; the job summary and the report carry the rest.
import type { Severity } from "../../domains/domain.js";
import type { DriftItem, NodeResult } from "../schema.js";
import { visible } from "../../text/escape.js";
import { compactDeclared, compactLive, compareText, plural, severityRank } from "./common.js";
import type { Renderer } from "./format.js";

export const MAX_ANNOTATIONS_PER_STEP = 10;

export type AnnotationLevel = "error" | "warning" | "notice";

export interface Annotation {
  level: AnnotationLevel;
  message: string;
  title?: string;
  file?: string;
  line?: number;
  col?: number;
}

// GitHub's escaping for workflow commands: data escapes %, CR and LF; properties also : and ,.
const escapeData = (text: string) =>
  text.replaceAll("%", "%25").replaceAll("\r", "%0D").replaceAll("\n", "%0A");
const escapeProperty = (text: string) =>
  escapeData(text).replaceAll(":", "%3A").replaceAll(",", "%2C");

export function workflowCommand(annotation: Annotation): string {
  const props = [
    annotation.file !== undefined ? `file=${escapeProperty(visible(annotation.file))}` : "",
    annotation.line !== undefined ? `line=${annotation.line}` : "",
    annotation.col !== undefined ? `col=${annotation.col}` : "",
    annotation.title !== undefined ? `title=${escapeProperty(visible(annotation.title))}` : "",
  ].filter(Boolean);
  return `::${annotation.level}${props.length ? ` ${props.join(",")}` : ""}::${escapeData(visible(annotation.message, { multiline: true }))}`;
}

/** At most `max` workflow commands; past it, the last slot says how many were left out. */
export function capAnnotations(
  annotations: readonly Annotation[],
  leftOutWhere: string,
  max = MAX_ANNOTATIONS_PER_STEP,
): string {
  const shown = annotations.length > max ? annotations.slice(0, max - 1) : annotations;
  const lines = shown.map(workflowCommand);
  if (shown.length < annotations.length) {
    lines.push(
      workflowCommand({
        level: "notice",
        message: `${plural(annotations.length - shown.length, "more finding")} ${leftOutWhere}`,
      }),
    );
  }
  return lines.length ? `${lines.join("\n")}\n` : "";
}

const LEVEL: Record<Severity, AnnotationLevel> = {
  critical: "error",
  high: "error",
  medium: "warning",
  low: "notice",
};

interface Finding {
  rank: number;
  annotation: Annotation;
}

/**
 * Identical drift declared at one line (a group's value drifted on several nodes) is one
 * annotation.
 */
function driftFindings(nodes: readonly NodeResult[]): Finding[] {
  const groups = new Map<string, { item: DriftItem; names: string[] }>();
  for (const node of nodes) {
    for (const item of node.drift) {
      if (item.acknowledged) continue;
      const key = JSON.stringify([
        item.source.file,
        item.source.line,
        item.domain,
        item.key,
        item.declared,
        item.live,
      ]);
      const group = groups.get(key) ?? { item, names: [] };
      group.names.push(node.name);
      groups.set(key, group);
    }
  }
  return [...groups.values()].map(({ item, names }) => {
    const sorted = names.sort(compareText);
    const where =
      sorted.length <= 3
        ? sorted.join(", ")
        : `${sorted.slice(0, 3).join(", ")} and ${sorted.length - 3} more`;
    return {
      // Several nodes drifting alike outrank one node at the same severity.
      rank: severityRank(item.severity) * 2 + (sorted.length > 1 ? 0 : 1),
      annotation: {
        level: LEVEL[item.severity],
        file: item.source.file,
        line: item.source.line,
        title: `${item.severity} ${item.domain} drift: ${item.key}`,
        message: `${where}: ${item.key} is declared ${compactDeclared(item, 200)} but live ${compactLive(item, 200)}${item.detail ? ` (${item.detail})` : ""}`,
      },
    };
  });
}

function unauditedFindings(nodes: readonly NodeResult[]): Finding[] {
  return nodes
    .filter((n) => n.status === "unreachable" || n.status === "error")
    .map((node) => ({
      // Right after critical drift: a node nobody could audit may hide anything.
      rank: 1.5,
      annotation: {
        level: "error",
        title: `${node.name} not audited`,
        message: `${node.name}: ${node.status}: ${node.error ?? "no detail"}`,
      },
    }));
}

export function annotationsFor(nodes: readonly NodeResult[]): Annotation[] {
  return [...driftFindings(nodes), ...unauditedFindings(nodes)]
    .sort((a, b) => a.rank - b.rank || compareText(a.annotation.message, b.annotation.message))
    .map((f) => f.annotation);
}

export const renderGithub: Renderer = (report) =>
  capAnnotations(annotationsFor(report.nodes), "in the job summary and the report artifact");
