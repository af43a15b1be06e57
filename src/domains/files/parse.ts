import { ProbeParseError } from "../../errors.js";
import { partsByLabel } from "../domain.js";
import { parseLink, type LinkedComponent } from "../no-follow.js";
import { utf8 } from "../../text/utf8.js";

// Contract with the transport: probe output arrives decoded byte-per-char (latin1), so
// Buffer.from(text, "latin1") gives back the exact bytes a file holds, binary or not.

/**
 * What `stat -c '%s\t%a\t%U\t%u\t%G\t%g\t%F\t%n'` says about one path: the path itself, a symlink
 * is never followed.
 */
export interface FileStat {
  size: number;
  /** Permission bits, four octal digits: 0644. */
  mode: string;
  owner: string;
  uid: string;
  group: string;
  gid: string;
  /** `regular file`, `directory`, `symbolic link`, ... */
  type: string;
}

export interface FilesLive {
  /**
   * Largest file whose contents the probe sent back; it read one byte more to see a larger file.
   */
  cap: number;
  /**
   * path -> its stat, or null when it does not exist. A path missing here could not be looked at.
   */
  files: Map<string, FileStat | null>;
  /** path -> the target of the symlink at that path (its own text, never followed). */
  links: Map<string, string>;
  /** path -> the symlinked folder on its way: nothing behind it was looked at. */
  parents: Map<string, LinkedComponent>;
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
// `stat: cannot statx 'P': reason` (GNU; a name holding ' is double-quoted), `stat: can't stat 'P':
// reason` (busybox).
const STAT_ERROR = /^stat: (?:cannot statx?|can't stat) (['"])(.*)\1: [^:]*$/;

export function normalizeMode(mode: string): string {
  return mode.padStart(4, "0");
}

/**
 * `stat` output with its errors (2>&1), for the declared paths; `errors` holds the error a path's
 * own `stat` printed (the probe stats each path it cannot see alone, so no message has to be
 * matched to a name). Lines are looked up by path, never searched per path: linear in the output.
 */
export function parseStat(
  text: string,
  paths: readonly string[],
  errors: Map<string, string> = new Map(),
): { files: Map<string, FileStat | null>; unknown: string[] } {
  const found = new Map<string, FileStat>();
  const statLine = (line: string) => {
    const m = STAT_LINE.exec(line);
    if (!m) return false;
    const [, size, mode, owner, uid, group, gid, type, path] = m;
    found.set(path!, {
      size: Number(size),
      mode: normalizeMode(mode!),
      owner: owner!,
      uid: uid!,
      group: group!,
      gid: gid!,
      type: type!,
    });
    return true;
  };
  for (const line of text.split("\n")) {
    if (line === "" || statLine(line)) continue;
    const named = STAT_ERROR.exec(line)?.[2];
    if (named !== undefined && !errors.has(named)) errors.set(named, line);
  }
  const files = new Map<string, FileStat | null>();
  const unknown: string[] = [];
  for (const path of paths) {
    const stat = found.get(path);
    if (stat) {
      files.set(path, stat);
      continue;
    }
    const error = errors.get(path);
    if (error && NOT_THERE.test(error)) files.set(path, null);
    else unknown.push(`${path}: cannot look at it (${error ?? "stat printed nothing"})`);
  }
  return { files, unknown };
}

/**
 * `sha256sum` output with its errors (2>&1). GNU escapes a name holding a backslash and marks the
 * line with one.
 */
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
 * The files section: `cap N`, `paths` (the declared paths, one a line), `stat`, `missing <path>`
 * (the error of a path stat could not see), `link <path>` (a symlink's target), `parent <path>` (a
 * symlinked folder on its way, then that link's target), `sha256`, then
 * `contents <path>` for each file read and `unreadable <path>` where reading it failed.
 */
export function parseFiles(raw: readonly [string, string][]): FilesLive {
  // Labels, paths and tool output name files in UTF-8, as the manifest does; only contents stay
  // bytes.
  const parts = raw.map(([label, text]): [string, string] => [
    utf8(label),
    label.startsWith("contents ") ? text : utf8(text),
  ]);
  const byLabel = partsByLabel("files", parts);
  const capLabel = parts.find(([label]) => label.startsWith("cap "))?.[0];
  const paths = byLabel.get("paths");
  const statText = byLabel.get("stat");
  if (!capLabel || paths === undefined || statText === undefined) {
    throw new ProbeParseError("files", "output lacks the cap, paths or stat part");
  }
  const cap = Number(capLabel.slice("cap ".length));
  const declared = paths.split("\n").filter(Boolean);
  const statErrors = new Map<string, string>();
  const links = new Map<string, string>();
  const parents = new Map<string, LinkedComponent>();
  const contents = new Map<string, Buffer>();
  const unreadable: string[] = [];
  let missingText = "";
  for (const [label, text] of parts) {
    const space = label.indexOf(" ");
    const [kind, path] =
      space === -1 ? [label, ""] : [label.slice(0, space), label.slice(space + 1)];
    if (kind === "missing") {
      // A file that appeared since the test prints a stat line here, which counts as one.
      missingText += `${text}\n`;
      statErrors.set(path, text.trim());
    } else if (kind === "link" && text !== "")
      links.set(path, text.endsWith("\n") ? text.slice(0, -1) : text);
    else if (kind === "parent") parents.set(path, parseLink(text));
    else if (kind === "contents") contents.set(path, Buffer.from(text, "latin1"));
    else if (kind === "unreadable") unreadable.push(path);
  }
  const looked = declared.filter((path) => !parents.has(path));
  const { files, unknown } = parseStat(`${statText}\n${missingText}`, looked, statErrors);
  const { sha256, errors } = parseSha256(byLabel.get("sha256") ?? "");
  for (const path of unreadable) {
    contents.delete(path);
    if (isRegular(files.get(path))) unknown.push(`${path}: cannot read it`);
  }
  // Only regular files that are not symlinks are hashed, so every error is about one of them.
  for (const error of errors) unknown.push(`cannot hash: ${error}`);
  return { cap, files, links, parents, sha256, contents, unknown };
}
