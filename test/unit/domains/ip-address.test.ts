// The routes and ports domains check addresses part by part (procnet.ts) rather than with
// node:net's expressions: the same answers, for the addresses a manifest or a host could hold.
import assert from "node:assert/strict";
import * as net from "node:net";
import { test } from "node:test";
import fc from "fast-check";
import { isIP, isIPv4, isIPv6 } from "../../../src/domains/procnet.js";

const sameAsNode = (text: string) => {
  assert.equal(isIPv4(text), net.isIPv4(text), `isIPv4(${JSON.stringify(text)})`);
  assert.equal(isIPv6(text), net.isIPv6(text), `isIPv6(${JSON.stringify(text)})`);
  assert.equal(isIP(text), net.isIP(text), `isIP(${JSON.stringify(text)})`);
};

test("written forms, near misses and zones get node:net's answers", () => {
  for (const text of [
    ...["0.0.0.0", "255.255.255.255", "10.0.0.1", "256.0.0.1", "01.2.3.4", "1.2.3", "1.2.3.4."],
    ...["1.2.3.4.5", "1..2.3", " 1.2.3.4", "1.2.3.4\n", "0x1.2.3.4", "١.2.3.4", ""],
    ...["::", "::1", "1::", ":::", "1:::2", "::1::", ":1::2", "1::2:", "fe80::1%eth0", "::1%"],
    ...["fe80::1%eth0%1", "fe80::1%a.b:c-d", "fe80::1%é", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::"],
    ...["1:2:3:4:5:6:7:8::", "::1:2:3:4:5:6:7", "1::2:3:4:5:6:7", "1:2:3:4::5:6:7:8", "12345::"],
    ...["::ffff:1.2.3.4", "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:7:1.2.3.4", "1:2:3:4:5::1.2.3.4"],
    ...["1:2:3:4:5:6::1.2.3.4", "1.2.3.4::", "::1.2.3.4:1", "::256.1.1.1", "::1.2.3", "FFFF::aBc"],
    ...["g::1", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "::1.2.3.4%x", "1::2::3", "[::1]"],
  ])
    sameAsNode(text);
});

test("generated addresses, and strings made of their characters, get node:net's answers", () => {
  const hexGroup = fc.stringMatching(/^[0-9a-fA-F]{1,5}$/);
  const v4 = fc.oneof(fc.ipV4(), fc.ipV4Extended());
  const group = fc.oneof(hexGroup, hexGroup, fc.constant(""), v4, fc.constantFrom("g", ".", ":"));
  const zone = fc.oneof(fc.constant(""), fc.stringMatching(/^%[0-9a-zA-Z.:%é-]{0,6}$/));
  const assembled = fc
    .tuple(fc.array(group, { maxLength: 10 }), zone)
    .map(([groups, suffix]) => `${groups.join(":")}${suffix}`);
  const characters = fc.string({
    unit: fc.constantFrom(..."0123456789abcdefABCDEFgx:.%-"),
    maxLength: 48,
  });
  fc.assert(fc.property(fc.oneof(fc.ipV6(), v4, assembled, characters), sameAsNode), {
    numRuns: 20_000,
  });
});
