// Edits one manifest file's text so its declaration says what an accepted drift needs, and
// nothing else moves: comments, quoting, blank lines and flow maps stay byte-identical.
// Text in, text out: the YAML tree is only used to find where to splice.
import { isDeepStrictEqual } from "node:util";
import { hasUnprintable, printableJson, readsAsPlainString } from "../text/yaml-scalar.js";
import {
  isMap,
  isScalar,
  isSeq,
  parseDocument,
  Scalar,
  type Node as YamlNode,
  type Pair,
  type YAMLMap,
  type YAMLSeq,
} from "yaml";
import type { JsonValue, SpecPath } from "../domains/domain.js";
import { parseNameValue } from "../domains/list-form.js";

/** One leaf of a declaration to set or remove, at a canonical spec path (keyed items by key, list-form sysctls by name). */
export type DeclaredChange =
  { path: SpecPath; value: JsonValue } | { path: SpecPath; delete: true };

/** Which lists in a manifest are maps in disguise: the sysctl.conf-style `- name = value` lists and lists keyed by a field. */
export interface ManifestLists {
  listFormPaths: SpecPath[];
  keyedLists: { path: SpecPath; key: string }[];
}

/** The edit cannot be made safely; the file is left to a human. */
export class ManifestEditError extends Error {
  override readonly name = "ManifestEditError";
}

type JsonMap = { [key: string]: JsonValue };
const isJsonMap = (v: unknown): v is JsonMap => !!v && typeof v === "object" && !Array.isArray(v);
const samePath = (a: SpecPath, b: SpecPath) =>
  a.length === b.length && a.every((p, i) => String(p) === String(b[i]));

// ---------------------------------------------------------------------------------------------
// Which leaves differ

/**
 * The fewest changes turning one file's declaration of a domain (`before`, at `basePath`) into `after`.
 * Maps differ per key, keyed lists per item then per field; other lists are replaced whole, as layering does.
 */
export function declaredChanges(
  before: unknown,
  after: unknown,
  basePath: SpecPath,
  listKey?: string,
): DeclaredChange[] {
  if (after === undefined) return before === undefined ? [] : [{ path: basePath, delete: true }];
  if (listKey !== undefined) {
    const was = keyItems(before ?? [], listKey);
    const now = keyItems(after, listKey);
    if (was && now) {
      const changes: DeclaredChange[] = [];
      for (const [key, item] of Object.entries(now)) {
        if (!(key in was)) changes.push({ path: [...basePath, key], value: item });
        else changes.push(...declaredChanges(was[key], item, [...basePath, key]));
      }
      for (const key of Object.keys(was))
        if (!(key in now)) changes.push({ path: [...basePath, key], delete: true });
      return changes;
    }
  }
  if (isJsonMap(before) && isJsonMap(after)) {
    const changes: DeclaredChange[] = [];
    for (const [key, value] of Object.entries(after)) {
      if (!(key in before)) changes.push({ path: [...basePath, key], value });
      else changes.push(...declaredChanges(before[key], value, [...basePath, key]));
    }
    for (const key of Object.keys(before))
      if (!(key in after)) changes.push({ path: [...basePath, key], delete: true });
    return changes;
  }
  return isDeepStrictEqual(before, after) ? [] : [{ path: basePath, value: after as JsonValue }];
}

/** A keyed list (or its already-keyed map form) as a map from item key to item. */
function keyItems(list: unknown, listKey: string): Record<string, JsonValue> | undefined {
  if (isJsonMap(list)) return list;
  if (!Array.isArray(list)) return undefined;
  const byKey: Record<string, JsonValue> = {};
  for (const item of list) {
    if (!isJsonMap(item) || item[listKey] === undefined) return undefined;
    byKey[String(item[listKey])] = item;
  }
  return byKey;
}

// ---------------------------------------------------------------------------------------------
// What a file declares, in canonical form

/** The file's declared values with keyed lists and list-form maps turned into maps, as the loader sees them. */
export function declaredIn(text: string, lists: ManifestLists): JsonMap {
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length)
    throw new ManifestEditError(`not valid YAML: ${doc.errors[0]!.message.split("\n")[0]}`);
  const raw = doc.toJS({ maxAliasCount: 100 }) as unknown;
  if (raw === null || raw === undefined) return {};
  if (!isJsonMap(raw)) throw new ManifestEditError("a manifest file must be a YAML map of keys");
  return canonical(raw, lists);
}

