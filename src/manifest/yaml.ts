// Parsing manifest YAML in time linear in its size. The `yaml` library's own duplicate-key check
// (`uniqueKeys`) compares each new key with every key before it in the map: a contributor's file
// holding 40,000 keys in one map took 14 s to read. Here the check keeps a Set per map instead,
// and reports what the library would: "Map keys must be unique" at the repeated key.
import {
  isMap,
  isScalar,
  isSeq,
  parseDocument,
  YAMLParseError,
  type DocumentOptions,
  type LineCounter,
  type ParseOptions,
  type SchemaOptions,
} from "yaml";

type Options = Omit<ParseOptions & DocumentOptions & SchemaOptions, "uniqueKeys">;

/**
 * `parseDocument` with duplicate keys found in linear time. Each repeated key is an error in
 * `doc.errors` (with `linePos` when a `lineCounter` is given), as the library's check makes it.
 */
export function parseYaml(text: string, options: Options = {}) {
  // No warning printed by the library itself (a key that is a map, stringified): what it is about is
  // reported as a manifest error, located and escaped, and the bundle's build of the library would
  // word it otherwise (console.warn) than the one the sources run (process.emitWarning).
  const doc = parseDocument(text, { logLevel: "error", ...options, uniqueKeys: false });
  const lines: LineCounter | undefined = options.lineCounter;
  for (const [start, end] of repeatedKeys(doc.contents)) {
    const error = new YAMLParseError([start, end], "DUPLICATE_KEY", "Map keys must be unique");
    if (lines) error.linePos = [lines.linePos(start), lines.linePos(end)];
    doc.errors.push(error);
  }
  return doc;
}

/** Where a key sits in the text. */
type Range = [number, number, number];

/**
 * The keys that repeat an earlier key of their map, by value, in document order; an empty key
 * (`? ` alone) repeats an earlier empty key, as in the library. Walked with a stack, not recursion
 * (and no spread of a list as arguments): the parser accepts nesting deeper than the call stack
 * allows. Aliases are not followed (they would only repeat what is walked already).
 */
function repeatedKeys(root: unknown): Range[] {
  const repeated: Range[] = [];
  const stack: unknown[] = [root];
  while (stack.length) {
    const node = stack.pop();
    if (isSeq(node)) {
      for (const item of node.items) stack.push(item);
    } else if (isMap(node)) {
      const seen = new Set<unknown>();
      for (const { key, value } of node.items) {
        if (isScalar(key) || key === null) {
          const id = isScalar(key) ? key.value : EMPTY_KEY;
          const range = (isScalar(key) ? key.range : undefined) ?? node.range;
          if (seen.has(id) && range) repeated.push(range);
          seen.add(id);
        } else stack.push(key);
        stack.push(value);
      }
    }
  }
  return repeated.sort((a, b) => a[0] - b[0]);
}

const EMPTY_KEY = Symbol("empty key");
