import { constants } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { StringDecoder } from "node:string_decoder";
import { isDeepStrictEqual } from "node:util";
import type * as z from "zod";
import { InputFileError } from "../errors.js";
import { isObject } from "./history.js";
import { DriftItem, NodeResult, Report } from "./schema.js";
import { itemCount, ReportTally } from "./tally.js";

/** Larger than any text read whole (a history, a run history), under a string's limit. */
export const MAX_TEXT_BYTES = 256 * 1024 * 1024;
/**
 * Larger than any fleet's report (100,000 nodes write about 400 MB): a report is read node by
 * node, never as one string, so it may be larger than a string can be.
 */
export const MAX_REPORT_BYTES = 8 * 1024 * 1024 * 1024;
// A report is read in pieces of this size.
const READ_CHUNK_BYTES = 1024 * 1024;

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * The file opened for reading: a regular file under `maxBytes`, never waited on (a FIFO is
 * refused). `read` reads it; the handle is closed after.
 */
async function withRegularFile<T>(
  file: string,
  what: string,
  maxBytes: number,
  read: (handle: FileHandle) => Promise<T>,
): Promise<T> {
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
    if (info.size > maxBytes)
      throw new InputFileError(
        file,
        `is ${info.size} bytes, over the ${maxBytes} ${a} ${what} may be; not read`,
      );
    return await read(handle);
  } catch (error) {
    if (error instanceof InputFileError) throw error;
    throw new InputFileError(file, `cannot read the ${what}: ${messageOf(error)}`);
  } finally {
    await handle.close();
  }
}

/** The file's text: a regular file under the cap, never waited on (a FIFO is refused). */
export function readText(file: string, what = "report"): Promise<string> {
  return withRegularFile(file, what, MAX_TEXT_BYTES, (handle) => handle.readFile("utf8"));
}

/**
 * A report written by `audit --format json`, validated: a wrong file is an error naming it, never
 * an empty fleet. What the formats would otherwise trust is checked too: each node once, and a
 * summary that counts the nodes.
 */
export async function readReport(file: string): Promise<Report> {
  const nodes: NodeResult[] = [];
  const head = await readReportNodes(file, (node) => nodes.push(node));
  return { ...head, nodes };
}

/**
 * What is handed each node as it is read: the node, and the report's `startedAt` when it came
 * before the nodes (as every report Quartermaster writes has it), checked only once the whole
 * report is read.
 */
export type OnNode = (node: NodeResult, startedAt: string | undefined) => void;

/**
 * The report validated as `readReport` does, read a piece at a time: each node is handed to
 * `onNode` as it is read and checked, in the file's order, and only then let go of; what is
 * returned is every field but the nodes (`nodes` empty), checked once the whole file is read.
 */
export function readReportNodes(file: string, onNode: OnNode): Promise<Report> {
  return withRegularFile(file, "report", MAX_REPORT_BYTES, async (handle) => {
    const reader = new ReportReader(file, onNode);
    const decoder = new StringDecoder("utf8");
    const buffer = Buffer.alloc(READ_CHUNK_BYTES);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      reader.push(decoder.write(buffer.subarray(0, bytesRead)));
    }
    reader.push(decoder.end());
    return reader.end();
  });
}

/** A report's text validated as `readReport` does; `file` names where it came from in errors. */
export function parseReport(text: string, file: string): Report {
  const nodes: NodeResult[] = [];
  const head = parseReportNodes(text, file, (node) => nodes.push(node));
  return { ...head, nodes };
}

