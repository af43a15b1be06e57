#!/usr/bin/env node
import os from "node:os";
import { fileURLToPath } from "node:url";
import { compileCacheDir, runWithCodeCache } from "./compile-cache.js";
import { boundHeapGrowth } from "./heap.js";

// The npm package's entry. The build (scripts/bundle.ts) defines QM_CLI_BUILD as the id of the
// CLI's CommonJS bundle beside this file; run from the sources, it is not defined.
declare const QM_CLI_BUILD: string | undefined;

const argv = process.argv.slice(2);
const [command] = argv;
boundHeapGrowth(command);
// A command, with a cache folder: the whole CLI from one CommonJS bundle whose compiled code V8
// keeps there as it was at the end of the last run of the same command. Otherwise (a node's
// `--local` run; the version or usage, which load next to nothing) the ES modules, only those
// the command needs.
const cacheDir =
  command && /^[a-z][a-z-]{0,15}$/.test(command) && command !== "help"
    ? compileCacheDir(argv, process.env, os.homedir())
    : undefined;
if (cacheDir && typeof QM_CLI_BUILD === "string")
  runWithCodeCache(
    fileURLToPath(new URL("quartermaster.cjs", import.meta.url)),
    QM_CLI_BUILD,
    cacheDir,
    command!,
  );
else void import("./cli.js");