function canonical(model: JsonMap, lists: ManifestLists): JsonMap {
  for (const { path, key } of lists.keyedLists) {
    const parent = mapAt(model, path.slice(0, -1));
    const last = String(path.at(-1));
    const keyed = parent && Array.isArray(parent[last]) ? keyItems(parent[last], key) : undefined;
    if (keyed) parent![last] = keyed;
  }
  for (const path of lists.listFormPaths) {
    const parent = mapAt(model, path.slice(0, -1));
    const list = parent?.[String(path.at(-1))];
    if (Array.isArray(list) && list.every((item) => typeof item === "string")) {
      parent![String(path.at(-1))] = Object.fromEntries(
        list.map((item) => parseNameValue(item)).filter((e) => e !== undefined),
      );
    }
  }
  return model;
}

function mapAt(model: JsonMap, path: SpecPath, create = false): JsonMap | undefined {
  let current: JsonMap = model;
  for (const part of path) {
    const next = current[String(part)];
    if (!isJsonMap(next)) {
      if (!create) return undefined;
      current[String(part)] = {};
    }
    current = current[String(part)] as JsonMap;
  }
  return current;
}

/** What `declaredIn` must say after the changes: the yardstick every edit is checked against. */
function intended(text: string, changes: readonly DeclaredChange[], lists: ManifestLists): JsonMap {
  const model = declaredIn(text, lists);
  const raw = (parseDocument(text).toJS() ?? {}) as JsonMap;
  for (const change of changes) {
    const parent = mapAt(model, change.path.slice(0, -1), !("delete" in change));
    const last = String(change.path.at(-1));
    if ("delete" in change) {
      if (parent) delete parent[last];
      continue;
    }
    const listForm =
      lists.listFormPaths.some((p) => samePath(p, change.path.slice(0, -1))) &&
      Array.isArray(mapAt(raw, change.path.slice(0, -2))?.[String(change.path.at(-2))]);
    parent![last] = listForm ? String(change.value) : structuredClone(change.value);
  }
  canonical(model, lists);
  // A keyed item written into the file always names itself, even when the change left its key out.
  for (const { path, key } of lists.keyedLists) {
    for (const [name, item] of Object.entries(mapAt(model, path) ?? {}))
      if (isJsonMap(item) && !(key in item)) mapAt(model, path)![name] = { [key]: name, ...item };
  }
  return model;
}

// ---------------------------------------------------------------------------------------------
// Applying changes to text

/**
 * Applies the changes to one manifest file's text. Only the changed lines differ; the result is
 * re-read and must declare exactly the intended values, else ManifestEditError.
 */
export function applyChanges(
  text: string,
  changes: DeclaredChange[],
  lists: ManifestLists,
): string {
  const want = intended(text, changes, lists);
  let edited = text;
  for (const change of changes) edited = new FileEdit(edited, lists).apply(change);
  const got = declaredIn(edited, lists);
  if (!isDeepStrictEqual(got, want))
    throw new ManifestEditError(
      `the edited file would not declare the intended values at ${changes.map((c) => c.path.join(".")).join(", ")}`,
    );
  return edited;
}

type Scalarish = string | number | boolean | null;
type Collection = YAMLMap<unknown, unknown> | YAMLSeq<unknown>;

/** Where a spec path landed in the file. */
interface Hit {
  node: YamlNode | null;
  /** The map pair holding `node`, when it is a map value. */
  pair?: Pair<unknown, unknown>;
  parent?: Collection;
  /** Inside a flow collection: only flow text may be written here. */
  inFlow: boolean;
  /** An item of a `- name = value` list. */
  listFormItem?: boolean;
  /** What `path` prefix this node stands for. */
  path: SpecPath;
}

class FileEdit {
  private readonly doc;
  private readonly eol: string;
  private readonly step: number;

  constructor(
    private readonly text: string,
    private readonly lists: ManifestLists,
  ) {
    this.doc = parseDocument(text, { uniqueKeys: true });
    if (this.doc.errors.length)
      throw new ManifestEditError(`not valid YAML: ${this.doc.errors[0]!.message.split("\n")[0]}`);
    this.eol = text.includes("\r\n") ? "\r\n" : "\n";
    this.step = this.indentStep();
  }

  apply(change: DeclaredChange): string {
    const hits = this.resolve(change.path);
    const hit = hits.at(-1)!;
    const found = hits.length === change.path.length + 1;
    if ("delete" in change) return found ? this.remove(hit) : this.text;
    if (found) return this.replace(hit, change.value, change.path);
    return this.insert(hit, change.path.slice(hit.path.length), change.value);
  }

