import { createHash } from "../crypto.js";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip, createGzip } from "node:zlib";
import * as z from "zod";
import { StateError } from "../errors.js";
import type { FileChange, Forge } from "../forge/forge.js";
import { visible } from "../text/escape.js";

// A state-branch file larger than the forge's largest blob (GitHub refuses one over 100 MiB; 100,000
// nodes write a report of about 374 MB and a run history over 170 MiB): gzipped and cut into parts
// no larger than that blob, under a folder with an index naming the parts in order and the text's
// digest. Written and read a part at a time. The last report (kept-report.ts) is always kept so;
// the audit and run histories when their text is over one blob (state.ts).

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/);
const PartsIndex = z
  .object({
    version: z.literal(1),
    /** Of the text (uncompressed), hex. */
    sha256: Sha256,
    bytes: z.number().int().nonnegative(),
    /** The blobs of its gzip stream, cut in parts, in order. */
    parts: z.array(z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/)).min(1),
  })
  .strict();

/** A text kept in parts: its digest and its parts' blobs, in order. */
export interface Parts {
  sha256: string;
  bytes: number;
  parts: readonly string[];
}

export const indexFile = (dir: string) => `${dir}/index.json`;
const partFile = (dir: string, i: number) =>
  `${dir}/part-${String(i + 1).padStart(4, "0")}.json.gz`;

/** The digest a text is known by (the same one is not written again), taken a piece at a time. */
export class Digest {
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

/** The index of the parts under `dir`, undefined when there is none: a StateError when it is not one. */
export async function readPartsIndex(
  github: Forge,
  branch: string,
  dir: string,
  what: string,
): Promise<Parts | undefined> {
  const where = `${branch}:${indexFile(dir)}`;
  const text = await github.readFile(branch, indexFile(dir), `reading ${what}'s index`);
  if (text === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    throw new StateError(where, `is not JSON: ${visible(error.message)}`);
  }
  const index = PartsIndex.safeParse(json);
  if (!index.success) {
    const issue = index.error.issues[0]!;
    throw new StateError(
      where,
      `is not an index of ${what}'s parts: ${visible(`${issue.path.join(".") || "(top)"}: ${issue.message}`)}`,
    );
  }
  const { sha256, bytes, parts } = index.data;
  return { sha256, bytes, parts };
}

/**
 * The text the parts under `dir` hold, handed to `onText` a piece at a time; a StateError (naming
 * the folder) when a part is missing or not gzip, or once all is read when it is not the text its
 * index names.
 */
export async function readParts(
  github: Forge,
  branch: string,
  dir: string,
  { parts, sha256, bytes }: Parts,
  what: string,
  onText: (chunk: Buffer) => void,
): Promise<void> {
  const where = `${branch}:${dir}`;
  async function* blobs(): AsyncIterable<Buffer> {
    for (const [i, sha] of parts.entries()) {
      const part = await github.readBlob(sha, `reading part ${i + 1} of ${what}`);
      if (part === undefined)
        throw new StateError(where, `part ${i + 1} of ${parts.length} (blob ${sha}) is missing`);
      yield part;
    }
  }
  const taken = new Digest();
  try {
    await pipeline(Readable.from(blobs()), createGunzip(), async (text) => {
      for await (const chunk of text as AsyncIterable<Buffer>) onText(taken.add(chunk));
    });
  } catch (error) {
    // zlib's own errors (a part cut short or not gzip) carry a code; the reader's are typed.
    if (!(error instanceof Error && "errno" in error)) throw error;
    throw new StateError(where, `a part is not the gzip stream its index names: ${error.message}`);
  }
  const read = taken.done();
  if (read.sha256 !== sha256 || read.bytes !== bytes)
    throw new StateError(where, "its parts are not the text its index names (sha256, bytes)");
}

/** `text` gzipped into blobs of at most the forge's `maxBlobBytes`, each written once it is full. */
export async function writeParts(
  github: Forge,
  text: AsyncIterable<Buffer> | Iterable<Buffer>,
  what: string,
): Promise<Parts> {
  const limit = github.settings.maxBlobBytes;
  const taken = new Digest();
  const parts: string[] = [];
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const write = async (part: Buffer) =>
    parts.push(await github.writeBlob(part, `writing part ${parts.length + 1} of ${what}`));
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

/** The files keeping `parts` under `dir` on a commit: its index, and its parts as written blobs. */
export function partsFiles(dir: string, parts: Parts): Record<string, FileChange> {
  const index = { version: 1, sha256: parts.sha256, bytes: parts.bytes, parts: parts.parts };
  return {
    [indexFile(dir)]: `${JSON.stringify(index, null, 2)}\n`,
    ...Object.fromEntries(parts.parts.map((blob, i) => [partFile(dir, i), { blob }])),
  };
}
