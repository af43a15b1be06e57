import { ProbeParseError } from "../../errors.js";

// Contract with the transport: probe output arrives decoded byte-per-char (latin1), so
// Buffer.from(text, "latin1") gives back the exact bytes a file holds, binary or not.
const utf8 = (latin1: string) => Buffer.from(latin1, "latin1").toString("utf8");

/** What `stat -L -c '%s\t%a\t%U\t%u\t%G\t%g\t%F\t%n'` says about one path. */
export interface FileStat {
  size: number;
  /** Permission bits, four octal digits: 0644. */
  mode: string;
  owner: string;
  uid: string;
  group: string;
  gid: string;
  /** `regular file`, `directory`, ... */
  type: string;
}

export interface FilesLive {
  /** Largest file whose contents the probe sent back; it read one byte more to see a larger file. */
  cap: number;
  /** path -> its stat, or null when it does not exist. A path missing here could not be looked at. */
  files: Map<string, FileStat | null>;
  sha256: Map<string, string>;
  /** path -> its first cap+1 bytes */
  contents: Map<string, Buffer>;
  /** Why some declared path or attribute could not be compared (permission denied): not drift. */
  unknown: string[];
}

export const STAT_FORMAT = "%s\t%a\t%U\t%u\t%G\t%g\t%F\t%n";
const STAT_LINE = /^(\d+)\t([0-7]{1,4})\t([^\t]*)\t(\d+)\t([^\t]*)\t(\d+)\t([^\t]+)\t(\/.*)$/;
const HASH_LINE = /^(\\?)([0-9a-f]{64}) [ *](.+)$/;
const NOT_THERE = /(No such file or directory|Not a directory)$/;

export function normalizeMode(mode: string): string {
  return mode.padStart(4, "0");
}

/** The error line a tool printed about `path`, if any: GNU and busybox quote it or end it with a colon. */
function errorFor(errors: readonly string[], path: string): string | undefined {
  return errors.find((line) => line.includes(`'${path}'`) || line.includes(`${path}: `));
}

/** `stat` output with its errors (2>&1), for the declared paths. */
export function parseStat(text: string, paths: readonly string[]): { files: Map<string, FileStat | null>; unknown: string[] } {
  const found = new Map<string, FileStat>();
  const errors: string[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const m = STAT_LINE.exec(line);
    if (!m) {
      errors.push(line);
      continue;
    }
    const [, size, mode, owner, uid, group, gid, type, path] = m;
    found.set(path!, { size: Number(size), mode: normalizeMode(mode!), owner: owner!, uid: uid!, group: group!, gid: gid!, type: type! });
  }
  const files = new Map<string, FileStat | null>();
  const unknown: string[] = [];
  for (const path of paths) {
    const stat = found.get(path);
    if (stat) {
      files.set(path, stat);
      continue;
    }
    const error = errorFor(errors, path);
    if (error && NOT_THERE.test(error)) files.set(path, null);
    else unknown.push(`${path}: cannot look at it (${error ?? "stat printed nothing"})`);
  }
  return { files, unknown };
}

/** `sha256sum` output with its errors (2>&1). GNU escapes a name holding a backslash and marks the line with one. */
export function parseSha256(text: string): { sha256: Map<string, string>; errors: string[] } {
  const sha256 = new Map<string, string>();
  const errors: string[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const m = HASH_LINE.exec(line);
    if (!m) errors.push(line);
    else sha256.set(m[1] ? m[3]!.replaceAll("\\\\", "\\") : m[3]!, m[2]!);
  }
  return { sha256, errors };
}

/** stat calls an empty file a `regular empty file`. */
export function isRegular(stat: FileStat | null | undefined): boolean {
  return stat?.type.startsWith("regular") ?? false;
}

/**
 * The files section: `cap N`, `paths` (the declared paths, one a line), `stat`, `sha256`, then
 * `contents <path>` for each file read and `unreadable <path>` where reading it failed.
 */
export function parseFiles(raw: readonly [string, string][]): FilesLive {
  // Labels, paths and tool output name files in UTF-8, as the manifest does; only contents stay bytes.
  const parts = raw.map(([label, text]): [string, string] => [utf8(label), label.startsWith("contents ") ? text : utf8(text)]);
  const byLabel = new Map(parts);
  const capLabel = parts.find(([label]) => label.startsWith("cap "))?.[0];
  const paths = byLabel.get("paths");
  const statText = byLabel.get("stat");
  if (!capLabel || paths === undefined || statText === undefined) {
    throw new ProbeParseError("files", "output lacks the cap, paths or stat part");
  }
  const cap = Number(capLabel.slice("cap ".length));
  const declared = paths.split("\n").filter(Boolean);
  const { files, unknown } = parseStat(statText, declared);
  const { sha256, errors } = parseSha256(byLabel.get("sha256") ?? "");
  const contents = new Map<string, Buffer>();
  for (const [label, text] of parts) {
    if (label.startsWith("contents ")) contents.set(label.slice("contents ".length), Buffer.from(text, "latin1"));
  }
  for (const [label] of parts) {
    if (!label.startsWith("unreadable ")) continue;
    const path = label.slice("unreadable ".length);
    contents.delete(path);
    if (isRegular(files.get(path))) unknown.push(`${path}: cannot read it`);
  }
  if (byLabel.has("sha256")) {
    for (const error of errors) {
      const path = declared.find((p) => errorFor([error], p));
      if (path === undefined || isRegular(files.get(path))) unknown.push(`cannot hash: ${error}`);
    }
  }
  return { cap, files, sha256, contents, unknown };
}
