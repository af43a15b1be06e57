import assert from "node:assert/strict";
import { test } from "node:test";
import { visible } from "../../../src/text/escape.js";

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
  assert.equal(visible("::error::forged"), "\\x3a:error::forged");
  assert.equal(visible("ok\n  ::add-mask::x", { multiline: true }), "ok\n  \\x3a:add-mask::x");
  assert.equal(visible("a::b"), "a::b");
  for (const line of visible("x\n::set-output a\n::\n", { multiline: true }).split("\n")) {
    assert.ok(!line.trimStart().startsWith("::"), line);
  }
});

test("plain text is unchanged", () => {
  assert.equal(visible("net.ipv4.ip_forward = 1 / é ü 日本"), "net.ipv4.ip_forward = 1 / é ü 日本");
});
