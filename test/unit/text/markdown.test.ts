import assert from "node:assert/strict";
import { test } from "node:test";
import { codeCell, codeSpan, fencedBlock, htmlCode, textCell } from "../../../src/text/markdown.js";
import { outsideCode } from "../../support/markdown.js";

const HOSTILE =
  "@octocat <img src=x> [click](https://evil.example) <!-- x --> ``` `` ` \u0000\u001b[31m\n::error::x\n";

test("a code span holds any text on one line: the fence outgrows every backtick run, controls shown escaped", () => {
  const span = codeSpan(HOSTILE);
  assert.doesNotMatch(span, /[\n\u0000\u001b]/);
  assert.equal(outsideCode(`before ${span} after`), "before  after");
  assert.ok(span.includes("<\\x21-- x -->"), "a comment opener is shown escaped");
  assert.equal(codeSpan("`x`"), "`` `x` ``");
  assert.equal(codeSpan("a".repeat(10), 5), "`aaaa…`");
});

test("a table cell escapes pipes; a text cell escapes markup", () => {
  assert.equal(codeCell("a|b"), "`a\\|b`");
  assert.equal(
    textCell("a_b\nc\u001b"),
    "a\\_b<br>c\\\\x1b",
    "the shown \\x1b keeps its backslash",
  );
});

test("a fenced block cannot be closed by a line inside it, and is cut to its limits with a count", () => {
  const block = fencedBlock(`${HOSTILE}\`\`\`\`\`\`\n`, "diff");
  assert.ok(block.startsWith("```````diff\n"));
  assert.equal(outsideCode(`x\n${block}\ny`), "x\ny");
  const long = fencedBlock(Array.from({ length: 10 }, (_, i) => `line ${i}`).join("\n"), "", {
    maxLines: 3,
  });
  assert.deepEqual(long.split("\n").slice(1, -1), [
    "line 0",
    "line 1",
    "line 2",
    "… 7 more lines in the full report",
  ]);
  const wide = fencedBlock("x".repeat(1000), "", { maxChars: 100 });
  assert.ok(wide.length < 120 && wide.includes("x…"));
});

test("HTML code escapes markup inside a summary element", () => {
  assert.equal(htmlCode("<b>@x</b>"), "<code>&lt;b&gt;@x&lt;/b&gt;</code>");
});
