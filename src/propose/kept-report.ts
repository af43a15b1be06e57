import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip, createGzip } from "node:zlib";
import * as z from "zod";
import { StateError } from "../errors.js";
import type { FileChange, Forge } from "../forge/forge.js";
import { parseReport, ReportReader } from "../report/read.js";
import type { NodeResult, Report } from "../report/schema.js";
import { visible } from "../text/escape.js";

// The report the last full propose run planned from, as the state branch keeps it: gzipped and cut
// into parts no larger than the forge's largest blob (GitHub refuses one over 100 MiB; 100,000
// nodes write about 374 MB of JSON), with an index naming the parts in order and the report's
// digest. Written and read a part at a time, never as one string.

export const REPORT_DIR = "last-report";
export const REPORT_INDEX = `${REPORT_DIR}/index.json`;
/** The form before parts, one file of JSON: a state branch may still hold it, and it is read. */
export const LEGACY_REPORT_FILE = "last-report.json";
const partFile = (i: number) => `${REPORT_DIR}/part-${String(i + 1).padStart(4, "0")}.json.gz`;

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/);
const KeptIndex = z
  .object({
    version: z.literal(1),
    /** Of the report's text (uncompressed), hex. */
    sha256: Sha256,
    bytes: z.number().int().nonnegative(),
    /** The blobs of its gzip stream, cut in parts, in order. */
    parts: z.array(z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/)).min(1),
  })
  .strict();

/** A report kept on the branch, or to keep: its digest, and its parts or where to read its text. */
export interface KeptReport {
  sha256: string;
  bytes: number;
  /** Its parts' blobs, when the branch has them already: kept again without writing them. */
  parts?: readonly string[];
  /** The report's text a piece at a time, to write the parts from (when `parts` is absent). */
  text?: () => AsyncIterable<Buffer>;
}

/** The digest a report is known by (the same one is not written again), taken a piece at a time. */
class Digest {
  private readonly hash = createHash("sha256");
  private bytes = 0;
  add(chunk: Buffer): Buffer {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    return chunk;
  }
  done(): { sha256: string; bytes: number } {
    return { sha256: this.hash.digest("hex"), bytes: this.bytes };
  }
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
export async function readKeptIndex(
  github: Forge,
  branch: string,
): Promise<(KeptReport & { parts: readonly string[] }) | undefined> {
  const where = `${branch}:${REPORT_INDEX}`;
  const text = await github.readFile(branch, REPORT_INDEX, "reading the last report's index");
  if (text === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    throw new StateError(where, `is not JSON: ${visible(error.message)}`);
  }
  const index = KeptIndex.safeParse(json);
  if (!index.success) {
    const issue = index.error.issues[0]!;
    throw new StateError(
      where,
      `is not a kept report's index: ${visible(`${issue.path.join(".") || "(top)"}: ${issue.message}`)}`,
    );
  }
  const { sha256, bytes, parts } = index.data;
  return { sha256, bytes, parts };
}

/**
 * The report the last run kept, validated as a report file is, with its kept form (to keep it again
 * unchanged); undefined when none has been kept. Read a part at a time; the legacy single file is
 * read whole, as it was written.
 */
export async function readKeptReport(
  github: Forge,
  branch: string,
): Promise<{ report: Report; kept: KeptReport } | undefined> {
  const index = await readKeptIndex(github, branch);
  if (index === undefined) return readLegacyReport(github, branch);
  const where = `${branch}:${REPORT_DIR}`;
  const nodes: NodeResult[] = [];
  const reader = new ReportReader(where, (node) => nodes.push(node));
  const decoder = new StringDecoder("utf8");
  const taken = new Digest();
  try {
    await pipeline(
      Readable.from(partsOf(github, index.parts, where)),
      createGunzip(),
      async (text) => {
        for await (const chunk of text as AsyncIterable<Buffer>)
          reader.push(decoder.write(taken.add(chunk)));
      },
    );
  } catch (error) {
    // zlib's own errors (a part cut short or not gzip) carry a code; the reader's are typed.
    if (!(error instanceof Error && "errno" in error)) throw error;
    throw new StateError(where, `a part is not the gzip stream its index names: ${error.message}`);
  }
  reader.push(decoder.end());
  const { sha256, bytes } = taken.done();
  if (sha256 !== index.sha256 || bytes !== index.bytes)
    throw new StateError(where, "its parts are not the report its index names (sha256, bytes)");
  return { report: { ...reader.end(), nodes }, kept: index };
}

async function* partsOf(
  github: Forge,
  parts: readonly string[],
  where: string,
): AsyncIterable<Buffer> {
  for (const [i, sha] of parts.entries()) {
    const part = await github.readBlob(sha, `reading part ${i + 1} of the last report`);
    if (part === undefined)
      throw new StateError(where, `part ${i + 1} of ${parts.length} (blob ${sha}) is missing`);
    yield part;
  }
}

async function readLegacyReport(
  github: Forge,
  branch: string,
): Promise<{ report: Report; kept: KeptReport } | undefined> {
  const text = await github.readFile(branch, LEGACY_REPORT_FILE, "reading the last report");
  if (text === undefined) return undefined;
  const report = parseReport(text, `${branch}:${LEGACY_REPORT_FILE}`);
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
  const written = report.parts
    ? { sha256: report.sha256, bytes: report.bytes, parts: report.parts }
    : await writeParts(github, report.text!());
  const index = { version: 1, ...written };
  return {
    [REPORT_INDEX]: `${JSON.stringify(index, null, 2)}\n`,
    ...Object.fromEntries(written.parts.map((blob, i) => [partFile(i), { blob }])),
  };
}

/** `text` gzipped into blobs of at most `maxBlobBytes`, each written as soon as it is full. */
async function writeParts(
  github: Forge,
  text: AsyncIterable<Buffer>,
): Promise<{ sha256: string; bytes: number; parts: string[] }> {
  const limit = github.settings.maxBlobBytes;
  const taken = new Digest();
  const parts: string[] = [];
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const write = async (part: Buffer) =>
    parts.push(await github.writeBlob(part, `writing part ${parts.length + 1} of the report`));
  async function* hashed(): AsyncIterable<Buffer> {
    for await (const chunk of text) yield taken.add(chunk);
  }
  await pipeline(Readable.from(hashed()), createGzip(), async (gzipped) => {
    for await (const chunk of gzipped as AsyncIterable<Buffer>) {
      pending.push(chunk);
      pendingBytes += chunk.length;
      while (pendingBytes >= limit) {
        const whole = Buffer.concat(pending);
        await write(whole.subarray(0, limit));
        pending = [whole.subarray(limit)];
        pendingBytes = whole.length - limit;
      }
    }
  });
  if (pendingBytes > 0 || parts.length === 0) await write(Buffer.concat(pending));
  return { ...taken.done(), parts };
}
