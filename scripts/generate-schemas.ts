// Writes schemas/*.json from the zod schemas. test/unit/schemas.test.ts fails when they are stale.
import { writeFile, mkdir } from "node:fs/promises";
import path from "node:path";
import { jsonSchemas } from "../src/schemas.js";

const dir = path.resolve(import.meta.dirname, "..", "schemas");
await mkdir(dir, { recursive: true });
for (const [name, schema] of Object.entries(jsonSchemas())) {
  await writeFile(path.join(dir, name), `${JSON.stringify(schema, null, 2)}\n`);
  console.log(`wrote schemas/${name}`);
}
