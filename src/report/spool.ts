// A fleet's node entries on disk instead of in memory: each entry is serialized the moment it is
// made (which also lets go of everything the audit built it from, such as the probe output its
// strings were cut from), appended to a temporary NDJSON file, and read back one at a time in
// node-name order when the report is written.
import { writeSync } from "node:fs";
import { mkdtemp, open, rm, type FileHandle } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { compareText } from "./formats/common.js";
import type { NodeResult, Report } from "./schema.js";
import { ReportTally } from "./tally.js";

// Appends are gathered to about this size before they are written.
const WRITE_CHUNK_BYTES = 256 * 1024;

/** Node entries spooled to a temporary file; `close` removes it. */
export class EntrySpool {
  private readonly index: { name: string; offset: number; length: number }[] = [];
  private readonly tally = new ReportTally();
  private pending: string[] = [];
  private pendingBytes = 0;
  private size = 0;

  private constructor(
    private readonly dir: string,
    private readonly file: FileHandle,
  ) {}

  static async create(): Promise<EntrySpool> {
    const dir = await mkdtemp(path.join(os.tmpdir(), "quartermaster-report-"));
    try {
      return new EntrySpool(dir, await open(path.join(dir, "entries.ndjson"), "wx+", 0o600));
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  get count(): number {
    return this.index.length;
  }

  /** The summary and exit-code facts of every entry added so far. */
  get counts(): ReportTally {
    return this.tally;
  }

  add(entry: NodeResult): void {
    const line = `${JSON.stringify(entry)}\n`;
    const length = Buffer.byteLength(line);
    this.index.push({ name: entry.name, offset: this.size, length });
    this.tally.add(entry);
    this.size += length;
    this.pending.push(line);
    this.pendingBytes += length;
    if (this.pendingBytes >= WRITE_CHUNK_BYTES) this.flush();
  }

  /**
   * Written at once, not queued: entries that come faster than queued writes finish (a shard read
   * back, an audit whose nodes answer within one turn of the event loop) would otherwise wait in
   * memory, the whole fleet's at worst.
   */
  private flush(): void {
    const chunk = Buffer.from(this.pending.join(""));
    this.pending = [];
    this.pendingBytes = 0;
    for (let written = 0; written < chunk.length;)
      written += writeSync(this.file.fd, chunk, written);
  }

  /** Each entry's compact JSON, in node-name order (code units, as every report orders nodes). */
  async *texts(): AsyncGenerator<string> {
    this.flush();
    const order = [...this.index].sort((a, b) => compareText(a.name, b.name));
    let buffer = Buffer.alloc(0);
    for (const { offset, length } of order) {
      if (buffer.length < length) buffer = Buffer.alloc(Math.max(length, buffer.length * 2));
      const { bytesRead } = await this.file.read(buffer, 0, length, offset);
      if (bytesRead !== length) throw new Error("report spool file ended early");
      yield buffer.toString("utf8", 0, length - 1);
    }
  }

  /** The entries, in node-name order, each as `map` makes it. */
  async *entries(
    map: (node: NodeResult) => NodeResult = (node) => node,
  ): AsyncGenerator<NodeResult> {
    // Written by add() from NodeResults, read back by the same process.
    for await (const text of this.texts()) yield map(JSON.parse(text) as NodeResult);
  }

  async close(): Promise<void> {
    await this.file.close();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** A report whose node entries stay in a spool until they are written. */
export interface SpooledReport {
  /** Every field but the entries, in the order a report writes them (`nodes` empty). */
  head: Report;
  spool: EntrySpool;
}

/** The whole report in memory, for a renderer that needs every node at once. */
export async function collectReport({ head, spool }: SpooledReport): Promise<Report> {
  const nodes: NodeResult[] = [];
  for await (const entry of spool.entries()) nodes.push(entry);
  return { ...head, nodes };
}
