// Finding and reading manifest files: the size cap, the symbolic-link rules, and the YAML parse
// with a line counter so every problem names its file:line:col. A file is read with synchronous
// calls: loading is the only work at that point, and for 10,000 small files four promise round
// trips each through the thread pool cost more than the reads (0.5 s against 0.07 s).
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { lstat, readdir, readlink, realpath } from "node:fs/promises";
import path from "node:path";
import { isMap, LineCounter, type Document, type Node as YamlNode } from "yaml";
import { ManifestError, type SourceLocation } from "../errors.js";
import { parseYaml } from "./yaml.js";

export const MAX_MANIFEST_BYTES = 1024 * 1024;
/** Alias expansions allowed per file: enough for sharing a block, far from a billion laughs. */
const MAX_ALIAS_COUNT = 100;

export interface ParsedFile {
  file: string;
  doc: Document;
  lines: LineCounter;
}

/** One file's text, or why it was not read. */
export interface FileText {
  /** The file as it is shown (and as a pull request names it). */
  file: string;
  text?: string;
  errors: ManifestError[];
}

/** A YAML file (or a symbolic link, which reading refuses by name) found under a folder. */
export interface FoundFile {
  abs: string;
  link: boolean;
}

/**
 * The YAML files under `dir`, and every symbolic link (a linked folder would hide files), sorted.
 */
export async function listYaml(dir: string): Promise<FoundFile[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true, recursive: true });
  } catch (error) {
    if (isErrno(error, "ENOENT")) return [];
    throw error;
  }
  return entries
    .filter((e) => e.isSymbolicLink() || (!e.isDirectory() && /\.ya?ml$/.test(e.name)))
    .map((e) => ({ abs: path.join(e.parentPath, e.name), link: e.isSymbolicLink() }))
    .sort((a, b) => (a.abs < b.abs ? -1 : a.abs > b.abs ? 1 : 0));
}

/** The error for a FIFO, socket or device where a manifest file should be. */
export const notRegular = (file: string) =>
  new ManifestError("is not a regular file (a FIFO, socket or device); not read", { file });

const isErrno = (error: unknown, ...codes: string[]): boolean =>
  error instanceof Error && "code" in error && codes.includes(String(error.code));

/** Reads and parses the files of one manifest tree, collecting every problem in `errors`. */
export class ManifestReader {
  readonly errors: ManifestError[] = [];
  constructor(
    private readonly dir: string,
    private readonly displayPrefix: string,
  ) {}

  display(abs: string): string {
    // A file found under the tree is the rest of its path: path.relative was a tenth of loading.
    const inside = abs.startsWith(`${this.dir}${path.sep}`)
      ? abs.slice(this.dir.length + 1)
      : path.relative(this.dir, abs);
    // Flat: joined, the name is a rope of pieces holding on to `abs`, five times its size, and a
    // loaded fleet keeps one per node file.
    return Buffer.from(path.join(this.displayPrefix, inside)).toString();
  }

  /**
   * A symbolic link in the tree is refused, never followed: one leaving the tree would read any
   * file on the machine, and one inside it could not be edited by a pull request like a file can.
   * Returns whether `abs` is a link (and records the error).
   */
  async refuseLink(abs: string): Promise<boolean> {
    const error = await this.linkError(abs);
    if (error) this.errors.push(error);
    return error !== undefined;
  }

  private async linkError(abs: string): Promise<ManifestError | undefined> {
    if (!(await lstat(abs).catch(() => undefined))?.isSymbolicLink()) return undefined;
    const file = this.display(abs);
    const target = await readlink(abs).catch(() => "?");
    const resolved = await realpath(abs).catch(() => path.resolve(path.dirname(abs), target));
    const root = await realpath(this.dir).catch(() => this.dir);
    const inside = resolved === root || resolved.startsWith(`${root}${path.sep}`);
    const shown = this.display(path.join(this.dir, path.relative(root, resolved)));
    return inside
      ? new ManifestError(
          `is a symbolic link (to ${shown}); links in the manifest tree are not followed`,
          { file },
          "copy the file, or share the values through a group",
        )
      : new ManifestError(`is a symbolic link leaving the manifest tree (to ${target}); not read`, {
          file,
        });
  }

