// Edits one manifest file's text so its declaration says what an accepted drift needs, and
// nothing else moves: comments, quoting, blank lines and flow maps stay byte-identical.
// Text in, text out: the YAML tree is only used to find where to splice.
import { isDeepStrictEqual } from "node:util";
import { isMap, isNode, isScalar, isSeq, Scalar, type YAMLSeq } from "yaml";
import type { JsonValue } from "../../domains/domain.js";
import { ManifestEditError } from "../../errors.js";
import { isListFormAt, keyFieldAt, type SpecListShapes } from "../lists.js";
import { declaredIn, intended, isJsonMap, type DeclaredChange } from "./changes.js";
import { resolve, type Hit } from "./find.js";
import { TextGeometry } from "./geometry.js";
import { parseYaml } from "../yaml.js";
import {
  asScalar,
  dataOf,
  endOf,
  isBlockValue,
  isCollection,
  isFlowCollection,
  span,
  startOf,
  type AnyPair,
  type Collection,
  type YamlNode,
} from "./yaml-nodes.js";
import {
  fitsOnALine,
  isSimple,
  itemLines,
  keyFirst,
  pairLines,
  renderBlockLiteral,
  renderFlow,
  renderInline,
  renderKey,
  type Scalarish,
} from "./render.js";
import { showPath, type SpecPath } from "../../spec-path.js";

/**
 * Applies the changes to one manifest file's text. Only the changed lines differ; the result is
 * re-read and must declare exactly the intended values, else ManifestEditError.
 */
export function applyChanges(
  text: string,
  changes: DeclaredChange[],
  lists: SpecListShapes,
): string {
  const want = intended(text, changes, lists);
  let edited = text;
  for (const change of changes) edited = new FileEdit(edited, lists).apply(change);
  const got = declaredIn(edited, lists);
  if (!isDeepStrictEqual(got, want))
    throw new ManifestEditError(
      `the edited file would not declare the intended values at ${changes.map((c) => showPath(c.path)).join(", ")}`,
    );
  return edited;
}

const singleValue = (path: SpecPath) =>
  new ManifestEditError(`${showPath(path)}: a "name = value" item holds a single value`, path);

class FileEdit extends TextGeometry {
  private readonly doc;
  private readonly step: number;

  constructor(
    text: string,
    private readonly lists: SpecListShapes,
  ) {
    super(text);
    this.doc = parseYaml(text);
    if (this.doc.errors.length)
      throw new ManifestEditError(`not valid YAML: ${this.doc.errors[0]!.message.split("\n")[0]}`);
    this.step = this.indentStep(this.doc);
  }

  apply(change: DeclaredChange): string {
    const hits = resolve(this.doc, this.lists, change.path);
    const hit = hits.at(-1)!;
    const found = hits.length === change.path.length + 1;
    if ("delete" in change) return found ? this.remove(hit) : this.text;
    if (found) return this.replace(hit, change.value, change.path);
    return this.insert(hit, change.path.slice(hit.path.length), change.value);
  }

  // --- replacing a value