  // --- finding nodes

  private resolve(path: SpecPath): Hit[] {
    const root = this.doc.contents as YamlNode | null;
    const hits: Hit[] = [
      { node: isScalar(root) && root.value === null ? null : root, inFlow: false, path: [] },
    ];
    for (const [i, part] of path.entries()) {
      const at = hits[i]!;
      const prefix = path.slice(0, i);
      const inFlow = at.inFlow || ((isMap(at.node) || isSeq(at.node)) && !!at.node.flow);
      const keyField = this.keyFieldAt(prefix);
      const listForm = this.lists.listFormPaths.some((p) => samePath(p, prefix));
      let next: Hit | undefined;
      if (isMap(at.node)) {
        const pair = at.node.items.find(
          (p) => isScalar(p.key) && String(p.key.value) === String(part),
        );
        if (pair)
          next = {
            node: (pair.value as YamlNode | null) ?? null,
            pair,
            parent: at.node,
            inFlow,
            path: path.slice(0, i + 1),
          };
      } else if (isSeq(at.node)) {
        const seq = at.node;
        const item = seq.items.find((it) =>
          keyField !== undefined
            ? isMap(it) && String(it.get(keyField)) === String(part)
            : listForm
              ? isScalar(it) &&
                typeof it.value === "string" &&
                parseNameValue(it.value)?.[0] === String(part)
              : typeof part === "number" && seq.items[part] === it,
        ) as YamlNode | undefined;
        if (item)
          next = {
            node: item,
            parent: seq,
            inFlow,
            listFormItem: listForm && keyField === undefined,
            path: path.slice(0, i + 1),
          };
      }
      if (!next) break;
      hits.push(next);
      if (next.listFormItem && i < path.length - 1)
        throw new ManifestEditError(`${path.join(".")}: a "name = value" item holds no fields`);
    }
    return hits;
  }

  private keyFieldAt(path: SpecPath): string | undefined {
    return this.lists.keyedLists.find((k) => samePath(k.path, path))?.key;
  }

  // --- text geometry

  private lineStart(pos: number): number {
    return this.text.lastIndexOf("\n", pos - 1) + 1;
  }
  /** End of the line holding `pos`, before its line break. */
  private lineEnd(pos: number): number {
    const nl = this.text.indexOf("\n", pos);
    if (nl < 0) return this.text.length;
    return this.text[nl - 1] === "\r" ? nl - 1 : nl;
  }
  private column(pos: number): number {
    return pos - this.lineStart(pos);
  }
  /** Just past the last line `pos` ends on (a block scalar's range already ends past its line break). */
  private afterLine(pos: number): number {
    if (pos > 0 && this.text[pos - 1] === "\n") return pos;
    const nl = this.text.indexOf("\n", pos);
    return nl < 0 ? this.text.length : nl + 1;
  }
  private contentEnd(node: unknown): number {
    if (isMap(node) && !node.flow && node.items.length) {
      const last = node.items.at(-1)!;
      return Math.max(
        (last.key as YamlNode).range![1],
        last.value ? this.contentEnd(last.value) : 0,
      );
    }
    if (isSeq(node) && !node.flow && node.items.length) return this.contentEnd(node.items.at(-1));
    return (node as YamlNode).range![1];
  }
  /** From the line break before `node`'s first line to the end of its last line: a block value's own lines. */
  private blockLines(node: YamlNode): [number, number] {
    const start = this.lineStart(node.range![0]);
    const end = this.contentEnd(node);
    const lastLineEnd =
      this.text[end - 1] === "\n" ? end - (this.text[end - 2] === "\r" ? 2 : 1) : this.lineEnd(end);
    return [start - (this.text[start - 2] === "\r" ? 2 : 1), lastLineEnd];
  }
  private splice(start: number, end: number, insert: string): string {
    return this.text.slice(0, start) + insert + this.text.slice(end);
  }
  private indentStep(): number {
    let found: number | undefined;
    const visitNode = (node: unknown): void => {
      if (found !== undefined || !isMap(node) || node.flow) return;
      for (const pair of node.items) {
        if (isMap(pair.value) && !pair.value.flow && pair.value.items.length) {
          const inner =
            this.column((pair.value.items[0]!.key as YamlNode).range![0]) -
            this.column((pair.key as YamlNode).range![0]);
          if (inner > 0) found = inner;
        }
        visitNode(pair.value);
      }
    };
    visitNode(this.doc.contents);
    return found ?? 2;
  }
  private keyColumn(pair: Pair<unknown, unknown>): number {
    return this.column((pair.key as YamlNode).range![0]);
  }
  /** Inserts ` text` right after the `:` of a block pair, before any comment on that line. */
  private afterColon(
    pair: Pair<unknown, unknown>,
    inline: string,
    removeFrom: number,
    removeTo: number,
  ): string {
    const colon = this.text.indexOf(":", (pair.key as YamlNode).range![1]);
    return (
      this.text.slice(0, colon + 1) +
      " " +
      inline +
      this.text.slice(colon + 1, removeFrom) +
      this.text.slice(removeTo)
    );
  }

