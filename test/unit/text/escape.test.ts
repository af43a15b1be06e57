import assert from "node:assert/strict";
import { test } from "node:test";
import { defuseRunnerCommands, lineStart, visible } from "../../../src/text/escape.js";

test("controls, DEL, C1, bidi and zero-width characters are shown as escapes", () => {
  assert.equal(visible("a\x1b]0;owned\x07b"), "a\\x1b]0;owned\\x07b");
  assert.equal(visible("x\x7f\x9by"), "x\\x7f\\x9by");
  assert.equal(visible("file\u202Etxt.exe"), "file\\u{202e}txt.exe");
  assert.equal(visible("a\u200Bb\uFEFFc\u2028d"), "a\\u{200b}b\\u{feff}c\\u{2028}d");
  assert.equal(visible("nul\0"), "nul\\x00");
});

test("one line by default: newlines, CR and tabs are escaped", () => {
  assert.equal(visible("a\nb\r\tc"), "a\\nb\\r\\tc");
});

test("multiline keeps newlines and tabs but not CR", () => {
  assert.equal(visible("a\n\tb\r\n", { multiline: true }), "a\n\tb\\r\n");
});

test("no line starts a GitHub workflow command", () => {
  assert.equal(visible("::error::forged"), ":\\u003aerror::forged");
  assert.equal(visible("ok\n  ::add-mask::x", { multiline: true }), "ok\n  :\\u003aadd-mask::x");
  assert.equal(visible("a::b"), "a::b");
  for (const line of visible("x\n::set-output a\n::\n", { multiline: true }).split("\n")) {
    assert.ok(!line.trimStart().startsWith("::"), line);
  }
});

test("plain text is unchanged", () => {
  assert.equal(visible("net.ipv4.ip_forward = 1 / é ü 日本"), "net.ipv4.ip_forward = 1 / é ü 日本");
});

test("the runner's other forms: `::` after Unicode blanks, and `##[` anywhere in a line", () => {
  for (const blank of ["\u00a0", "\u2000", "\u200a", "\u3000", " ", "\u2003 "])
    assert.equal(visible(`${blank}::warning::x`), `${blank}:\\u003awarning::x`);
  assert.equal(defuseRunnerCommands("\ufeff::error::x"), "\ufeff:\\u003aerror::x");
  assert.equal(visible("text ##[error]x"), "text ##\\u005berror]x");
  assert.equal(visible("###[x] ##[y"), "###\\u005bx] ##\\u005by");
  assert.equal(visible("# #[x"), "# #[x");
  assert.equal(visible("\t::x", { multiline: true }), "\t:\\u003ax");
});

test("text written in pieces is guarded across the pieces, CR starting a line as LF does", () => {
  const state = lineStart();
  const pieces = ["ok\n  :", ":error::x\r:", ":set-output ##", "[x] #", "#", "[y\n", "a::b\n"];
  assert.equal(
    pieces.map((piece) => defuseRunnerCommands(piece, state)).join(""),
    "ok\n  :\\u003aerror::x\r:\\u003aset-output ##\\u005bx] ##\\u005by\na::b\n",
  );
});
