import type { NodeResult, Report } from "../schema.js";
import type { Renderer } from "./format.js";

export const renderJson: Renderer = (report) => `${JSON.stringify(report, null, 2)}\n`;

/**
 * The text renderJson writes, piece by piece: `head` gives every field but the nodes, in order,
 * and the nodes arrive one at a time, so no more than one is held.
 */
export async function* jsonChunks(
  head: Report,
  nodes: AsyncIterable<NodeResult> | Iterable<NodeResult>,
): AsyncGenerator<string> {
  let fields = 0;
  for (const [key, value] of Object.entries(head)) {
    if (value === undefined) continue;
    yield `${fields++ === 0 ? "{" : ","}\n  ${JSON.stringify(key)}: `;
    if (key !== "nodes") {
      yield indented(value, 1);
      continue;
    }
    let count = 0;
    for await (const node of nodes) yield `${count++ === 0 ? "[" : ","}\n    ${indented(node, 2)}`;
    yield count === 0 ? "[]" : "\n  ]";
  }
  yield fields === 0 ? "{}\n" : "\n}\n";
}

/**
 * A value as JSON.stringify(..., 2) writes it `depth` levels down: a raw newline only ever starts a
 * line.
 */
const indented = (value: unknown, depth: number) =>
  JSON.stringify(value, null, 2).replaceAll("\n", `\n${"  ".repeat(depth)}`);