/** A report's text validated and handed over node by node, as `readReportNodes` does a file's. */
export function parseReportNodes(text: string, file: string, onNode: OnNode): Report {
  const reader = new ReportReader(file, onNode);
  reader.push(text);
  return reader.end();
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const BLANK = /^[ \t\r\n]*$/;

/**
 * A report's JSON text, arriving in pieces, cut into its top-level members and the elements of its
 * `nodes` array, each parsed and checked as soon as it is whole: one pass, each character looked
 * at once (outside strings only brackets and commas matter), and nothing held but the member or
 * node being read and the fields besides the nodes.
 */
export class ReportReader {
  // The text not yet cut off: the current member or node from its start.
  private text = "";
  private segmentStart = 0;
  private scanned = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;
  // 0: before the report's `{`; 1: inside it; 2: after its `}`.
  private phase: 0 | 1 | 2 = 0;
  // Inside `nodes`' array; then, until the member ends, after it.
  private inNodes = false;
  private afterNodes = false;
  private nodeIndex = 0;
  private readonly members = new Map<string, unknown>();
  private readonly names = new Set<string>();
  private readonly tally = new ReportTally();

  constructor(
    private readonly file: string,
    private readonly onNode: OnNode,
  ) {}

  private notJson(why: string): InputFileError {
    return new InputFileError(this.file, `not a JSON report (write it with --format json): ${why}`);
  }

  private notReport(where: string, why: string): InputFileError {
    return new InputFileError(
      this.file,
      `not a Quartermaster report (schemaVersion 1): ${where}: ${why}`,
    );
  }

  push(chunk: string): void {
    if (chunk === "") return;
    this.text = this.text.slice(this.segmentStart) + chunk;
    this.scanned -= this.segmentStart;
    this.segmentStart = 0;
    const text = this.text;
    for (let i = this.scanned; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) this.inString = false;
        continue;
      }
      if (this.phase !== 1) {
        if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
        if (this.phase === 2) throw this.notJson(`text after the report's closing brace`);
        if (c !== OPEN_BRACE) throw this.notJson("it is not a JSON object");
        this.phase = 1;
        this.depth = 1;
        this.segmentStart = i + 1;
        continue;
      }
      if (c === QUOTE) this.inString = true;
      else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (c === OPEN_BRACKET && this.depth === 1 && this.startsNodes(i)) {
          this.inNodes = true;
          this.segmentStart = i + 1;
        }
        this.depth++;
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        this.depth--;
        if (this.inNodes && this.depth === 1) {
          if (c !== CLOSE_BRACKET) throw this.notJson("nodes: a list closed by }");
          const last = text.slice(this.segmentStart, i);
          if (this.nodeIndex > 0 || !BLANK.test(last)) this.node(last);
          this.inNodes = false;
          this.afterNodes = true;
          this.segmentStart = i + 1;
        } else if (this.depth === 0) {
          if (c !== CLOSE_BRACE) throw this.notJson("the report's object closed by ]");
          this.memberEnd(text.slice(this.segmentStart, i), true);
          this.phase = 2;
          this.segmentStart = i + 1;
        }
      } else if (c === COMMA) {
        if (this.depth === 1) {
          this.memberEnd(text.slice(this.segmentStart, i), false);
          this.segmentStart = i + 1;
        } else if (this.inNodes && this.depth === 2) {
          this.node(text.slice(this.segmentStart, i));
          this.segmentStart = i + 1;
        }
      }
    }
    this.scanned = text.length;
  }

  /** Whether the `[` at `at` opens the value of the member `nodes`. */
  private startsNodes(at: number): boolean {
    const key = this.keyOf(this.text.slice(this.segmentStart, at));
    if (key !== "nodes") return false;
    if (this.members.has("nodes")) throw this.notJson(`the member "nodes" is in it twice`);
    this.members.set("nodes", []);
    return true;
  }

  /** The key of a member whose text so far is `"key":`. */
  private keyOf(start: string): string {
    let parsed: unknown;
    try {
      parsed = JSON.parse(`{${start}0}`);
    } catch (error) {
      throw this.notJson(messageOf(error));
    }
    return Object.keys(parsed as object)[0]!;
  }

  private memberEnd(member: string, last: boolean): void {
    if (this.afterNodes) {
      this.afterNodes = false;
      if (!BLANK.test(member)) throw this.notJson("text after the list of nodes");
      return;
    }
    // `{}`: no member at all.
    if (last && this.members.size === 0 && BLANK.test(member)) return;
    let parsed: object;
    try {
      parsed = JSON.parse(`{${member}}`) as object;
    } catch (error) {
      throw this.notJson(messageOf(error));
    }
    // Exactly one member: the text between two top-level commas.
    const [entry] = Object.entries(parsed);
    const [key, value] = entry!;
    if (this.members.has(key))
      throw this.notJson(`the member ${JSON.stringify(key)} is in it twice`);
    this.members.set(key, value);
  }

  private node(text: string): void {
    const i = this.nodeIndex++;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw this.notJson(`nodes.${i}: ${messageOf(error)}`);
    }
    let dropped: Counted[] = [];
    let parsed = this.parsed(NodeResult, json);
    // One unreadable drift item costs only itself: checked apart only when the node fails.
    if (!parsed.success && parsed.error.issues[0]!.path[0] === "drift" && isObject(json)) {
      const items = readableItems(json.drift);
      dropped = items.dropped;
      parsed = this.parsed(NodeResult, { ...json, drift: items.drift });
    }
    const node = this.checked(parsed, `nodes.${i}.`);
    if (this.names.has(node.name))
      throw new InputFileError(this.file, `nodes.${i}: node "${node.name}" is in the report twice`);
    this.names.add(node.name);
    this.tally.add(node);
    // The summary written counted them.
    for (const item of dropped) this.tally.summary[itemCount(item)]++;
    const startedAt = this.members.get("startedAt");
    this.onNode(node, typeof startedAt === "string" ? startedAt : undefined);
  }

  private validated<T extends z.ZodType>(schema: T, json: unknown, prefix: string): z.output<T> {
    return this.checked(this.parsed(schema, json), prefix);
  }

  private parsed<T extends z.ZodType>(schema: T, json: unknown): z.ZodSafeParseResult<z.output<T>> {
    try {
      return schema.safeParse(json);
    } catch (error) {
      // Values nested deeper than validation's stack: no audit writes such a report.
      if (error instanceof RangeError)
        throw new InputFileError(
          this.file,
          "not a Quartermaster report: nested too deeply to read",
        );
      throw error;
    }
  }

  private checked<T>(parsed: z.ZodSafeParseResult<T>, prefix: string): T {
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw this.notReport(
        `${prefix}${issue.path.map(String).join(".")}`.replace(/\.$/, ""),
        issue.message,
      );
    }
    return parsed.data;
  }

  /** Every field but the nodes, once the whole text has come. */
  end(): Report {
    if (this.phase !== 2)
      throw this.notJson(this.phase === 0 ? "it is empty" : "it ends before the report does");
    const head = this.validated(Report, Object.fromEntries(this.members), "");
    const counted = this.tally.summary;
    // A writer before `acknowledgedItems` counted acknowledged drift in `driftItems`.
    const written = this.members.get("summary");
    const older =
      isObject(written) && !("acknowledgedItems" in written)
        ? {
            ...counted,
            driftItems: counted.driftItems + counted.acknowledgedItems,
            acknowledgedItems: 0,
          }
        : counted;
    if (!isDeepStrictEqual(older, head.summary))
      throw new InputFileError(
        this.file,
        "summary: does not count the report's nodes (edited by hand?)",
      );
    return { ...head, summary: counted };
  }
}

