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

// zod re-exports its ~50 message locales (about 400 KB, half of the zod the CLI would parse at
// start-up) as `z.locales`, which nothing here uses: only English, its default, is bundled.
const englishZodOnly: Plugin = {
  name: "zod-english-only",
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]/.test(args.importer)
        ? {
            path: path.join(path.dirname(args.importer), "..", "locales", "en.js"),
            namespace: "zod-en",
          }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "zod-en" }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path)};`,
      resolveDir: path.dirname(args.path),
    }));
  },
};

export const CLI_BUNDLE: BuildOptions = {
  entryPoints: [path.join(ROOT, "src", "cli", "main.ts")],
  bundle: true,
  platform: "node",
  target: "node20.12",
  plugins: [versionOnly, englishZodOnly],
  logLevel: "warning",
};