  // --- replacing a value

  private replace(hit: Hit, value: JsonValue, path: SpecPath): string {
    const node = hit.node;
    if (hit.listFormItem) {
      if (value !== null && typeof value === "object")
        throw new ManifestEditError(
          `${path.join(".")}: a "name = value" item holds a single value`,
        );
      return this.replaceScalar(
        node as Scalar,
        `${String(path.at(-1))} = ${String(value)}`,
        hit.inFlow,
        undefined,
      );
    }
    const isEmpty = (v: JsonValue) =>
      Array.isArray(v) ? v.length === 0 : isJsonMap(v) && Object.keys(v).length === 0;
    if (value === null || typeof value !== "object" || isEmpty(value)) {
      if (node && !isScalar(node) && !(node as Collection).flow && !hit.inFlow && hit.pair) {
        // A block collection becomes an inline value on its key's line.
        const inline =
          value !== null && typeof value === "object"
            ? Array.isArray(value)
              ? "[]"
              : "{}"
            : renderInline(value, false);
        return this.afterColon(hit.pair, inline, ...this.blockLines(node));
      }
      if (value !== null && typeof value === "object")
        return this.splice(node!.range![0], node!.range![1], Array.isArray(value) ? "[]" : "{}");
      return this.replaceScalar(node as Scalar | null, value, hit.inFlow, hit.pair);
    }
    if (hit.inFlow || (node && (isMap(node) || isSeq(node)) && node.flow)) {
      const padded =
        node && !isScalar(node) ? /^[{[] /.test(this.text.slice(node.range![0])) : true;
      return this.spliceBeforeComment(node!.range![0], node!.range![1], renderFlow(value, padded));
    }
    const keyField = this.keyFieldAt(path);
    const items =
      Array.isArray(value) && keyField ? value.map((item) => keyFirst(item, keyField)) : value;
    if (isSeq(node) && Array.isArray(items)) return this.replaceBlockSeq(node, items);
    if (!hit.pair)
      throw new ManifestEditError(`${path.join(".")}: cannot write a block value here`);
    const column = this.keyColumn(hit.pair) + this.step;
    // Lists of plain one-line values are written `[a, b]`, as the sample manifests write them.
    if (Array.isArray(items) && items.every(isSimple) && fitsOnALine(items))
      return this.replaceScalarish(hit, renderFlow(items, false));
    const lines = Array.isArray(items)
      ? itemLines(items, column, "flow", this.step)
      : pairLines(items, column, this.step);
    return this.belowKey(hit.pair, node, lines);
  }

  private replaceScalarish(hit: Hit, inline: string): string {
    const node = hit.node;
    if (node && !isScalar(node) && !(node as Collection).flow && hit.pair) {
      return this.afterColon(hit.pair, inline, ...this.blockLines(node));
    }
    return this.spliceBeforeComment(node!.range![0], node!.range![1], inline);
  }

  /** Replaces what follows a block pair's key (a scalar, `{}`, or a block collection) with block lines below the key. */
  private belowKey(pair: Pair<unknown, unknown>, node: YamlNode | null, lines: string[]): string {
    const keyLineEnd = this.lineEnd((pair.key as YamlNode).range![0]);
    const body = this.eol + lines.join(this.eol);
    if (node && !isScalar(node) && !(node as Collection).flow) {
      const start = this.lineStart(node.range![0]) - this.eol.length;
      const end = this.afterLine(this.contentEnd(node));
      const tail = end === this.text.length && !this.text.endsWith("\n") ? "" : this.eol;
      return this.splice(Math.max(start, keyLineEnd), end, body + tail);
    }
    // An inline value (null, `{}`, `[]`) on the key's line goes; the line's comment stays.
    const withBody = this.splice(keyLineEnd, keyLineEnd, body);
    if (!node?.range || node.range[0] === node.range[1]) return withBody;
    let from = node.range[0];
    while (withBody[from - 1] === " " || withBody[from - 1] === "\t") from--;
    return withBody.slice(0, from) + withBody.slice(node.range[1]);
  }

  private replaceBlockSeq(seq: YAMLSeq<unknown>, items: JsonValue[]): string {
    const column = this.column(seq.range![0]);
    const hint = isMap(seq.items[0]) && !seq.items[0].flow ? "block" : "flow";
    const used = new Set<number>();
    // Items that did not change keep their exact text, comments included.
    const chunks = items.map((item) => {
      const i = seq.items.findIndex(
        (old, index) => !used.has(index) && isDeepStrictEqual((old as YamlNode).toJSON(), item),
      );
      if (i < 0) return itemLines([item], column, hint, this.step).join(this.eol) + this.eol;
      used.add(i);
      const start = this.lineStart((seq.items[i] as YamlNode).range![0]);
      const end = this.afterLine(this.contentEnd(seq.items[i]));
      return (
        this.text.slice(start, end) + (this.text.slice(start, end).endsWith("\n") ? "" : this.eol)
      );
    });
    const start = this.lineStart(seq.range![0]);
    const end = this.afterLine(this.contentEnd(seq));
    let joined = chunks.join("");
    if (!this.text.slice(start, end).endsWith("\n")) joined = joined.slice(0, -this.eol.length);
    return this.splice(start, end, joined);
  }

  /** Rewrites one scalar in place, keeping its quoting, its block style and the column of its comment. */
  private replaceScalar(
    node: Scalar | null,
    value: Scalarish,
    inFlow: boolean,
    pair: Pair<unknown, unknown> | undefined,
  ): string {
    if (!node?.range) throw new ManifestEditError("no value to replace");
    // `key:` with nothing after it: write right after the colon, with a space.
    const empty = node.range[0] === node.range[1];
    const [start, end] = empty
      ? Array(2).fill(this.text.slice(0, node.range[0]).trimEnd().length)
      : node.range;
    const lead = empty ? " " : "";
    const wasBlock = node.type === Scalar.BLOCK_LITERAL || node.type === Scalar.BLOCK_FOLDED;
    const multiLine = typeof value === "string" && value.includes("\n");
    const quoted = node.type === Scalar.QUOTE_DOUBLE || node.type === Scalar.QUOTE_SINGLE;
    if (!inFlow && pair && typeof value === "string" && (wasBlock || (multiLine && !quoted))) {
      const keyColumn = this.keyColumn(pair);
      const indicator = wasBlock
        ? /^[|>][-+]?([1-9])?/.exec(this.text.slice(start, end))?.[1]
        : undefined;
      const oldIndent = indicator
        ? keyColumn + Number(indicator)
        : wasBlock
          ? /\n( +)\S/.exec(this.text.slice(start, end))?.[1]?.length
          : undefined;
      const block = renderBlockLiteral(value, (oldIndent ?? keyColumn + this.step) - keyColumn);
      if (block) {
        const headerLineEnd = this.lineEnd(start);
        const headerComment = wasBlock
          ? this.text.slice(start, headerLineEnd).replace(/^[|>][-+0-9]*/, "")
          : this.text.slice(end, headerLineEnd);
        const indent = " ".repeat(oldIndent ?? keyColumn + this.step);
        const body = block.lines.map((line) => (line ? indent + line : "")).join(this.eol);
        const spanEnd = wasBlock ? end : headerLineEnd;
        // A block ends with a line break; at the very end of a file without one, it gains one.
        const tail = wasBlock || spanEnd === this.text.length ? this.eol : "";
        return this.splice(
          start,
          spanEnd,
          lead + block.header + headerComment + this.eol + body + tail,
        );
      }
    }
    return this.spliceBeforeComment(start, end, lead + renderInline(value, inFlow, node.type));
  }

  /** Replaces one-line text, keeping a trailing comment in its column so aligned comments stay aligned. */
  private spliceBeforeComment(start: number, end: number, rendered: string): string {
    const rest = /^( +)#/.exec(this.text.slice(end, this.lineEnd(end)));
    if (!rest) return this.splice(start, end, rendered);
    const gap = Math.max(1, rest[1]!.length - (rendered.length - (end - start)));
    return this.splice(start, end + rest[1]!.length, rendered + " ".repeat(gap));
  }

  // --- removing a value

  private remove(hit: Hit): string {
    const parent = hit.parent!;
    const parentHit = this.resolve(hit.path.slice(0, -1)).at(-1)!;
    const first = hit.pair ? (hit.pair.key as YamlNode).range![0] : hit.node!.range![0];
    const last = hit.pair
      ? Math.max((hit.pair.key as YamlNode).range![1], hit.node ? this.contentEnd(hit.node) : 0)
      : this.contentEnd(hit.node);
    if (parent.items.length === 1) return this.empty(parentHit, parent);
    if (parent.flow || hit.inFlow) {
      const after = /^\s*,[ \t]*/.exec(this.text.slice(last));
      if (after) return this.splice(first, last + after[0].length, "");
      const before = /,\s*$/.exec(this.text.slice(0, first));
      return this.splice(before!.index, last, "");
    }
    const lineStart = this.lineStart(first);
    const lead = this.text.slice(lineStart, first);
    if (/^\s*$/.test(lead) || (!hit.pair && /^\s*-\s*$/.test(lead)))
      return this.splice(lineStart, this.afterLine(last), "");
    // The first field of a `- key: value` item: pull the next field up onto the dash line.
    const index = parent.items.indexOf(hit.pair as never);
    const next = (parent as YAMLMap).items[index + 1]!;
    return this.splice(first, (next.key as YamlNode).range![0], "");
  }

  /** The collection lost its last entry: write `{}` / `[]` so the file still declares an empty map or list. */
  private empty(hit: Hit, collection: Collection): string {
    const inline = isMap(collection) ? "{}" : "[]";
    if (collection.flow || hit.inFlow)
      return this.splice(collection.range![0], collection.range![1], inline);
    if (hit.pair) return this.afterColon(hit.pair, inline, ...this.blockLines(collection));
    return this.splice(
      this.lineStart(collection.range![0]),
      this.afterLine(this.contentEnd(collection)),
      inline + this.eol,
    );
  }

  // --- adding a value

  private insert(hit: Hit, rest: SpecPath, value: JsonValue): string {
    const container = hit.node;
    const keyField = this.keyFieldAt(hit.path);
    const listForm = this.lists.listFormPaths.some((p) => samePath(p, hit.path));
    const entry = this.build(hit.path, rest, value);
    if (isSeq(container) && listForm && keyField === undefined) {
      if (rest.length !== 1 || (value !== null && typeof value === "object"))
        throw new ManifestEditError(
          `${[...hit.path, ...rest].join(".")}: a "name = value" item holds a single value`,
        );
      return this.addItem(hit, container, `${String(rest[0])} = ${String(value)}`);
    }
    if (isSeq(container)) {
      if (keyField === undefined)
        throw new ManifestEditError(
          `${[...hit.path, ...rest].join(".")}: no item to change in a list replaced whole`,
        );
      return this.addItem(hit, container, keyFirst(entry, keyField, String(rest[0])));
    }
    const asMap = { [String(rest[0])]: entry };
    if (isMap(container) && container.items.length && (container.flow || hit.inFlow)) {
      const padded = / }$/.test(this.text.slice(container.range![0], container.range![1]));
      const last = container.items.at(-1)!;
      const at = ((last.value ?? last.key) as YamlNode).range![1];
      return this.splice(at, at, `, ${renderKey(String(rest[0]))}: ${renderFlow(entry, padded)}`);
    }
    if (isMap(container) && container.items.length) {
      const column = this.keyColumn(container.items[0]!);
      return this.addLines(this.contentEnd(container), pairLines(asMap, column, this.step));
    }
    const isEmptyContainer =
      container === null ||
      (isScalar(container) && container.value === null) ||
      ((isMap(container) || isSeq(container)) && container.items.length === 0);
    if (!isEmptyContainer)
      throw new ManifestEditError(
        `${hit.path.join(".")} is not a map, so ${String(rest[0])} cannot be added to it`,
      );
    const fresh = keyField !== undefined ? [keyFirst(entry, keyField, String(rest[0]))] : asMap;
    if (hit.inFlow)
      return this.splice(container!.range![0], container!.range![1], renderFlow(fresh, true));
    if (!hit.pair) {
      // The whole file is empty, only comments, or `{}`.
      const lines = pairLines(asMap, 0, this.step).join(this.eol);
      if (container?.range && !isScalar(container))
        return this.splice(container.range[0], container.range[1], lines);
      const sep = this.text === "" || this.text.endsWith("\n") ? "" : this.eol;
      return this.text + sep + lines + this.eol;
    }
    const column = this.keyColumn(hit.pair) + this.step;
    const lines = Array.isArray(fresh)
      ? itemLines(fresh, column, "flow", this.step)
      : pairLines(fresh, column, this.step);
    return this.belowKey(hit.pair, container, lines);
  }

  /** The value to write for the missing path `rest` below `at`: maps, or keyed-list items, created on the way. */
  private build(at: SpecPath, rest: SpecPath, value: JsonValue): JsonValue {
    if (rest.length === 1) return value;
    const here = [...at, rest[0]!];
    const keyField = this.keyFieldAt(here);
    const inner = this.build(here, rest.slice(1), value);
    if (keyField !== undefined) return [keyFirst(inner, keyField, String(rest[1]))];
    return { [String(rest[1])]: inner };
  }

  private addItem(hit: Hit, seq: YAMLSeq<unknown>, item: JsonValue): string {
    if (seq.items.length === 0 || seq.flow || hit.inFlow) {
      if (seq.items.length === 0 && !hit.inFlow && hit.pair)
        return this.belowKey(
          hit.pair,
          seq,
          itemLines([item], this.keyColumn(hit.pair) + this.step, "flow", this.step),
        );
      const padded = / \]$/.test(this.text.slice(seq.range![0], seq.range![1]));
      const rendered = renderFlow([item], false).slice(1, -1);
      if (seq.items.length === 0)
        return this.splice(
          seq.range![0],
          seq.range![1],
          padded ? `[ ${rendered} ]` : `[${rendered}]`,
        );
      const at = (seq.items.at(-1) as YamlNode).range![1];
      return this.splice(at, at, `, ${rendered}`);
    }
    const first = seq.items[0];
    const hint = isMap(first) && !first.flow ? "block" : "flow";
    return this.addLines(
      this.contentEnd(seq),
      itemLines([item], this.column(seq.range![0]), hint, this.step),
    );
  }

