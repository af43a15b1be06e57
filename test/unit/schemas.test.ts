import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { it } from "node:test";
import { jsonSchemas } from "../../src/schemas.js";
import { REPO_ROOT } from "../support/cli.js";

it("the committed JSON Schemas match the zod schemas (run `npm run schemas` when this fails)", async () => {
  for (const [name, schema] of Object.entries(jsonSchemas())) {
    const committed = JSON.parse(await readFile(path.join(REPO_ROOT, "schemas", name), "utf8"));
    assert.deepEqual(committed, JSON.parse(JSON.stringify(schema)), `schemas/${name} is stale`);
  }
});
