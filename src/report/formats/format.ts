// The contract every output format implements; the formats and their list in index.ts import it.
import type { Report } from "../schema.js";

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
