import { createReadStream } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import { Readable } from "node:stream";
import type { FileChange, Forge } from "../forge/forge.js";
import { parseReportNodes, ReportReader, type OnNode } from "../report/read.js";
import type { Report } from "../report/schema.js";
import { Digest, indexFile, partsFiles, readParts, readPartsIndex, writeParts } from "./parts.js";

// The report the last full propose run planned from, as the state branch keeps it: always in gzip
// parts under the forge's largest blob (parts.ts; 100,000 nodes write about 374 MB of JSON), read
// node by node as the parts come, never as one string.

export const REPORT_DIR = "last-report";
export const REPORT_INDEX = indexFile(REPORT_DIR);
/** The form before parts, one file of JSON: a state branch may still hold it, and it is read. */
export const LEGACY_REPORT_FILE = "last-report.json";
const WHAT = "the last report";

/** A report kept on the branch, or to keep: its digest, and its parts or where to read its text. */
export interface KeptReport {
  sha256: string;
  bytes: number;
  /** Its parts' blobs, when the branch has them already: kept again without writing them. */
  parts?: readonly string[];
  /** The report's text a piece at a time, to write the parts from (when `parts` is absent). */
  text?: () => AsyncIterable<Buffer>;
}

async function digest(text: AsyncIterable<Buffer>): Promise<{ sha256: string; bytes: number }> {
  const taken = new Digest();
  for await (const chunk of text) taken.add(chunk);
  return taken.done();
}

/** The report file `file`, to keep: read twice (its digest now, its parts when written), not held. */
export async function reportFileToKeep(file: string): Promise<KeptReport> {
  const text = () => createReadStream(file) as AsyncIterable<Buffer>;
  return { ...(await digest(text())), text };
}

/** The kept report's index, undefined when there is none: a StateError when it is not one. */
export const readKeptIndex = (github: Forge, branch: string) =>
  readPartsIndex(github, branch, REPORT_DIR, WHAT);

/**
 * The report the last run kept, validated as a report file is, each node handed to `onNode` as it
 * is read (as `readReportNodes` does a file's), with its kept form (to keep it again unchanged);
 * undefined when none has been kept. Read a part at a time; the legacy single file is read whole,
 * as it was written. `again`: the report read before, read again as it was then.
 */
export async function readKeptReport(
  github: Forge,
  branch: string,
  onNode: OnNode,
  again?: KeptReport,
): Promise<{ report: Report; kept: KeptReport } | undefined> {
  const parts = again ?? (await readKeptIndex(github, branch));
  if (parts?.parts === undefined) return readLegacyReport(github, branch, onNode, parts);
  const reader = new ReportReader(`${branch}:${REPORT_DIR}`, onNode);
  const decoder = new StringDecoder("utf8");
  await readParts(github, branch, REPORT_DIR, { ...parts, parts: parts.parts }, WHAT, (chunk) =>
    reader.push(decoder.write(chunk)),
  );
  reader.push(decoder.end());
  return { report: reader.end(), kept: parts };
}

async function textOf(pieces: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of pieces) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

/** The legacy single file, from the branch or (`again`) as it was read before. */
async function readLegacyReport(
  github: Forge,
  branch: string,
  onNode: OnNode,
  again: KeptReport | undefined,
): Promise<{ report: Report; kept: KeptReport } | undefined> {
  const text = again?.text
    ? await textOf(again.text())
    : await github.readFile(branch, LEGACY_REPORT_FILE, "reading the last report");
  if (text === undefined) return undefined;
  const report = parseReportNodes(text, `${branch}:${LEGACY_REPORT_FILE}`, onNode);
  const bytes = () => Readable.from([Buffer.from(text, "utf8")]);
  return { report, kept: { ...(await digest(bytes())), text: bytes } };
}

/**
 * The files keeping `report` on a commit: its index and its parts, the parts written first as
 * blobs of at most the forge's `maxBlobBytes`, unless the branch has them already.
 */
export async function keptReportFiles(
  github: Forge,
  report: KeptReport,
): Promise<Record<string, FileChange>> {
  const { sha256, bytes, parts } = report;
  const written = parts ? { sha256, bytes, parts } : await writeParts(github, report.text!(), WHAT);
  return partsFiles(REPORT_DIR, written);
}
