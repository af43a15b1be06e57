// Every output format shares one contract (format.ts) and is registered here. Each is loaded when a
// run asks for it: a run writes one format, and loading them all cost an audit about 20 ms of CPU
// once its first node had answered (the fleet page's run history schemas alone about 17).
import type { RunnerEscapes } from "../../text/escape.js";
import type { FormatName, Renderer, RenderOptions } from "./format.js";
import type { NodeResult, Report } from "../schema.js";

export interface Format {
  render: Renderer;
  /**
   * The same text written as the nodes arrive, one at a time in name order; a format without it
   * needs every node at once.
   */
  stream?: (
    head: Report,
    nodes: AsyncIterable<NodeResult> | Iterable<NodeResult>,
    options: RenderOptions,
  ) => AsyncIterable<string>;
  /** Its own escapes defuse a runner command on stdout (the others use JSON's `\u005b`). */
  runnerEscapes?: RunnerEscapes;
  /** Its lines are the workflow commands meant to run (GitHub annotations). */
  workflowCommands?: true;
}

export const FORMATS: Record<FormatName, () => Promise<Format>> = {
  text: async () => {
    const { renderText, textChunks } = await import("./text.js");
    return { render: renderText, stream: textChunks };
  },
  json: async () => {
    const { renderJson, jsonChunks } = await import("./json.js");
    return { render: renderJson, stream: (head, nodes) => jsonChunks(head, nodes) };
  },
  markdown: async () => ({ render: (await import("./markdown.js")).renderMarkdownFormat }),
  junit: async () => {
    const { renderJunit, JUNIT_RUNNER_ESCAPES } = await import("./junit.js");
    return { render: renderJunit, runnerEscapes: JUNIT_RUNNER_ESCAPES };
  },
  prometheus: async () => {
    const { renderPrometheus, PROMETHEUS_RUNNER_ESCAPES } = await import("./prometheus.js");
    return { render: renderPrometheus, runnerEscapes: PROMETHEUS_RUNNER_ESCAPES };
  },
  events: async () => ({ render: (await import("./events.js")).renderEvents }),
  github: async () => ({
    render: (await import("./github.js")).renderGithub,
    workflowCommands: true,
  }),
  // The fleet page of this run alone; `report --format html --history…` draws it over the runs before.
  html: async () => {
    const [{ renderFleetPage }, { emptyRuns }] = await Promise.all([
      import("../fleet-page/page.js"),
      import("../runs.js"),
    ]);
    return { render: (report) => renderFleetPage(report, emptyRuns()) };
  },
};
