// A fleet's node entries kept out of the heap's live objects: each entry is serialized the moment
// it is made (which also lets go of everything the audit built it from, such as the probe output its
// strings were cut from) and read back one at a time in node-name order when the report is written.
// A small fleet's lines stay in memory; past WRITE_CHUNK_BYTES they go to a temporary NDJSON file,
// made then.
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { compareText } from "./formats/common.js";
import type { NodeResult, Report } from "./schema.js";
import { ReportTally } from "./tally.js";

// Appends are gathered to about this size before they are written.
const WRITE_CHUNK_BYTES = 256 * 1024;

interface SpoolFile {
  dir: string;
  fd: number;
}

/** Node entries spooled to a temporary file once they pass WRITE_CHUNK_BYTES; `close` removes it. */
export class EntrySpool {
  private readonly index: { name: string; offset: number; length: number }[] = [];
  private readonly tally = new ReportTally();
  /** Lines not yet written: every entry's, in the order added, until the file is made. */
  private pending: string[] = [];
  private pendingBytes = 0;
  private size = 0;
  private file: SpoolFile | undefined;
  // The file goes where TMPDIR said when the spool was made.
  private readonly tmp = os.tmpdir();

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
    if (this.pending.length === 0) return;
    this.file ??= spoolFile(this.tmp);
    const chunk = Buffer.from(this.pending.join(""));
    this.pending = [];
    this.pendingBytes = 0;
    for (let written = 0; written < chunk.length;)
      written += writeSync(this.file.fd, chunk, written);
  }

  /**
   * Each entry's compact JSON, in node-name order (code units, as every report orders nodes): from
   * memory, or read back from the file an entry at a time with no turn of the event loop.
   */
  *texts(): Generator<string> {
    const order = this.index
      .map((entry, added) => ({ ...entry, added }))
      .sort((a, b) => compareText(a.name, b.name));
    if (!this.file) {
      const lines = this.pending;
      for (const { added } of order) yield lines[added]!.slice(0, -1);
      return;
    }
    this.flush();
    const { fd } = this.file;
    let buffer = Buffer.alloc(0);
    for (const { offset, length } of order) {
      if (buffer.length < length) buffer = Buffer.alloc(Math.max(length, buffer.length * 2));
      let read = 0;
      for (let got = -1; read < length && got !== 0; read += got)
        got = readSync(fd, buffer, read, length - read, offset + read);
      if (read !== length) throw new Error("report spool file ended early");
      yield buffer.toString("utf8", 0, length - 1);
    }
  }

  /** The entries, in node-name order, each as `map` makes it. */
  *entries(map: (node: NodeResult) => NodeResult = (node) => node): Generator<NodeResult> {
    // Written by add() from NodeResults, read back by the same process.
    for (const text of this.texts()) yield map(JSON.parse(text) as NodeResult);
  }

  close(): void {
    if (!this.file) return;
    closeSync(this.file.fd);
    rmSync(this.file.dir, { recursive: true, force: true });
    this.file = undefined;
  }
}

/** A new file only this user can read, in a directory of its own under `tmp`. */
function spoolFile(tmp: string): SpoolFile {
  const dir = mkdtempSync(path.join(tmp, "quartermaster-report-"));
  try {
    return { dir, fd: openSync(path.join(dir, "entries.ndjson"), "wx+", 0o600) };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** A report whose node entries stay in a spool until they are written. */
export interface SpooledReport {
  /** Every field but the entries, in the order a report writes them (`nodes` empty). */
  head: Report;
  spool: EntrySpool;
}

/** The whole report in memory, for a renderer that needs every node at once. */
export function collectReport({ head, spool }: SpooledReport): Report {
  return { ...head, nodes: [...spool.entries()] };
}
