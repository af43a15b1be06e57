// utf8(): a host's bytes, one per character, as the UTF-8 text Node's decoder makes of them.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { utf8 } from "../../../src/text/utf8.js";

const RUNS = { seed: 20261208, numRuns: 2000 } as const;
const decoded = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
const asSent = (bytes: Uint8Array) => Buffer.from(bytes).toString("latin1");

test("ASCII, UTF-8 and bytes that are not UTF-8 read as Node's decoder reads them", () => {
  for (const text of ["", "root:x:0:0:root:/root:/bin/bash", "Zoë", "日本", "\u{1f600}", "\0\x7f"])
    assert.equal(utf8(asSent(Buffer.from(text))), text);
  for (const bytes of [[0xff], [0xc3], [0xe6, 0x97], [0x80, 0x41], [0xed, 0xa0, 0x80]])
    assert.equal(utf8(asSent(Uint8Array.from(bytes))), decoded(Uint8Array.from(bytes)));
  const mostlyAscii = fc.array(
    fc.oneof(
      { arbitrary: fc.integer({ min: 0, max: 0x7f }), weight: 8 },
      fc.integer({ min: 0x80, max: 0xff }),
    ),
    { maxLength: 64 },
  );
  fc.assert(
    fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), mostlyAscii), (bytes) => {
      const array = Uint8Array.from(bytes);
      assert.equal(utf8(asSent(array)), decoded(array));
    }),
    RUNS,
  );
});
