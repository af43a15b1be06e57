// The geometry of a manifest file's text around its YAML nodes: lines, columns, where a block
// value's lines end, the file's indentation step, and splicing text in without moving the rest.
import { isMap, isSeq, type Document } from "yaml";
import {
  endOf,
  isBlockCollection,
  span,
  startOf,
  type AnyPair,
  type YamlNode,
} from "./yaml-nodes.js";

export class TextGeometry {
  /** The file's line break, kept in every line written. */
  protected readonly eol: string;

  constructor(protected readonly text: string) {
    this.eol = text.includes("\r\n") ? "\r\n" : "\n";
  }

  protected lineStart(pos: number): number {
    return this.text.lastIndexOf("\n", pos - 1) + 1;
  }
  /** End of the line holding `pos`, before its line break. */
  protected lineEnd(pos: number): number {
    const nl = this.text.indexOf("\n", pos);
    if (nl < 0) return this.text.length;
    return this.text[nl - 1] === "\r" ? nl - 1 : nl;
  }
  protected column(pos: number): number {
    return pos - this.lineStart(pos);
  }
  /**
   * Just past the last line `pos` ends on (a block scalar's range already ends past its line
   * break).
   */
  protected afterLine(pos: number): number {
    if (pos > 0 && this.text[pos - 1] === "\n") return pos;
    const nl = this.text.indexOf("\n", pos);
    return nl < 0 ? this.text.length : nl + 1;
  }
  /**
   * Where a node's own text ends: a block collection ends with its last entry, not with what
   * follows it.
   */
  protected contentEnd(node: unknown): number {
    if (isMap(node) && !node.flow) {
      const last = node.items.at(-1);
      if (last) return Math.max(endOf(last.key), last.value ? this.contentEnd(last.value) : 0);
    }
    if (isSeq(node) && !node.flow && node.items.length) return this.contentEnd(node.items.at(-1));
    return endOf(node);
  }
  /**
   * From the line break before `node`'s first line to the end of its last line: a block value's own
   * lines.
   */
  protected blockLines(node: YamlNode): [number, number] {
    const start = this.lineStart(startOf(node));
    const end = this.contentEnd(node);
    const lastLineEnd =
      this.text[end - 1] === "\n" ? end - (this.text[end - 2] === "\r" ? 2 : 1) : this.lineEnd(end);
    return [start - (this.text[start - 2] === "\r" ? 2 : 1), lastLineEnd];
  }
  protected splice(start: number, end: number, insert: string): string {
    return this.text.slice(0, start) + insert + this.text.slice(end);
  }
  protected spliceNode(node: unknown, insert: string): string {
    return this.splice(...span(node), insert);
  }
  /** How far the file indents a nested map (2 when it has none). */
  protected indentStep(doc: Document): number {
    let found: number | undefined;
    const visitNode = (node: unknown): void => {
      if (found !== undefined || !isBlockCollection(node) || !isMap(node)) return;
      for (const pair of node.items) {
        const first = isBlockCollection(pair.value) && isMap(pair.value) && pair.value.items[0];
        if (first) {
          const inner = this.column(startOf(first.key)) - this.column(startOf(pair.key));
          if (inner > 0) found = inner;
        }
        visitNode(pair.value);
      }
    };
    visitNode(doc.contents);
    return found ?? 2;
  }
  protected keyColumn(pair: AnyPair): number {
    return this.column(startOf(pair.key));
  }
  /** Inserts ` text` right after the `:` of a block pair, before any comment on that line. */
  protected afterColon(
    pair: AnyPair,
    inline: string,
    removeFrom: number,
    removeTo: number,
  ): string {
    const colon = this.text.indexOf(":", endOf(pair.key));
    return (
      this.text.slice(0, colon + 1) +
      " " +
      inline +
      this.text.slice(colon + 1, removeFrom) +
      this.text.slice(removeTo)
    );
  }
  /**
   * Replaces one-line text, keeping a trailing comment in its column so aligned comments stay
   * aligned.
   */
  protected spliceBeforeComment(start: number, end: number, rendered: string): string {
    const gapToComment = /^( +)#/.exec(this.text.slice(end, this.lineEnd(end)))?.[1]?.length;
    if (gapToComment === undefined) return this.splice(start, end, rendered);
    const gap = Math.max(1, gapToComment - (rendered.length - (end - start)));
    return this.splice(start, end + gapToComment, rendered + " ".repeat(gap));
  }
  /** New lines after the line where `end` falls, keeping a missing final line break missing. */
  protected addLines(end: number, lines: string[]): string {
    const at = this.afterLine(end);
    const body = lines.join(this.eol);
    if (at === this.text.length && !this.text.endsWith("\n")) return this.text + this.eol + body;
    return this.splice(at, at, body + this.eol);
  }
}
