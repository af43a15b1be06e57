import assert from "node:assert/strict";
import { test } from "node:test";
import { reviewCommandOf } from "../../../src/cli/commands/review.js";

test("a review command is the first line of the comment, and nothing else is one", () => {
  assert.equal(reviewCommandOf("/quartermaster reject"), "reject");
  assert.equal(reviewCommandOf("  /quartermaster   reject  \r\nWe keep forwarding off."), "reject");
  assert.equal(reviewCommandOf("/quartermaster"), "");
  assert.equal(reviewCommandOf("/quartermaster help me"), "help");
  assert.equal(reviewCommandOf("/quartermasterx reject"), undefined);
  assert.equal(reviewCommandOf("> /quartermaster reject"), undefined);
  assert.equal(reviewCommandOf("Looks good.\n/quartermaster reject"), undefined);
  assert.equal(reviewCommandOf(null), undefined);
  // Indented four spaces or a tab, it is a code block: shown, not said.
  assert.equal(reviewCommandOf("    /quartermaster reject"), undefined);
  assert.equal(reviewCommandOf("\t/quartermaster reject"), undefined);
  assert.equal(reviewCommandOf("\n\n   /quartermaster reject"), "reject");
});
