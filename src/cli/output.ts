import { io } from "./io.js";
import { once } from "node:events";
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  openSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { UsageError } from "../errors.js";
import { FORMATS } from "../report/formats/index.js";
import type { NodeResult, Report } from "../report/schema.js";
import { useColor } from "./color.js";
import {
  cannotWrite,
  checkTarget,
  createIn,
  temporaryName,
  type ReportOutput,
} from "./output-options.js";
import { readerGone, writeDefused, writeWorkflowCommands } from "./stdout.js";

/**
 * Writes `text` to `out` atomically: a new temporary file in the same directory (O_EXCL, so never
 * through a link), then a rename over the target. Readers (node_exporter's textfile collector) see
 * the old file or the new one, never half of it; a link planted meanwhile is replaced, not
 * followed. The checks and writes are synchronous: at the end of a run nothing else waits for the
 * event loop, and each would be a round trip to the thread pool.
 */
export async function writeOut(out: string, text: string | AsyncIterable<string>): Promise<void> {
  const { dir, special } = checkTarget(out);
  if (special) return writeSpecial(out, text);
  const temporary = temporaryName(out);
  const fd = createIn(out, dir, temporary);
  try {
    try {
      await writeAll(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, out);
  } catch (error) {
    try {
      unlinkSync(temporary);
    } catch {
      // Never made or already gone: nothing is left behind either way.
    }
    throw cannotWrite(out, error);
  }
}

/**
 * Writes `text` to the character device or pipe `out` as it is (opened without following a link
 * planted since the check). Whatever else it has become by then is refused.
 */
async function writeSpecial(out: string, text: string | AsyncIterable<string>): Promise<void> {
  let fd: number;
  try {
    fd = openSync(out, constants.O_WRONLY | constants.O_NOFOLLOW);
  } catch (error) {
    throw cannotWrite(out, error);
  }
  try {
    const opened = fstatSync(fd);
    if (!opened.isCharacterDevice() && !opened.isFIFO())
      throw new UsageError(`--out ${out} changed while the report was made; not written`);
    await writeAll(fd, text).catch((error: unknown) => {
      throw cannotWrite(out, error);
    });
  } finally {
    closeSync(fd);
  }
}

/** `text` written whole to `fd`: a stream's pieces gathered first (batched). */
async function writeAll(fd: number, text: string | AsyncIterable<string>): Promise<void> {
  if (typeof text === "string") writeFileSync(fd, text);
  else for await (const chunk of batched(text)) writeFileSync(fd, chunk);
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
  const format = await FORMATS[values.format]();
  const text = format.render(report, renderOptions(values));
  if (values.out) await writeOut(values.out, text);
  // GitHub annotations are the workflow commands meant to run.
  else if (format.workflowCommands) writeWorkflowCommands(text);
  else if (format.runnerEscapes) writeDefused(text, format.runnerEscapes);
  else io().stdout.write(text);
}

// A streamed report's pieces (a node's entry each) are written this many characters or more at a
// time, not a system call per node.
const WRITE_CHARS = 256 * 1024;

/** The pieces joined into strings of at least WRITE_CHARS characters (the last one shorter). */
async function* batched(pieces: AsyncIterable<string>): AsyncGenerator<string> {
  let joined: string[] = [];
  let chars = 0;
  for await (const piece of pieces) {
    joined.push(piece);
    chars += piece.length;
    if (chars < WRITE_CHARS) continue;
    yield joined.join("");
    joined = [];
    chars = 0;
  }
  if (joined.length > 0) yield joined.join("");
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
  const { stream } = await FORMATS[values.format]();
  if (!stream) {
    const all: NodeResult[] = [];
    for await (const node of nodes()) all.push(node);
    return writeReport({ ...head, nodes: all }, values);
  }
  const chunks = stream(head, nodes(), renderOptions(values));
  if (values.out) return writeOut(values.out, chunks);
  for await (const chunk of batched(chunks)) {
    if (readerGone()) return;
    // A closed pipe ends the wait with an error the listener above has taken note of.
    if (!io().stdout.write(chunk)) await once(io().stdout, "drain").catch(() => undefined);
  }
}
