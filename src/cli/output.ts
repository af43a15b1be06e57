import { io } from "./io.js";
import { once } from "node:events";
import { open, rename, unlink } from "node:fs/promises";
import { UsageError } from "../errors.js";
import { FORMATS, RUNNER_ESCAPES, STREAMED } from "../report/formats/index.js";
import type { NodeResult, Report } from "../report/schema.js";
import { useColor } from "./color.js";
import { checkOut, errnoCode, temporaryName, type ReportOutput } from "./output-options.js";
import { readerGone, writeDefused, writeWorkflowCommands } from "./stdout.js";

/**
 * Writes `text` to `out` atomically: a new temporary file in the same directory (O_EXCL, so never
 * through a link), then a rename over the target. Readers (node_exporter's textfile collector) see
 * the old file or the new one, never half of it; a link planted meanwhile is replaced, not
 * followed.
 */
export async function writeOut(out: string, text: string | AsyncIterable<string>): Promise<void> {
  await checkOut(out);
  const temporary = temporaryName(out);
  try {
    const handle = await open(temporary, "wx", 0o644);
    try {
      if (typeof text === "string") await handle.writeFile(text);
      else for await (const chunk of text) await handle.write(chunk);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, out);
  } catch (error) {
    await unlink(temporary).catch(() => {});
    throw new UsageError(`--out ${out}: cannot write (${errnoCode(error)})`);
  }
}

/** The render options `values` give. */
function renderOptions(values: ReportOutput) {
  return {
    color: !values.out && useColor(values, io().stdout),
    verbose: values.verbose,
    ...(values.maxBytes !== undefined && { maxBytes: values.maxBytes }),
  };
}

/** Renders the report to --out (atomically) or stdout. */
export async function writeReport(report: Report, values: ReportOutput): Promise<void> {
  const render = FORMATS[values.format];
  const text = render(report, renderOptions(values));
  if (values.out) await writeOut(values.out, text);
  // GitHub annotations are the workflow commands meant to run.
  else if (render === FORMATS.github) writeWorkflowCommands(text);
  else {
    const escapes = RUNNER_ESCAPES[values.format];
    if (escapes) writeDefused(text, escapes);
    else io().stdout.write(text);
  }
}

/**
 * Writes a report whose nodes come one at a time (name order): as JSON or text, piece by piece, so
 * the nodes are never all held; any other format needs them at once and renders them whole.
 */
export async function writeReportStream(
  head: Report,
  nodes: () => AsyncIterable<NodeResult> | Iterable<NodeResult>,
  values: ReportOutput,
): Promise<void> {
  const stream = STREAMED[values.format];
  if (!stream) {
    const all: NodeResult[] = [];
    for await (const node of nodes()) all.push(node);
    return writeReport({ ...head, nodes: all }, values);
  }
  const chunks = stream(head, nodes(), renderOptions(values));
  if (values.out) return writeOut(values.out, chunks);
  for await (const chunk of chunks) {
    if (readerGone()) return;
    // A closed pipe ends the wait with an error the listener above has taken note of.
    if (!io().stdout.write(chunk)) await once(io().stdout, "drain").catch(() => undefined);
  }
}
