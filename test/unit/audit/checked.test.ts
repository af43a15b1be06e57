import assert from "node:assert/strict";
import { it } from "node:test";
import { declaredItems } from "../../../src/audit/node.js";
import { exitCode } from "../../../src/cli/exit.js";

it("counts a declaration's items: list entries, map keys, lists inside a map by entry, a value as one", () => {
  assert.equal(declaredItems([{ path: "/a" }, { path: "/b" }]), 2);
  assert.equal(
    declaredItems({ "vm.swappiness": "10", "net.core.somaxconn": "4096", __proto__: null }),
    2,
  );
  assert.equal(declaredItems({ loaded: ["br_netfilter", "overlay"], absent: ["floppy"] }), 3);
  assert.equal(declaredItems("6.1.0-28-amd64"), 1);
});

it("unknown items set exit bit 4 only with --strict", () => {
  assert.equal(exitCode({ unknownItems: true }), 0);
  assert.equal(exitCode({ unknownItems: true, strict: true }), 4);
  assert.equal(exitCode({ unknownItems: true, strict: true, driftFound: true }), 5);
  assert.equal(exitCode({ strict: true }), 0);
});
