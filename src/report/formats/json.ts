import type { NodeResult, Report } from "../schema.js";
import type { Renderer } from "./format.js";

// A report's JSON: its fields indented as JSON.stringify(..., 2) writes them, and each node entry
// on one line of its own, compact (a string's newlines are escapes, so a line is a node): a third
// smaller than indenting the entries too, and one node a line for grep and diff.

export const renderJson: Renderer = (report) => {
  const { before, after } = frame(report);
  return `${before}${report.nodes.map(nodeLine).join("")}${closing(report.nodes.length)}${after}`;
};

/**
 * The text renderJson writes, piece by piece: `head` gives every field but the nodes, in order,
 * and the nodes arrive one at a time, so no more than one is held.
 */
export async function* jsonChunks(
  head: Report,
  nodes: AsyncIterable<NodeResult> | Iterable<NodeResult>,
): AsyncGenerator<string> {
  const { before, after } = frame(head);
  yield before;
  let count = 0;
  for await (const node of nodes) yield nodeLine(node, count++);
  yield closing(count);
  yield after;
}

const nodeLine = (node: NodeResult, index: number) =>
  `${index === 0 ? "[" : ","}\n    ${JSON.stringify(node)}`;

const closing = (count: number) => (count === 0 ? "[]" : "\n  ]");

/** The report's text before its nodes' array and after it. */
function frame(head: Report): { before: string; after: string } {
  let before = "";
  let after = "";
  let fields = 0;
  let nodesSeen = false;
  for (const [key, value] of Object.entries(head)) {
    if (value === undefined) continue;
    const start = `${fields++ === 0 ? "{" : ","}\n  ${JSON.stringify(key)}: `;
    if (key === "nodes") {
      before += start;
      nodesSeen = true;
    } else if (nodesSeen) after += start + indented(value, 1);
    else before += start + indented(value, 1);
  }
  return { before, after: `${after}\n}\n` };
}

/**
 * A value as JSON.stringify(..., 2) writes it `depth` levels down: a raw newline only ever starts a
 * line.
 */
const indented = (value: unknown, depth: number) =>
  JSON.stringify(value, null, 2).replaceAll("\n", `\n${"  ".repeat(depth)}`);
