// What the npm package's bundle (scripts/build.ts) and the single executable
// (scripts/build-exe.ts) share: the CLI entry with every dependency bundled in, for Node 20.12.
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { BuildOptions, Plugin } from "esbuild";

export const ROOT = path.resolve(import.meta.dirname, "..");

// The CLI imports package.json for its version: only that field goes into the bundle, not the
// scripts and dependency lists.
const versionOnly: Plugin = {
  name: "package-version-only",
  setup(build) {
    build.onLoad({ filter: /[\\/]package\.json$/ }, async (args) => {
      const { version } = JSON.parse(await readFile(args.path, "utf8")) as { version: string };
      return { contents: JSON.stringify({ version }), loader: "json" };
    });
  },
};

export const CLI_BUNDLE: BuildOptions = {
  entryPoints: [path.join(ROOT, "src", "cli", "main.ts")],
  bundle: true,
  platform: "node",
  target: "node20.12",
  plugins: [versionOnly],
  logLevel: "warning",
};
