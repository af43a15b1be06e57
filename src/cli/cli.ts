import { main } from "./program.js";
import { watchReader } from "./stdout.js";

// The CLI run on load: the npm package's entry (main.ts) loads it, as does the single executable
// (scripts/build-exe.ts); importing program.ts runs nothing, so tests call main() in their own
// process. No top-level await: both bundles of it are CommonJS.
watchReader();
void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
