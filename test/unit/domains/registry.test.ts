import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { test } from "node:test";
import { DOMAIN_NAMES } from "../../../src/domains/domain.js";
import { DOMAINS } from "../../../src/domains/registry.js";

const domainsDir = new URL("../../../src/domains/", import.meta.url);
const folders = readdirSync(domainsDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();

test("every domain folder under src/domains is registered", () => {
  assert.deepEqual(DOMAINS.map((d) => d.name).sort(), folders);
});

test("the registry holds each name in DOMAIN_NAMES once, in its order", () => {
  assert.deepEqual(
    DOMAINS.map((d) => d.name),
    [...DOMAIN_NAMES],
  );
});

test("each folder's index.ts exports the registered domain of its own name", async () => {
  for (const folder of folders) {
    const module: Record<string, unknown> = await import(
      new URL(`${folder}/index.ts`, domainsDir).href
    );
    const registered = DOMAINS.find((d) => d.name === folder);
    assert.ok(
      Object.values(module).includes(registered),
      `src/domains/${folder}/index.ts does not export the domain named ${folder}`,
    );
  }
});
