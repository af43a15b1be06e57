// The manifest YAML parse finds repeated keys in linear time, and finds exactly the ones the `yaml`
// library's own (quadratic) check finds, at the same places.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { LineCounter, parseDocument } from "yaml";
import { parseYaml } from "../../../src/manifest/yaml.js";

const RUNS = { seed: 20261201, numRuns: 300 } as const;

/** Each duplicate-key error as code, line and column. */
function duplicates(doc: ReturnType<typeof parseDocument>) {
  return doc.errors
    .filter((e) => e.code === "DUPLICATE_KEY")
    .map((e) => `${e.linePos?.[0]?.line}:${e.linePos?.[0]?.col}`);
}

function both(text: string) {
  const [ours, theirs] = [new LineCounter(), new LineCounter()];
  return {
    ours: duplicates(parseYaml(text, { lineCounter: ours, prettyErrors: true })),
    library: duplicates(
      parseDocument(text, { lineCounter: theirs, prettyErrors: true, uniqueKeys: true }),
    ),
  };
}

// Keys drawn from a small set, so that maps repeat them; values nest maps and lists.
const key = fc.constantFrom("a", "b", "'a'", '"a"', "1", "'1'", "~", "null", "", "<<", "? x");
const yamlText = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom("1", "x", "[]", "{}", "*anchor"),
    tie("block"),
    tie("flow"),
  ),
  block: fc
    .array(fc.tuple(key, tie("value")), { minLength: 1, maxLength: 5 })
    .map((pairs) => ({ pairs })),
  flow: fc
    .array(fc.tuple(key, fc.constantFrom("1", "x", "[]")), { maxLength: 4 })
    .map((pairs) => `{ ${pairs.map(([k, v]) => `${k || '""'}: ${v}`).join(", ")} }`),
}));

/** A block map rendered at an indent; nested block maps go one level deeper. */
function render(value: unknown, indent: string): string {
  if (typeof value === "string") return ` ${value}\n`;
  const { pairs } = value as { pairs: [string, unknown][] };
  return `\n${pairs.map(([k, v]) => `${indent}${k || '""'}:${render(v, `${indent}  `)}`).join("")}`;
}

describe("parseYaml", () => {
  it("reports a repeated key where it repeats, as the library does", () => {
    const text =
      'packages:\n  installed_manifest:\n    a: "*"\n    b: "*"\n    a: "1"\nx: 1\nx: 2\n';
    const { ours, library } = both(text);
    assert.deepEqual(ours, ["5:5", "7:1"]);
    assert.deepEqual(library, ours);
    assert.equal(parseYaml(text).errors[0]!.message.split("\n")[0], "Map keys must be unique");
  });

  it("finds the same repeated keys as the library on generated documents", () => {
    fc.assert(
      fc.property(yamlText.block, (doc) => {
        const text = `anchor: &anchor 1${render(doc, "").replace(/^\n/, "\n")}`;
        const { ours, library } = both(text);
        assert.deepEqual(ours, library, text);
      }),
      RUNS,
    );
  });

  it("reports the one repeat among 50,000 keys of a map", () => {
    const keys = 50_000;
    const text = Array.from({ length: keys }, (_, i) => `k${i % (keys - 1)}: 1\n`).join("");
    assert.deepEqual(
      duplicates(parseYaml(text, { lineCounter: new LineCounter(), prettyErrors: true })),
      [`${keys}:1`],
    );
  });

  it("prints no warning of the library's own, which the bundle's and the sources' yaml word apart", () => {
    const warnings: unknown[] = [];
    const [warn, emit] = [console.warn, process.emitWarning];
    console.warn = (...args: unknown[]) => void warnings.push(args);
    process.emitWarning = (warning: string | Error) => void warnings.push(warning);
    try {
      // A map as a key: toJS stringifies it, and warns by default.
      const doc = parseYaml("system:\n  ? {a: 1}\n  : x\n");
      assert.deepEqual(doc.toJS(), { system: { "{ a: 1 }": "x" } });
    } finally {
      [console.warn, process.emitWarning] = [warn, emit];
    }
    assert.deepEqual(warnings, []);
  });
});
