// Rendering values as YAML text: scalars (plain, quoted, `|` blocks), flow collections and
// block lines. Every scalar written is checked to read back as exactly its value, in YAML 1.2
// and in the YAML 1.1 readers (yamllint, PyYAML) that tools around the manifests use.
import { isDeepStrictEqual } from "node:util";
import { parseDocument, Scalar } from "yaml";
import type { JsonValue } from "../../domains/domain.js";
import { hasUnprintable, printableJson, readsAsPlainString } from "../../text/yaml-scalar.js";
import { isJsonMap, type JsonMap } from "./changes.js";

export type Scalarish = string | number | boolean | null;

/**
 * Reads back as exactly `value` in a block map value (or a flow sequence): the check for every
 * scalar written. YAML 1.1 readers (yamllint, PyYAML) must agree too, so `yes` or `2027-03-31` get
 * quotes.
 */
function readsAs(text: string, value: Scalarish, inFlow: boolean): boolean {
  return (["1.2", "1.1"] as const).every((version) => {
    const doc = parseDocument(inFlow ? `[${text}]` : `k: ${text}`, { version });
    if (doc.errors.length || doc.warnings.length) return false;
    return isDeepStrictEqual(doc.toJS(), inFlow ? [value] : { k: value });
  });
}

export function doubleQuoted(value: string): string {
  return printableJson(value);
}

/**
 * A number as text YAML 1.2 and PyYAML both read as that number (PyYAML's floats need a dot:
 * `1.0e+21`).
 */
const numberText = (value: number): string => String(value).replace(/^(-?\d+)e/, "$1.0e");

export function renderInline(value: Scalarish, inFlow: boolean, style?: Scalar.Type): string {
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

/**
 * A `|` block for a string, with the chomping and indentation indicators that make it read back
 * exactly.
 */
export function renderBlockLiteral(
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

export function renderKey(key: string): string {
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

export function renderFlow(value: JsonValue, padded: boolean): string {
  if (Array.isArray(value)) return `[${value.map((item) => renderFlow(item, padded)).join(", ")}]`;
  if (isJsonMap(value)) {
    const inner = Object.entries(value)
      .map(([k, v]) => `${renderKey(k)}: ${renderFlow(v, padded)}`)
      .join(", ");
    return inner === "" ? "{}" : padded ? `{ ${inner} }` : `{${inner}}`;
  }
  return renderInline(value, true);
}

export const isSimple = (v: JsonValue) => v === null || typeof v !== "object";
export const fitsOnALine = (v: JsonValue): boolean =>
  Array.isArray(v)
    ? v.every(fitsOnALine)
    : isJsonMap(v)
      ? Object.values(v).every(fitsOnALine)
      : typeof v !== "string" || !v.includes("\n");

/**
 * `key: value` lines at `column`, nested maps indented by `step`; lists of plain values in flow
 * style.
 */
export function pairLines(map: JsonMap, column: number, step: number): string[] {
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

/**
 * `- item` lines at `column`; map items as one-line flow maps (`hint` "flow") when they fit, else
 * as block maps.
 */
export function itemLines(
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

/** An item of a keyed list with its key field first, as people write them. */
export function keyFirst(item: JsonValue, keyField: string, key?: string): JsonValue {
  if (!isJsonMap(item)) return item;
  const { [keyField]: own, ...rest } = item;
  return { [keyField]: own ?? key ?? null, ...rest };
}
