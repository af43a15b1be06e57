// Where a report goes and how it looks: the flags, and `--out` checked before any work is done. The
// writing is output.ts, which loads every format: a command loads it when it has something to
// write, so an audit reaches its first node without it.
import { randomBytes } from "../crypto.js";
import {
  accessSync,
  closeSync,
  constants,
  lstatSync,
  openSync,
  statSync,
  unlinkSync,
  type Stats,
} from "node:fs";
import path from "node:path";
import { UsageError } from "../errors.js";
import { FORMAT_NAMES, isFormatName, type FormatName } from "../report/formats/format.js";
import { switchFlag, textFlag, type Config, type Flag } from "./flags.js";

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
        throw new UsageError(`unknown --format "${name}"; formats: ${FORMAT_NAMES.join(", ")}`);
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

export type ReportOutput = Config<typeof OUTPUT_FLAGS> & { maxBytes?: number };

const errnoCode = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error);

/** The error of an `--out` that could not be written, with the system's code for why. */
export const cannotWrite = (out: string, error: unknown) =>
  new UsageError(`--out ${out}: cannot write (${errnoCode(error)})`);

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
      throw cannotWrite(out, error);
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
export function checkTarget(out: string): { dir: string; special: boolean } {
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
export function createIn(out: string, dir: string, file: string): number {
  try {
    return openSync(file, "wx", 0o644);
  } catch (error) {
    throw new UsageError(`--out ${out}: cannot create a file in ${dir} (${errnoCode(error)})`);
  }
}

/** A new file's name beside `out`, for the check above and for writing it atomically. */
export const temporaryName = (out: string) =>
  path.join(
    path.dirname(out),
    `.${path.basename(out)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`,
  );
