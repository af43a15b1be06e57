// Builds dist/quartermaster-linux-x64: the CLI as a single executable for nodes without Node
// (Node's single executable applications: this Node binary with the bundle injected by postject).
// Node 20 runs only a CommonJS main script in an executable, so the bundle is CommonJS here, one
// file with every command in it; the npm package keeps its ES modules (scripts/build.ts).
import { copyFile, mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { build } from "esbuild";
import { execa } from "execa";
import { CLI_BUNDLE, ROOT } from "./bundle.js";

if (process.platform !== "linux" || process.arch !== "x64") {
  console.error(
    `build:exe builds a Linux x64 executable from a Linux x64 Node (this is ${process.platform}-${process.arch})`,
  );
  process.exit(2);
}
const work = path.join(ROOT, "dist", "sea");
const executable = path.join(ROOT, "dist", "quartermaster-linux-x64");
await rm(work, { recursive: true, force: true });
await mkdir(work, { recursive: true });
const main = path.join(work, "main.cjs");
await build({ ...CLI_BUNDLE, outfile: main, format: "cjs" });
const config = path.join(work, "sea-config.json");
const blob = path.join(work, "sea-prep.blob");
await writeFile(
  config,
  JSON.stringify({ main, output: blob, disableExperimentalSEAWarning: true }),
);
await execa(process.execPath, ["--experimental-sea-config", config], { stdio: "inherit" });
await copyFile(process.execPath, executable);
// The sentinel is the fuse Node's binary checks to find an injected application (Node's single
// executable applications guide).
await execa(
  "postject",
  [
    executable,
    "NODE_SEA_BLOB",
    blob,
    "--sentinel-fuse",
    "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2",
  ],
  { preferLocal: true, localDir: ROOT, stdio: "inherit" },
);
await rm(work, { recursive: true, force: true });
console.log(path.relative(ROOT, executable));