  /** New lines after the line where `end` falls, keeping a missing final line break missing. */
  private addLines(end: number, lines: string[]): string {
    const at = this.afterLine(end);
    const body = lines.join(this.eol);
    if (at === this.text.length && !this.text.endsWith("\n")) return this.text + this.eol + body;
    return this.splice(at, at, body + this.eol);
  }
}

/** An item of a keyed list with its key field first, as people write them. */
function keyFirst(item: JsonValue, keyField: string, key?: string): JsonValue {
  if (!isJsonMap(item)) return item;
  const { [keyField]: own, ...rest } = item;
  return { [keyField]: own ?? key ?? null, ...rest };
}

// ---------------------------------------------------------------------------------------------
// Rendering values as YAML text

/**
 * Reads back as exactly `value` in a block map value (or a flow sequence): the check for every scalar
 * written. YAML 1.1 readers (yamllint, PyYAML) must agree too, so `yes` or `2027-03-31` get quotes.
 */
function readsAs(text: string, value: Scalarish, inFlow: boolean): boolean {
  return (["1.2", "1.1"] as const).every((version) => {
    const doc = parseDocument(inFlow ? `[${text}]` : `k: ${text}`, { version });
    if (doc.errors.length || doc.warnings.length) return false;
    return isDeepStrictEqual(doc.toJS(), inFlow ? [value] : { k: value });
  });
}

