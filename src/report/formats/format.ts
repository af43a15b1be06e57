// The contract every output format implements, and the formats' names; the formats and their list
// in index.ts import it. `--format` is checked against the names alone, without loading a renderer.
import type { Report } from "../schema.js";

/** The output formats, in the order an unknown `--format`'s error lists them; index.ts renders each. */
export const FORMAT_NAMES = [
  "text",
  "json",
  "markdown",
  "junit",
  "prometheus",
  "events",
  "github",
  "html",
] as const;
export type FormatName = (typeof FORMAT_NAMES)[number];

export function isFormatName(name: string): name is FormatName {
  return (FORMAT_NAMES as readonly string[]).includes(name);
}

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
