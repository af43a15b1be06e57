import assert from "node:assert/strict";
import { it } from "node:test";
import { assertNoSelfChange, selfChanges } from "../../support/pull-text.js";

it("the self-change check finds a value changed to itself in a title, a sentence and a table row", () => {
  assert.deepEqual(
    selfChanges("Remediate kernel drift on a: kernel_version: 6.1.0-28-amd64 → 6.1.0-28-amd64"),
    ["6.1.0-28-amd64 → 6.1.0-28-amd64"],
  );
  assert.deepEqual(selfChanges("postgresql-16 `16.4-1` → `16.6-1`, x 1 → 2"), []);
  assert.equal(
    selfChanges(
      "declared `active with the libraries it started with` but the host runs `active with the libraries it started with`.",
    ).length,
    1,
  );
  const head = ["node", "key", "declared", "live", "declared at"];
  assert.equal(selfChanges("| `a` | `k` | `1` | `1` | `nodes/a.yaml:3` |", head).length, 1);
  assert.deepEqual(
    selfChanges("| `a` | `k` | `1` | `1` (`reboot pending`) | `nodes/a.yaml:3` |", head),
    [],
  );
  assert.throws(
    () =>
      assertNoSelfChange([
        {
          number: 3,
          title: "t",
          body: "| node | key | declared | live | declared at |\n|---|---|---|---|---|\n| `a` | `k` | `1` | `1` | `x:1` |",
        },
      ]),
    /PR 3 \(t\) body: declared and live both `1`/,
  );
});
