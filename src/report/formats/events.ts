// JSON lines for log and telemetry pipelines: one drift event per item, one per failed node.
import { driftEvent, nodeErrorEvent, type Event } from "../events.js";
import { compareDrift } from "./common.js";
import type { Renderer } from "./format.js";

// JSON.stringify leaves DEL, C1 controls (0x9b starts a terminal sequence), bidi and other format
// characters and the Unicode line separators raw: written as \u escapes, a log viewer shows them
// harmlessly and every JSON reader still reads the same string.
const RAW_IN_JSON = /[\u007f-\u009f\p{Cf}\u2028\u2029]/gu;

/** One event as a JSON line with only printable characters outside its escapes. */
export function eventLine(event: Event): string {
  const json = JSON.stringify(event).replace(RAW_IN_JSON, (char) =>
    // An astral format character (a tag) is two UTF-16 code units: two escapes.
    Array.from(
      { length: char.length },
      (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, "0")}`,
    ).join(""),
  );
  return `${json}\n`;
}

export const renderEvents: Renderer = (report) => {
  const events: Event[] = [];
  for (const node of report.nodes) {
    for (const item of [...node.drift].sort(compareDrift))
      events.push(driftEvent(node, item, report.finishedAt));
    if (node.status === "unreachable" || node.status === "error") {
      events.push(nodeErrorEvent(node, node.status, report.finishedAt));
    }
  }
  return events.map(eventLine).join("");
};
