import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { isDeepStrictEqual } from "node:util";
import { InputFileError } from "../errors.js";
import { Report, summarize } from "./schema.js";

/** Larger than any fleet's report (10,000 nodes write about 22 MB), under a string's limit. */
export const MAX_REPORT_BYTES = 256 * 1024 * 1024;

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The file's text: a regular file under the cap, never waited on (a FIFO is refused). */
export async function readText(file: string, what = "report"): Promise<string> {
  const a = /^[aeiou]/.test(what) ? "an" : "a";
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw new InputFileError(file, `cannot read the ${what}: ${messageOf(error)}`);
  }
  try {
    const info = await handle.stat();
    if (info.isDirectory()) throw new InputFileError(file, `is a folder, not ${a} ${what}`);
    if (!info.isFile())
      throw new InputFileError(file, "is not a regular file (a FIFO, socket or device); not read");
    if (info.size > MAX_REPORT_BYTES)
      throw new InputFileError(
        file,
        `is ${info.size} bytes, over the ${MAX_REPORT_BYTES} ${a} ${what} may be; not read`,
      );
    return await handle.readFile("utf8");
  } catch (error) {
    if (error instanceof InputFileError) throw error;
    throw new InputFileError(file, `cannot read the ${what}: ${messageOf(error)}`);
  } finally {
    await handle.close();
  }
}

/**
 * A report written by `audit --format json`, validated: a wrong file is an error naming it, never
 * an empty fleet. What the formats would otherwise trust is checked too: each node once, and a
 * summary that counts the nodes.
 */
export async function readReport(file: string): Promise<Report> {
  return parseReport(await readText(file), file);
}

/** A report's text validated as `readReport` does; `file` names where it came from in errors. */
export function parseReport(text: string, file: string): Report {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new InputFileError(
      file,
      `not a JSON report (write it with --format json): ${messageOf(error)}`,
    );
  }
  let parsed;
  try {
    parsed = Report.safeParse(json);
  } catch (error) {
    // Values nested deeper than validation's stack: no audit writes such a report.
    if (error instanceof RangeError)
      throw new InputFileError(file, "not a Quartermaster report: nested too deeply to read");
    throw error;
  }
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputFileError(
      file,
      `not a Quartermaster report (schemaVersion 1): ${issue.path.join(".")}: ${issue.message}`,
    );
  }
  const report = parsed.data;
  const names = new Set<string>();
  for (const [i, node] of report.nodes.entries()) {
    if (names.has(node.name))
      throw new InputFileError(file, `nodes.${i}: node "${node.name}" is in the report twice`);
    names.add(node.name);
  }
  if (!isDeepStrictEqual(summarize(report.nodes), report.summary))
    throw new InputFileError(file, "summary: does not count the report's nodes (edited by hand?)");
  return report;
}
