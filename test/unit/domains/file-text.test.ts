// The diff a finding carries always turns the declared text into the live one, and stays a line
// diff of the changes until it would cost more than the bound, where it replaces the whole file.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { applyPatch } from "diff";
import fc from "fast-check";
import { MAX_DIFF_EDITS, unifiedDiff } from "../../../src/domains/file-text.js";

const RUNS = { seed: 20261201, numRuns: 200 } as const;
const numbered = (count: number, prefix: string) =>
  Array.from({ length: count }, (_, i) => `${prefix}${i}\n`).join("");

describe("unifiedDiff", () => {
  it("shows a changed line with its context", () => {
    assert.equal(
      unifiedDiff("a\nb\nc\n", "a\nB\nc\n"),
      "--- want\n+++ got\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
    );
  });

  it("turns want into got, for any two texts (small alphabets, so lines repeat)", () => {
    const text = fc
      .array(fc.constantFrom("a", "b", "", "a b", "\t"), { maxLength: 30 })
      .chain((lines) => fc.boolean().map((end) => lines.join("\n") + (end ? "\n" : "")));
    fc.assert(
      fc.property(text, text, (want, got) => {
        assert.equal(applyPatch(want, unifiedDiff(want, got)), got);
      }),
      RUNS,
    );
  });

  it("replaces the whole file in one hunk past the edit bound, and still turns want into got", () => {
    const lines = MAX_DIFF_EDITS * 16;
    const [want, got] = [numbered(lines, "declared "), `${numbered(lines, "live ")}no newline`];
    const diff = unifiedDiff(want, got);
    assert.equal(diff.split("\n")[2], `@@ -1,${lines} +1,${lines + 1} @@`);
    assert.equal(diff.match(/^@@/gm)?.length, 1);
    assert.equal(applyPatch(want, diff), got);
  });

  it("stays a line diff within the bound", () => {
    const want = numbered(MAX_DIFF_EDITS * 4, "line ");
    const got = want.replace("line 7\n", "changed 7\n");
    assert.equal(
      unifiedDiff(want, got),
      "--- want\n+++ got\n@@ -4,9 +4,9 @@\n line 3\n line 4\n line 5\n line 6\n-line 7\n+changed 7\n line 8\n line 9\n line 10\n line 11\n",
    );
  });
});
