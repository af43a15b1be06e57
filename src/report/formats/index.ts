// Every output format shares one signature (format.ts) and is registered here.
import type { Renderer } from "./format.js";
import { renderEvents } from "./events.js";
import { renderGithub } from "./github.js";
import { renderJson } from "./json.js";
import { renderJunit } from "./junit.js";
import { renderMarkdownFormat } from "./markdown.js";
import { renderPrometheus } from "./prometheus.js";
import { renderText } from "./text.js";

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
