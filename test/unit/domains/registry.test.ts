import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { test } from "node:test";
import { DOMAINS } from "../../../src/domains/registry.js";

test("every domain folder under src/domains is registered", () => {
  const folders = readdirSync(new URL("../../../src/domains/", import.meta.url), {
    withFileTypes: true,
  })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  assert.deepEqual(DOMAINS.map((d) => d.name).sort(), folders);
});
