// All of test/unit/ in one test process (scripts/test.sh, npm test): the unit files load much the
// same modules of src/ and its dependencies, and a process of each's own would load them again
// after starting tsx again. So a unit test leaves no process state behind (environment, working
// directory, timers, listeners) for the next file.
import { readdirSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import path from "node:path";
import { test } from "node:test";

const UNIT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../unit");

const files = readdirSync(UNIT, { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".test.ts"))
  .sort();
for (const file of files) {
  try {
    await import(pathToFileURL(path.join(UNIT, file)).href);
  } catch (error) {
    // A file that fails to load is a failed test named by the file; the other files still run.
    test(`test/unit/${file} loads`, () => {
      throw error;
    });
  }
}
