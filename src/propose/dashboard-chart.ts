import { NODE_STATUSES, type NodeStatus } from "../report/schema.js";

// The dashboard's one picture: the last runs' counts by status as a Mermaid chart, which GitHub
// draws itself in an issue body. Every label is the bot's own (times and numbers), never host text.

/** Runs shown: enough to see a trend, few enough for axis labels to stay readable. */
export const CHART_RUNS = 20;

export function statusMermaid(
  runs: readonly { at: string; counts: Record<NodeStatus, number> }[],
): string[] {
  const shown = runs.slice(-CHART_RUNS);
  if (shown.length < 2) return [];
  const max = Math.max(1, ...shown.flatMap((r) => NODE_STATUSES.map((s) => r.counts[s])));
  // "MM-DD HH:MM" in UTC: the run's own start.
  const labels = shown.map((r) => JSON.stringify(r.at.slice(5, 16).replace("T", " ")));
  return [
    `### Nodes by status, last ${shown.length} runs`,
    "",
    "```mermaid",
    "xychart-beta",
    `  x-axis [${labels.join(", ")}]`,
    `  y-axis "nodes" 0 --> ${max}`,
    ...NODE_STATUSES.map((s) => `  line [${shown.map((r) => r.counts[s]).join(", ")}]`),
    "```",
    "",
    `Lines, in Mermaid's colour order: ${NODE_STATUSES.join(", ")}.`,
    "",
  ];
}
