// JSON lines for log and telemetry pipelines: one drift event per item, one per failed node.
import { driftEvent, nodeErrorEvent, type Event } from "../events.js";
import { compareDrift } from "./common.js";
import type { Renderer } from "./index.js";

export const renderEvents: Renderer = (report) => {
  const events: Event[] = [];
  for (const node of report.nodes) {
    for (const item of [...node.drift].sort(compareDrift)) events.push(driftEvent(node, item, report.finishedAt));
    if (node.status === "unreachable" || node.status === "error") {
      events.push(nodeErrorEvent(node, node.status, report.finishedAt));
    }
  }
  return events.map((e) => `${JSON.stringify(e)}\n`).join("");
};
