#!/usr/bin/env node
import { useCompileCache } from "./compile-cache.js";
import { main } from "./program.js";
import { watchReader } from "./stdout.js";

// The entry only: importing program.ts runs nothing, so tests call main() in their own process.
watchReader();
useCompileCache(process.argv.slice(2));
// No top-level await: the single executable runs this bundled as CommonJS (scripts/build-exe.ts).
void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