// What an item may carry beside the drift itself: left out of an item that is unreadable with them.
const ANNOTATIONS = [
  "cause",
  "latent",
  "holders",
  "firstSeen",
  "lapsed",
  "detail",
  "diff",
] as const;

/**
 * A node's drift items, each unreadable one read without its annotations (its cause then says why
 * it is unknown), or left out when still unreadable (counted in `dropped`).
 */
type Counted = Pick<DriftItem, "acknowledged" | "latentPolicy">;

function readableItems(drift: unknown): { drift: unknown; dropped: Counted[] } {
  if (!Array.isArray(drift)) return { drift, dropped: [] };
  const readable: unknown[] = [];
  const dropped: Counted[] = [];
  for (const item of drift as unknown[]) {
    const parsed = DriftItem.safeParse(item);
    if (parsed.success) {
      readable.push(parsed.data);
      continue;
    }
    const issue = parsed.error.issues[0]!;
    const bare: Record<string, unknown> = isObject(item) ? { ...item } : {};
    for (const key of ANNOTATIONS) delete bare[key];
    bare.cause = {
      kind: "unknown",
      evidence: `unreadable in the report (${issue.path.map(String).join(".")}: ${issue.message})`,
    };
    const again = DriftItem.safeParse(bare);
    if (again.success) readable.push(again.data);
    // As the writer counted it: its flags, where they read.
    else
      dropped.push({
        acknowledged: bare.acknowledged === true,
        ...((bare.latentPolicy === "drift" || bare.latentPolicy === "ticket") && {
          latentPolicy: bare.latentPolicy,
        }),
      });
  }
  return { drift: readable, dropped };
}
