// The objects of a SHA-1 git repository, read as git stores them: loose (one zlib stream a file)
// or in packs (an index of ids to offsets, each object whole or a delta against another). What the
// audit reads of its manifests' commit (a commit, the trees under it) without isomorphic-git,
// whose loading alone cost each audit of a checkout more CPU than its whole start-up had left.
import fs from "node:fs";
import path from "node:path";
import { inflateSync } from "node:zlib";

export type ObjectType = "commit" | "tree" | "blob" | "tag";

export interface GitObject {
  type: ObjectType;
  data: Buffer;
}

/** A repository's object that cannot be read here: absent, damaged or in a form not read here. */
export class GitObjectError extends Error {}

const PACKED_TYPES: Record<number, ObjectType> = { 1: "commit", 2: "tree", 3: "blob", 4: "tag" };
const OFS_DELTA = 6;
const REF_DELTA = 7;
const ID_BYTES = 20;
/** Deltas followed to a whole object at most: git's own limit on a pack's delta depth. */
const MAX_DELTA_DEPTH = 4095;
const IDX_MAGIC = 0xff744f63;

interface PackIndex {
  pack: string;
  idx: Buffer;
  count: number;
}

/** Reads objects by id from a repository's `objects` folder. */
export class ObjectStore {
  private packs: PackIndex[] | undefined;

  constructor(private readonly objectsDir: string) {}

  /** The object `oid` (40 hex digits); a GitObjectError where it cannot be read. */
  read(oid: string): GitObject {
    return this.find(oid, 0);
  }

  /** `oid`, loose or packed, `depth` deltas down from the object asked for. */
  private find(oid: string, depth: number): GitObject {
    if (!/^[0-9a-f]{40}$/.test(oid)) throw new GitObjectError(`not an object id: ${oid}`);
    const loose = this.readLoose(oid);
    if (loose) return loose;
    const id = Buffer.from(oid, "hex");
    for (const pack of this.packIndexes()) {
      const offset = packOffset(pack, id);
      if (offset !== undefined) return this.readPacked(pack.pack, offset, depth);
    }
    throw new GitObjectError(`object ${oid} not found`);
  }

  private readLoose(oid: string): GitObject | undefined {
    let stored: Buffer;
    try {
      stored = fs.readFileSync(path.join(this.objectsDir, oid.slice(0, 2), oid.slice(2)));
    } catch {
      return undefined;
    }
    const whole = inflateSync(stored);
    const space = whole.indexOf(0x20);
    const nul = whole.indexOf(0, space);
    const type = whole.toString("latin1", 0, space);
    const size = Number(whole.toString("latin1", space + 1, nul));
    const data = whole.subarray(nul + 1);
    if (space < 0 || nul < 0 || !isObjectType(type) || size !== data.length)
      throw new GitObjectError(`object ${oid}: not a loose object`);
    return { type, data };
  }

  private packIndexes(): PackIndex[] {
    if (this.packs) return this.packs;
    const dir = path.join(this.objectsDir, "pack");
    const names = fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => n.endsWith(".idx")) : [];
    this.packs = names.map((name) => {
      const idx = fs.readFileSync(path.join(dir, name));
      // Version 2, the only one git has written since 2008.
      if (
        idx.length < 8 + 256 * 4 ||
        idx.readUInt32BE(0) !== IDX_MAGIC ||
        idx.readUInt32BE(4) !== 2
      )
        throw new GitObjectError(`${name}: not a version 2 pack index`);
      const count = idx.readUInt32BE(8 + 255 * 4);
      if (idx.length < 8 + 256 * 4 + count * (ID_BYTES + 8))
        throw new GitObjectError(`${name}: shorter than its ${count} objects`);
      return { pack: path.join(dir, `${name.slice(0, -".idx".length)}.pack`), idx, count };
    });
    return this.packs;
  }

  /** The object at `offset` of `pack`, its deltas applied. */
  private readPacked(pack: string, offset: number, depth: number): GitObject {
    if (depth > MAX_DELTA_DEPTH) throw new GitObjectError(`${pack}: a delta chain too deep`);
    const { entry, data } = readPackEntry(pack, offset);
    const type = PACKED_TYPES[entry.kind];
    if (type) return { type, data };
    const base =
      typeof entry.base === "number"
        ? this.readPacked(pack, entry.base, depth + 1)
        : this.find(entry.base!, depth + 1);
    return { type: base.type, data: applyDelta(base.data, data) };
  }
}

interface PackEntry {
  kind: number;
  /** Its data's size, inflated. */
  size: number;
  /** Where its deflated data starts. */
  at: number;
  /** A delta's base: an offset in the same pack, or an object id. */
  base?: number | string;
}

/** The entry at `offset` of `pack`: its header and its data, inflated (a delta's, for a delta). */
function readPackEntry(pack: string, offset: number): { entry: PackEntry; data: Buffer } {
  const fd = fs.openSync(pack, "r");
  try {
    const entry = packEntryHeader(readAt(fd, offset, 32), offset);
    // A deflated stream of `size` bytes is at most this long (zlib's own bound, with margin).
    const data = inflateSync(readAt(fd, entry.at, entry.size + (entry.size >> 10) + 64));
    if (data.length !== entry.size) throw new GitObjectError(`${pack}: an object's size differs`);
    return { entry, data };
  } finally {
    fs.closeSync(fd);
  }
}