function doubleQuoted(value: string): string {
  return printableJson(value);
}

/** A number as text YAML 1.2 and PyYAML both read as that number (PyYAML's floats need a dot: `1.0e+21`). */
const numberText = (value: number): string => String(value).replace(/^(-?\d+)e/, "$1.0e");

function renderInline(value: Scalarish, inFlow: boolean, style?: Scalar.Type): string {
  if (typeof value === "number") return numberText(value);
  if (typeof value !== "string") return value === null ? "null" : String(value);
  const single = hasUnprintable(value.replace(/\t/g, ""))
    ? undefined
    : `'${value.replaceAll("'", "''")}'`;
  const plain =
    single !== undefined && readsAsPlainString(value, inFlow ? "flow" : "block")
      ? value
      : undefined;
  const candidates =
    style === Scalar.QUOTE_DOUBLE
      ? [doubleQuoted(value)]
      : style === Scalar.QUOTE_SINGLE
        ? [single, doubleQuoted(value)]
        : [plain, doubleQuoted(value)];
  for (const candidate of candidates)
    if (candidate !== undefined && candidate !== "" && readsAs(candidate, value, inFlow))
      return candidate;
  return doubleQuoted(value);
}

/** A `|` block for a string, with the chomping and indentation indicators that make it read back exactly. */
function renderBlockLiteral(
  value: string,
  indent: number,
): { header: string; lines: string[] } | undefined {
  if (hasUnprintable(value.replace(/[\t\n]/g, ""))) return undefined;
  const body = value.replace(/\n+$/, "");
  const trailing = value.length - body.length;
  const chomp = trailing === 0 ? "-" : trailing === 1 ? "" : "+";
  const lines = body === "" ? [] : body.split("\n");
  for (let i = 1; i < trailing; i++) lines.push("");
  const firstText = lines.find((line) => line.trim() !== "");
  const indicator = firstText !== undefined && /^[ \t]/.test(firstText) ? String(indent) : "";
  const header = `|${indicator}${chomp}`;
  if (indent < 1 || indent > 9) return undefined;
  const probe = parseDocument(
    `k: ${header}\n${lines.map((line) => (line ? " ".repeat(indent) + line : "")).join("\n")}\n`,
  );
  if (probe.errors.length || !isDeepStrictEqual(probe.toJS(), { k: value })) return undefined;
  return { header, lines };
}