  /**
   * A file's text, at most MAX_MANIFEST_BYTES, never through a link. No text and no error when
   * there is no such file (or a folder by its name). Records nothing: `take` records the problems
   * when the text is used.
   */
  async read(found: FoundFile): Promise<FileText> {
    const file = this.display(found.abs);
    // A file listed as a regular file needs no look for a link: O_NOFOLLOW refuses one swapped in
    // since.
    const linkError = found.link ? await this.linkError(found.abs) : undefined;
    if (linkError) return { file, errors: [linkError] };
    let fd;
    try {
      // O_NONBLOCK: a FIFO in the tree is found not to be a file instead of waiting for a writer.
      fd = openSync(found.abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (error) {
      if (isErrno(error, "ENOENT", "ENOTDIR")) return { file, errors: [] };
      // A socket cannot be opened.
      if (isErrno(error, "ENXIO")) return { file, errors: [notRegular(file)] };
      throw error;
    }
    try {
      const info = fstatSync(fd);
      if (info.isDirectory()) return { file, errors: [] };
      if (!info.isFile()) return { file, errors: [notRegular(file)] };
      if (info.size > MAX_MANIFEST_BYTES) {
        const message = `file is ${info.size} bytes, over the ${MAX_MANIFEST_BYTES}-byte cap for a manifest file; not read`;
        return { file, errors: [new ManifestError(message, { file })] };
      }
      // Read at most the cap even if the file grew after fstat().
      // Only the bytes read are used: no need to zero the buffer first.
      const buffer = Buffer.allocUnsafe(info.size + 1);
      const bytesRead = readSync(fd, buffer, 0, buffer.length, 0);
      if (bytesRead > MAX_MANIFEST_BYTES) {
        const message = `file grew over the ${MAX_MANIFEST_BYTES}-byte cap while being read`;
        return { file, errors: [new ManifestError(message, { file })] };
      }
      return { file, text: buffer.subarray(0, bytesRead).toString("utf8"), errors: [] };
    } finally {
      closeSync(fd);
    }
  }

  /** A file's text (see `read`), its problems recorded now. */
  async readText(abs: string): Promise<string | undefined> {
    return this.take(await this.read({ abs, link: true }));
  }

  /** The text read, recording the problems reading it found. */
  take(read: FileText): string | undefined {
    this.errors.push(...read.errors);
    return read.text;
  }

  /**
   * The file parsed as YAML, which must be a map of keys; undefined (errors recorded) when it is
   * not.
   */
  parse(read: FileText): ParsedFile | undefined {
    const text = this.take(read);
    if (text === undefined) return undefined;
    const { file } = read;
    const lines = new LineCounter();
    let doc: Document;
    try {
      doc = parseYaml(text, { lineCounter: lines, prettyErrors: true });
    } catch (error) {
      // Nesting deep enough to exhaust the parser's stack: a resource limit, not a crash.
      this.errors.push(
        new ManifestError(`YAML too deeply nested to read (${messageOf(error)})`, { file }),
      );
      return undefined;
    }
    for (const error of doc.errors) {
      const pos = error.linePos?.[0];
      this.errors.push(
        // The first line of the library's message, without the place it repeats.
        new ManifestError(
          `invalid YAML: ${error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:$/, "")}`,
          {
            file,
            line: pos?.line,
            col: pos?.col,
          },
        ),
      );
    }
    if (doc.errors.length) return undefined;
    if (doc.contents !== null && !isMap(doc.contents)) {
      this.errors.push(
        new ManifestError(
          "a manifest file must be a YAML map of keys",
          locate({ file, doc, lines }, doc.contents),
        ),
      );
      return undefined;
    }
    return { file, doc, lines };
  }

  /**
   * The file's data; aliases expanding past a limit (an alias bomb) are an error naming the file.
   */
  toJS(parsed: ParsedFile): unknown {
    if (!parsed.doc.contents) return {};
    try {
      const value: unknown = parsed.doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
      if (holdsItself(value)) {
        this.errors.push(
          new ManifestError(
            "YAML alias inside the anchor it names (the data would hold itself); not read",
            { file: parsed.file },
          ),
        );
        return undefined;
      }
      return value;
    } catch (error) {
      const message = messageOf(error);
      const reason = /alias/i.test(message)
        ? `more than ${MAX_ALIAS_COUNT} alias expansions (a YAML alias bomb?)`
        : message;
      this.errors.push(
        new ManifestError(`YAML resource limit: ${reason}; not read`, { file: parsed.file }),
      );
      return undefined;
    }
  }
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Whether `value` contains itself: `a: &a [*a]` reads as a list holding itself, which every walk
 * of the data would follow forever. Depth first with a stack, each object explored once.
 */
function holdsItself(value: unknown): boolean {
  const onPath = new Set<object>();
  const done = new Set<object>();
  const stack: { node: object; children?: unknown[] }[] = [];
  const enter = (child: unknown): boolean => {
    if (!child || typeof child !== "object" || done.has(child)) return false;
    if (onPath.has(child)) return true;
    onPath.add(child);
    stack.push({ node: child });
    return false;
  };
  if (enter(value)) return true;
  while (stack.length) {
    const top = stack.at(-1)!;
    top.children ??= Object.values(top.node);
    if (top.children.length) {
      if (enter(top.children.pop())) return true;
    } else {
      stack.pop();
      onPath.delete(top.node);
      done.add(top.node);
    }
  }
  return false;
}

/** Where `node` (or, when it has a position, `keyNode`: the key of its pair) starts in the file. */
export function locate(
  parsed: ParsedFile,
  node: YamlNode | null | undefined,
  keyNode?: unknown,
): SourceLocation {
  const target = isPositioned(keyNode) ? keyNode : node;
  if (!target?.range) return { file: parsed.file };
  const pos = parsed.lines.linePos(target.range[0]);
  return { file: parsed.file, line: pos.line, col: pos.col };
}

/**
 * A YAML node that knows where it sits in the text (a key may be a plain value with no position).
 */
export const isPositioned = (
  value: unknown,
): value is YamlNode & { range: [number, number, number] } =>
  !!value && typeof value === "object" && "range" in value && Array.isArray(value.range);
