import { io } from "./io.js";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  lstatSync,
  openSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  type Stats,
} from "node:fs";
import path from "node:path";
import { UsageError } from "../errors.js";
import { FORMATS, isFormatName, RUNNER_ESCAPES, STREAMED } from "../report/formats/index.js";
import type { NodeResult, Report } from "../report/schema.js";
import { switchFlag, textFlag, type Config, type Flag } from "./flags.js";
import { useColor } from "./options.js";
import { readerGone, writeDefused, writeWorkflowCommands } from "./stdout.js";

type FormatName = keyof typeof FORMATS;

/** `--format`, `fallback` when absent. */
export function formatFlag(
  fallback: FormatName,
  help = `text, json, markdown, junit, prometheus, events or github (default: ${fallback})`,
): Flag<FormatName> {
  return {
    type: "string",
    value: "FORMAT",
    help,
    read: (given) => {
      const name = (given as string | undefined) ?? fallback;
      if (!isFormatName(name))
        throw new UsageError(
          `unknown --format "${name}"; formats: ${Object.keys(FORMATS).join(", ")}`,
        );
      return name;
    },
  };
}

export const OUT_FLAG = textFlag("FILE", "write the output to FILE instead of stdout");

/** Where a report goes and how it looks. */
export const OUTPUT_FLAGS = {
  format: formatFlag("text"),
  out: OUT_FLAG,
  verbose: switchFlag("show diffs and remediation for every drift item"),
  color: switchFlag("colours even when the output is not a terminal (FORCE_COLOR works too)"),
  "no-color": switchFlag("no colours, even on a terminal (NO_COLOR works too)"),
};

type ReportOutput = Config<typeof OUTPUT_FLAGS> & { maxBytes?: number };

const errnoCode = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error);

/**
 * Checks `--out FILE` before any work is done: its directory exists and takes a new file, and FILE
 * is not a symbolic link or a directory. A link is refused rather than written through (a planted
 * link would make the write land on its target) or silently replaced (its owner meant something).
 * A character device or a pipe (`/dev/null`, a FIFO a collector reads) is written to as it is, as
 * a shell's redirection would: only a file is replaced. Async for its callers, who await a
 * rejection; its system calls are synchronous (see checkTarget).
 */
export async function checkOut(out: string | undefined): Promise<void> {
  if (out === undefined) return;
  const { dir, special } = checkTarget(out);
  if (special) {
    try {
      accessSync(out, constants.W_OK);
    } catch (error) {
      throw new UsageError(`--out ${out}: cannot write (${errnoCode(error)})`);
    }
    return;
  }
  // The only sure test of "can write here" is writing: a probe file, removed at once.
  const probe = temporaryName(out);
  closeSync(createIn(out, dir, probe));
  unlinkSync(probe);
}

/**
 * checkOut's tests but the probe file: `out`'s directory, and whether `out` is a character device
 * or a pipe. Synchronous: a few system calls, each of which would otherwise be a round trip to the
 * thread pool.
 */
function checkTarget(out: string): { dir: string; special: boolean } {
  if (out === "") throw new UsageError("--out needs a file name");
  const dir = path.dirname(path.resolve(out));
  const dirStat = statOrNot(() => statSync(dir));
  if (!dirStat) throw new UsageError(`--out ${out}: directory ${dir} does not exist`);
  if (!dirStat.isDirectory()) throw new UsageError(`--out ${out}: ${dir} is not a directory`);
  const target = statOrNot(() => lstatSync(out));
  if (target?.isSymbolicLink()) {
    throw new UsageError(
      `--out ${out} is a symbolic link; refusing to write through it (remove it or name the real file)`,
    );
  }
  if (target?.isDirectory()) throw new UsageError(`--out ${out} is a directory`);
  if (target && !target.isFile() && !target.isCharacterDevice() && !target.isFIFO())
    throw new UsageError(`--out ${out} is not a file, a character device or a pipe`);
  return { dir, special: target !== undefined && !target.isFile() };
}

/** What a stat call gives, or nothing for any error (as a missing file). */
const statOrNot = (call: () => Stats) => {
  try {
    return call();
  } catch {
    return undefined;
  }
};

/** A new file in `dir` (O_EXCL, so never through a link), open for writing. */
function createIn(out: string, dir: string, file: string): number {
  try {
    return openSync(file, "wx", 0o644);
  } catch (error) {
    throw new UsageError(`--out ${out}: cannot create a file in ${dir} (${errnoCode(error)})`);
  }
}

const temporaryName = (out: string) =>
  path.join(
    path.dirname(out),
    `.${path.basename(out)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`,
  );

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
    throw new UsageError(`--out ${out}: cannot write (${errnoCode(error)})`);
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
    throw new UsageError(`--out ${out}: cannot write (${errnoCode(error)})`);
  }
  try {
    const opened = fstatSync(fd);
    if (!opened.isCharacterDevice() && !opened.isFIFO())
      throw new UsageError(`--out ${out} changed while the report was made; not written`);
    await writeAll(fd, text).catch((error: unknown) => {
      throw new UsageError(`--out ${out}: cannot write (${errnoCode(error)})`);
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
  const stream = STREAMED[values.format];
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