function renderKey(key: string): string {
  // readsAsPlainString first: it turns away `<<`, which the 1.1 reader would try to merge.
  const readsPlain = () =>
    (["1.2", "1.1"] as const).every((version) => {
      const doc = parseDocument(`${key}: 1`, { version });
      return (
        !doc.errors.length && !doc.warnings.length && isDeepStrictEqual(doc.toJS(), { [key]: 1 })
      );
    });
  return key !== "" && readsAsPlainString(key) && readsPlain() ? key : doubleQuoted(key);
}

function renderFlow(value: JsonValue, padded: boolean): string {
  if (Array.isArray(value)) return `[${value.map((item) => renderFlow(item, padded)).join(", ")}]`;
  if (isJsonMap(value)) {
    const inner = Object.entries(value)
      .map(([k, v]) => `${renderKey(k)}: ${renderFlow(v, padded)}`)
      .join(", ");
    return inner === "" ? "{}" : padded ? `{ ${inner} }` : `{${inner}}`;
  }
  return renderInline(value, true);
}

const isSimple = (v: JsonValue) => v === null || typeof v !== "object";
const fitsOnALine = (v: JsonValue): boolean =>
  Array.isArray(v)
    ? v.every(fitsOnALine)
    : isJsonMap(v)
      ? Object.values(v).every(fitsOnALine)
      : typeof v !== "string" || !v.includes("\n");