const isObjectType = (type: string): type is ObjectType =>
  type === "commit" || type === "tree" || type === "blob" || type === "tag";

/** `length` bytes of `fd` from `position`, fewer at the end of the file. */
function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  const read = fs.readSync(fd, buffer, 0, length, position);
  return buffer.subarray(0, read);
}

/** Where `id` lies in the pack, by the index's fan-out and a binary search of its sorted ids. */
function packOffset({ idx, count }: PackIndex, id: Buffer): number | undefined {
  const fanout = (byte: number) => (byte < 0 ? 0 : idx.readUInt32BE(8 + byte * 4));
  let low = fanout(id[0]! - 1);
  let high = fanout(id[0]!);
  const ids = 8 + 256 * 4;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const order = idx.compare(
      id,
      0,
      ID_BYTES,
      ids + middle * ID_BYTES,
      ids + (middle + 1) * ID_BYTES,
    );
    if (order === 0) {
      const offsets = ids + count * (ID_BYTES + 4);
      const small = idx.readUInt32BE(offsets + middle * 4);
      if (!(small & 0x80000000)) return small;
      // Packs over 2 GiB: the high bit points into a table of 64-bit offsets.
      const large = offsets + count * 4 + (small & 0x7fffffff) * 8;
      return Number(idx.readBigUInt64BE(large));
    }
    if (order > 0) high = middle;
    else low = middle + 1;
  }
  return undefined;
}

/** The header of the pack entry at `offset`, from its first bytes. */
function packEntryHeader(header: Buffer, offset: number): PackEntry {
  let at = 0;
  let byte = header[at++]!;
  const kind = (byte >> 4) & 7;
  let size = byte & 15;
  for (let shift = 16; byte & 0x80; shift *= 128) {
    byte = header[at++]!;
    size += (byte & 0x7f) * shift;
  }
  if (kind === OFS_DELTA) {
    // Each further byte adds one before shifting: no two encodings of one distance.
    byte = header[at++]!;
    let distance = byte & 0x7f;
    while (byte & 0x80) {
      byte = header[at++]!;
      distance = (distance + 1) * 128 + (byte & 0x7f);
    }
    if (!(distance > 0 && distance <= offset))
      throw new GitObjectError("a delta base outside its pack");
    return { kind, size, at: offset + at, base: offset - distance };
  }
  if (kind === REF_DELTA) {
    const base = header.toString("hex", at, at + ID_BYTES);
    return { kind, size, at: offset + at + ID_BYTES, base };
  }
  if (!PACKED_TYPES[kind] || at > header.length)
    throw new GitObjectError("a pack entry of no known kind");
  return { kind, size, at: offset + at };
}

/** `base` with the delta's copies and inserts applied, checked against the sizes it states. */
export function applyDelta(base: Buffer, delta: Buffer): Buffer {
  let at = 0;
  const size = () => {
    let value = 0;
    for (let shift = 1, byte = 0x80; byte & 0x80; shift *= 128) {
      if (at >= delta.length) throw new GitObjectError("a delta cut short");
      byte = delta[at++]!;
      value += (byte & 0x7f) * shift;
    }
    return value;
  };
  if (size() !== base.length) throw new GitObjectError("a delta for another base");
  const result = Buffer.alloc(size());
  let written = 0;
  while (at < delta.length) {
    const op = delta[at++]!;
    if (op & 0x80) {
      // A copy from the base: which offset and size bytes follow is told by the op's low bits.
      let from = 0;
      let length = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) from += delta[at++]! * 2 ** (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (16 << bit)) length += delta[at++]! << (8 * bit);
      if (length === 0) length = 0x10000;
      if (at > delta.length || from + length > base.length || written + length > result.length)
        throw new GitObjectError("a delta copy out of bounds");
      base.copy(result, written, from, from + length);
      written += length;
    } else if (op > 0) {
      if (at + op > delta.length || written + op > result.length)
        throw new GitObjectError("a delta insert out of bounds");
      delta.copy(result, written, at, at + op);
      at += op;
      written += op;
    } else throw new GitObjectError("a delta op git does not write");
  }
  if (written !== result.length) throw new GitObjectError("a delta short of its size");
  return result;
}

/** A tree's entries: name, whether it is a tree, and the id it names. */
export function treeEntries(tree: Buffer): { name: string; isTree: boolean; oid: string }[] {
  const entries: { name: string; isTree: boolean; oid: string }[] = [];
  for (let at = 0; at < tree.length;) {
    const space = tree.indexOf(0x20, at);
    const nul = tree.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 1 + ID_BYTES > tree.length)
      throw new GitObjectError("a tree entry cut short");
    const mode = tree.toString("latin1", at, space);
    entries.push({
      name: tree.toString("utf8", space + 1, nul),
      isTree: mode === "40000",
      oid: tree.toString("hex", nul + 1, nul + 1 + ID_BYTES),
    });
    at = nul + 1 + ID_BYTES;
  }
  return entries;
}

/** A commit's header line `name` (`tree`, `committer`...), the first of them. */
export function commitHeader(commit: Buffer, name: string): string | undefined {
  const text = commit.toString("utf8");
  const end = text.indexOf("\n\n");
  for (const line of (end < 0 ? text : text.slice(0, end)).split("\n"))
    if (line.startsWith(`${name} `)) return line.slice(name.length + 1);
  return undefined;
}
