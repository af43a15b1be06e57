// Every output format shares one signature (format.ts) and is registered here.
import type { RunnerEscapes } from "../../text/escape.js";
import type { FormatName, Renderer, RenderOptions } from "./format.js";
import type { NodeResult, Report } from "../schema.js";
import { renderFleetPage } from "../fleet-page/page.js";
import { emptyRuns } from "../runs.js";
import { renderEvents } from "./events.js";
import { renderGithub } from "./github.js";
import { jsonChunks, renderJson } from "./json.js";
import { JUNIT_RUNNER_ESCAPES, renderJunit } from "./junit.js";
import { renderMarkdownFormat } from "./markdown.js";
import { PROMETHEUS_RUNNER_ESCAPES, renderPrometheus } from "./prometheus.js";
import { renderText, textChunks } from "./text.js";

export const FORMATS = {
  text: renderText,
  json: renderJson,
  markdown: renderMarkdownFormat,
  junit: renderJunit,
  prometheus: renderPrometheus,
  events: renderEvents,
  github: renderGithub,
  // The fleet page of this run alone; `report --format html --history…` draws it over the runs before.
  html: (report) => renderFleetPage(report, emptyRuns()),
} satisfies Record<FormatName, Renderer>;

/**
 * Formats written as the nodes arrive, one at a time in name order, the text each renderer above
 * writes: the others need every node at once.
 */
export const STREAMED: Partial<
  Record<
    FormatName,
    (
      head: Report,
      nodes: AsyncIterable<NodeResult> | Iterable<NodeResult>,
      options: RenderOptions,
    ) => AsyncIterable<string>
  >
> = {
  json: (head, nodes) => jsonChunks(head, nodes),
  text: textChunks,
};

/** Formats whose own escapes defuse a runner command on stdout (the others use JSON's `\u005b`). */
export const RUNNER_ESCAPES: Partial<Record<FormatName, RunnerEscapes>> = {
  junit: JUNIT_RUNNER_ESCAPES,
  prometheus: PROMETHEUS_RUNNER_ESCAPES,
};