  private replace(hit: Hit, value: JsonValue, path: SpecPath): string {
    const node = hit.node;
    if (hit.listFormItem) {
      if (value !== null && typeof value === "object") throw singleValue(path);
      return this.replaceScalar(
        asScalar(node),
        `${String(path.at(-1))} = ${String(value)}`,
        hit.inFlow,
        undefined,
      );
    }
    const isEmpty = (v: JsonValue) =>
      Array.isArray(v) ? v.length === 0 : isJsonMap(v) && Object.keys(v).length === 0;
    if (value === null || typeof value !== "object" || isEmpty(value)) {
      if (node && isBlockValue(node) && !hit.inFlow && hit.pair) {
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
        return this.spliceNode(node, Array.isArray(value) ? "[]" : "{}");
      return this.replaceScalar(asScalar(node), value, hit.inFlow, hit.pair);
    }
    if (hit.inFlow || isFlowCollection(node)) {
      const padded =
        isNode(node) && !isScalar(node) ? /^[{[] /.test(this.text.slice(startOf(node))) : true;
      return this.spliceBeforeComment(...span(node), renderFlow(value, padded));
    }
    const keyField = keyFieldAt(this.lists, path);
    const items =
      Array.isArray(value) && keyField ? value.map((item) => keyFirst(item, keyField)) : value;
    if (isSeq(node) && Array.isArray(items)) return this.replaceBlockSeq(node, items);
    if (!hit.pair)
      throw new ManifestEditError(`${showPath(path)}: cannot write a block value here`, path);
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
    if (hit.node && isBlockValue(hit.node) && hit.pair)
      return this.afterColon(hit.pair, inline, ...this.blockLines(hit.node));
    return this.spliceBeforeComment(...span(hit.node), inline);
  }

  /**
   * Replaces what follows a block pair's key (a scalar, `{}`, or a block collection) with block
   * lines below the key.
   */
  private belowKey(pair: AnyPair, node: YamlNode | null, lines: string[]): string {
    const keyLineEnd = this.lineEnd(startOf(pair.key));
    const body = this.eol + lines.join(this.eol);
    if (node && isBlockValue(node)) {
      const start = this.lineStart(startOf(node)) - this.eol.length;
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
    const column = this.column(startOf(seq));
    const hint = isMap(seq.items[0]) && !seq.items[0].flow ? "block" : "flow";
    const used = new Set<number>();
    // Items that did not change keep their exact text, comments included.
    const chunks = items.map((item) => {
      const i = seq.items.findIndex(
        (old, index) => !used.has(index) && isDeepStrictEqual(dataOf(old), item),
      );
      if (i < 0) return itemLines([item], column, hint, this.step).join(this.eol) + this.eol;
      used.add(i);
      const start = this.lineStart(startOf(seq.items[i]));
      const end = this.afterLine(this.contentEnd(seq.items[i]));
      return (
        this.text.slice(start, end) + (this.text.slice(start, end).endsWith("\n") ? "" : this.eol)
      );
    });
    const start = this.lineStart(startOf(seq));
    const end = this.afterLine(this.contentEnd(seq));
    let joined = chunks.join("");
    if (!this.text.slice(start, end).endsWith("\n")) joined = joined.slice(0, -this.eol.length);
    return this.splice(start, end, joined);
  }

  /**
   * Rewrites one scalar in place, keeping its quoting, its block style and the column of its
   * comment.
   */
  private replaceScalar(
    node: Scalar | null,
    value: Scalarish,
    inFlow: boolean,
    pair: AnyPair | undefined,
  ): string {
    if (!node?.range) throw new ManifestEditError("no value to replace");
    // `key:` with nothing after it: write right after the colon, with a space.
    const empty = node.range[0] === node.range[1];
    const at = this.text.slice(0, node.range[0]).trimEnd().length;
    const [start, end] = empty ? [at, at] : node.range;
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

  // --- removing a value

  private remove(hit: Hit): string {
    const parent = hit.parent!;
    const parentHit = resolve(this.doc, this.lists, hit.path.slice(0, -1)).at(-1)!;
    const first = startOf(hit.pair ? hit.pair.key : hit.node);
    const last = hit.pair
      ? Math.max(endOf(hit.pair.key), hit.node ? this.contentEnd(hit.node) : 0)
      : this.contentEnd(hit.node);
    if (parent.items.length === 1) return this.empty(parentHit, parent);
    if (parent.flow || hit.inFlow) {
      const after = /^\s*,[ \t]*/.exec(this.text.slice(last));
      if (after) return this.splice(first, last + after[0].length, "");
      const before = /,\s*$/.exec(this.text.slice(0, first));
      if (!before) throw new ManifestEditError("no separator before the entry to remove");
      return this.splice(before.index, last, "");
    }
    const lineStart = this.lineStart(first);
    const lead = this.text.slice(lineStart, first);
    if (/^\s*$/.test(lead) || (!hit.pair && /^\s*-\s*$/.test(lead)))
      return this.splice(lineStart, this.afterLine(last), "");
    // The first field of a `- key: value` item: pull the next field up onto the dash line.
    const next =
      isMap(parent) && hit.pair ? parent.items[parent.items.indexOf(hit.pair) + 1] : undefined;
    if (!next) throw new ManifestEditError("no field after the one to remove");
    return this.splice(first, startOf(next.key), "");
  }

  /**
   * The collection lost its last entry: write `{}` / `[]` so the file still declares an empty map
   * or list.
   */
  private empty(hit: Hit, collection: Collection): string {
    const inline = isMap(collection) ? "{}" : "[]";
    if (collection.flow || hit.inFlow) return this.spliceNode(collection, inline);
    if (hit.pair) return this.afterColon(hit.pair, inline, ...this.blockLines(collection));
    return this.splice(
      this.lineStart(startOf(collection)),
      this.afterLine(this.contentEnd(collection)),
      inline + this.eol,
    );
  }

  // --- adding a value

  private insert(hit: Hit, rest: SpecPath, value: JsonValue): string {
    const container = hit.node;
    const keyField = keyFieldAt(this.lists, hit.path);
    const listForm = isListFormAt(this.lists, hit.path);
    const entry = this.build(hit.path, rest, value);
    if (isSeq(container) && listForm && keyField === undefined) {
      if (rest.length !== 1 || (value !== null && typeof value === "object"))
        throw singleValue([...hit.path, ...rest]);
      return this.addItem(hit, container, `${String(rest[0])} = ${String(value)}`);
    }
    if (isSeq(container)) {
      if (keyField === undefined)
        throw new ManifestEditError(
          `${showPath([...hit.path, ...rest])}: no item to change in a list replaced whole`,
          [...hit.path, ...rest],
        );
      return this.addItem(hit, container, keyFirst(entry, keyField, String(rest[0])));
    }
    const asMap = { [String(rest[0])]: entry };
    if (isMap(container) && container.items.length && (container.flow || hit.inFlow)) {
      const padded = / }$/.test(this.text.slice(...span(container)));
      const last = container.items.at(-1)!;
      const at = endOf(last.value ?? last.key);
      return this.splice(at, at, `, ${renderKey(String(rest[0]))}: ${renderFlow(entry, padded)}`);
    }
    if (isMap(container) && container.items.length) {
      const column = this.keyColumn(container.items[0]!);
      return this.addLines(this.contentEnd(container), pairLines(asMap, column, this.step));
    }
    const isEmptyContainer =
      container === null ||
      (isScalar(container) && container.value === null) ||
      (isCollection(container) && container.items.length === 0);
    if (!isEmptyContainer)
      throw new ManifestEditError(
        `${showPath(hit.path)} is not a map, so ${String(rest[0])} cannot be added to it`,
        hit.path,
      );
    const fresh = keyField !== undefined ? [keyFirst(entry, keyField, String(rest[0]))] : asMap;
    if (hit.inFlow) return this.spliceNode(container, renderFlow(fresh, true));
    if (!hit.pair) {
      // The whole file is empty, only comments, or `{}`.
      const lines = pairLines(asMap, 0, this.step).join(this.eol);
      if (container?.range && !isScalar(container)) return this.spliceNode(container, lines);
      const sep = this.text === "" || this.text.endsWith("\n") ? "" : this.eol;
      return this.text + sep + lines + this.eol;
    }
    const column = this.keyColumn(hit.pair) + this.step;
    const lines = Array.isArray(fresh)
      ? itemLines(fresh, column, "flow", this.step)
      : pairLines(fresh, column, this.step);
    return this.belowKey(hit.pair, container, lines);
  }

  /**
   * The value to write for the missing path `rest` below `at`: maps, or keyed-list items, created
   * on the way.
   */
  private build(at: SpecPath, rest: SpecPath, value: JsonValue): JsonValue {
    if (rest.length === 1) return value;
    const here = [...at, rest[0]!];
    const keyField = keyFieldAt(this.lists, here);
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
      const padded = / \]$/.test(this.text.slice(...span(seq)));
      const rendered = renderFlow([item], false).slice(1, -1);
      if (seq.items.length === 0)
        return this.spliceNode(seq, padded ? `[ ${rendered} ]` : `[${rendered}]`);
      const at = endOf(seq.items.at(-1));
      return this.splice(at, at, `, ${rendered}`);
    }
    const first = seq.items[0];
    const hint = isMap(first) && !first.flow ? "block" : "flow";
    return this.addLines(
      this.contentEnd(seq),
      itemLines([item], this.column(startOf(seq)), hint, this.step),
    );
  }
}