/** `key: value` lines at `column`, nested maps indented by `step`; lists of plain values in flow style. */
function pairLines(map: JsonMap, column: number, step: number): string[] {
  const pad = " ".repeat(column);
  const lines: string[] = [];
  for (const [key, value] of Object.entries(map)) {
    const head = `${pad}${renderKey(key)}:`;
    if (typeof value === "string" && value.includes("\n")) {
      const block = renderBlockLiteral(value, step);
      if (block) {
        lines.push(
          `${head} ${block.header}`,
          ...block.lines.map((line) => (line ? " ".repeat(column + step) + line : "")),
        );
        continue;
      }
    }
    if (
      isSimple(value) ||
      (Array.isArray(value) && value.every(isSimple) && fitsOnALine(value)) ||
      ((isJsonMap(value) || Array.isArray(value)) && Object.keys(value).length === 0)
    ) {
      lines.push(
        `${head} ${isSimple(value) ? renderInline(value, false) : renderFlow(value, true)}`,
      );
    } else if (Array.isArray(value))
      lines.push(head, ...itemLines(value, column + step, "flow", step));
    else lines.push(head, ...pairLines(value, column + step, step));
  }
  return lines;
}

/** `- item` lines at `column`; map items as one-line flow maps (`hint` "flow") when they fit, else as block maps. */
function itemLines(
  items: JsonValue[],
  column: number,
  hint: "flow" | "block",
  step: number,
): string[] {
  const pad = " ".repeat(column);
  return items.flatMap((item) => {
    if (isJsonMap(item) && Object.keys(item).length && (hint === "block" || !fitsOnALine(item))) {
      const [first, ...rest] = pairLines(item, column + 2, step);
      return [`${pad}- ${first!.slice(column + 2)}`, ...rest];
    }
    if (typeof item === "string" && item.includes("\n")) return [`${pad}- ${doubleQuoted(item)}`];
    return [`${pad}- ${isSimple(item) ? renderInline(item, false) : renderFlow(item, true)}`];
  });
}
