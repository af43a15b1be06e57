import assert from "node:assert/strict";
import { test } from "node:test";
import { plainStrings } from "../../../src/text/yaml-scalar.js";

// Read in one document, the texts keep the verdicts each has read alone ("e10000" is a float in
// YAML 1.1, "y" a boolean), first asked here (verdicts are kept).
const TEXTS = [
  "n00000",
  "web-01.example.com",
  "falsey",
  "NULLED",
  "Infinity",
  "nan123",
  "e10000",
  "true.1",
  "y",
  "n",
  "off",
  "False",
  "NULL",
  "1.5",
  "0x1F",
  "2026-12-03",
  "12:30",
  "a b",
  "a: b",
  "a #b",
  "- a",
  "*ref",
  "~",
  "<<",
  "plain text, with comma",
  'quote"inside',
  "tab\tinside",
];

test("plainStrings, asked for many texts at once, gives each the verdict it has alone", () => {
  const plain = plainStrings(TEXTS);
  assert.deepEqual(
    TEXTS.filter((text) => plain.has(text)),
    [
      "n00000",
      "web-01.example.com",
      "falsey",
      "NULLED",
      "Infinity",
      "nan123",
      "true.1",
      "a b",
      "plain text, with comma",
      'quote"inside',
    ],
  );
});
