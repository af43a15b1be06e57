// Every output format shares one signature and is registered here.
import type { Report } from "../schema.js";
import { renderEvents } from "./events.js";
import { renderGithub } from "./github.js";
import { renderJson } from "./json.js";
import { renderJunit } from "./junit.js";
import { renderMarkdownFormat } from "./markdown.js";
import { renderPrometheus } from "./prometheus.js";
import { renderText } from "./text.js";

export interface RenderOptions {
  /** ANSI colors: only on a TTY, and never when NO_COLOR is set. */
  color: boolean;
  /** Show unchanged context and every item, not just a summary. */
  verbose: boolean;
  /**
   * Markdown only: the size cap in UTF-8 bytes (a PR body's by default; a job summary allows more).
   */
  maxBytes?: number;
}

export type Renderer = (report: Report, options: RenderOptions) => string;

export const FORMATS = {
  text: renderText,
  json: renderJson,
  markdown: renderMarkdownFormat,
  junit: renderJunit,
  prometheus: renderPrometheus,
  events: renderEvents,
  github: renderGithub,
} satisfies Record<string, Renderer>;

export type FormatName = keyof typeof FORMATS;

export function isFormatName(name: string): name is FormatName {
  return Object.hasOwn(FORMATS, name);
}
