// What the npm package's bundle (scripts/build.ts) and the single executable
// (scripts/build-exe.ts) share: the CLI entry with every dependency bundled in, for Node 20.12.
import { createHash } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { rm } from "node:fs/promises";
import { build, type BuildOptions, type Plugin } from "esbuild";

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

// yaml's "node" export is its CommonJS build: one closure per module, all run at start-up and none
// dropped. Its ES module build (the "default" export, the same code but for a debug log and
// warnings through console.warn instead of process.emitWarning) lets the bundle keep what is used.
const yamlAsModule: Plugin = {
  name: "yaml-es-module",
  setup(build) {
    build.onResolve({ filter: /^yaml$/ }, () => ({
      path: path.join(
        path.dirname(fileURLToPath(import.meta.resolve("yaml/package.json"))),
        "browser",
        "index.js",
      ),
    }));
  },
};

export const CLI_BUNDLE: BuildOptions = {
  entryPoints: [path.join(ROOT, "src", "cli", "cli.ts")],
  bundle: true,
  platform: "node",
  target: "node20.12",
  plugins: [versionOnly, yamlAsModule],
  logLevel: "warning",
};

/**
 * Builds the npm package's CLI into `outdir`: the whole CLI as one CommonJS bundle
 * (`quartermaster.cjs`), and as ES modules (a chunk per lazily loaded command) under the entry
 * `main.js`, which runs the first where it may keep V8's code cache and the second where it may
 * not (src/cli/main.ts). dist/cli for `npm run build`, a folder of their own for the benchmarks,
 * which so never rewrite a dist/ that another run is using.
 */
export async function buildCli(outdir: string): Promise<void> {
  await rm(outdir, { recursive: true, force: true });
  const bundle = path.join(outdir, "quartermaster.cjs");
  // Stack traces map back to src/ under `node --enable-source-maps`.
  await build({ ...CLI_BUNDLE, outfile: bundle, format: "cjs", sourcemap: "linked" });
  await asciiOnly(bundle);
  // A code cache is kept per build: one made from another bundle is never run.
  const buildId = createHash("sha256")
    .update(await readFile(bundle))
    .digest("hex")
    .slice(0, 16);
  await build({
    ...CLI_BUNDLE,
    entryPoints: [path.join(ROOT, "src", "cli", "main.ts")],
    outdir,
    chunkNames: "chunks/[name]-[hash]",
    splitting: true,
    format: "esm",
    define: { QM_CLI_BUILD: JSON.stringify(buildId) },
    // Dependencies written as CommonJS call require(): an ES module has none of its own.
    banner: {
      js: 'import { createRequire as qmCreateRequire } from "node:module"; const require = qmCreateRequire(import.meta.url);',
    },
    sourcemap: "linked",
  });
  const chunks = path.join(outdir, "chunks");
  for (const file of [
    path.join(outdir, "main.js"),
    ...(await readdir(chunks)).map((name) => path.join(chunks, name)),
  ])
    if (file.endsWith(".js")) await asciiOnly(file);
}

/**
 * Rewrites `file`'s characters beyond ASCII as `\u` escapes. One such character makes V8 hold the
 * whole source as two bytes a character: for the 2.6 MB bundle, reading it took 6–12 ms of CPU at
 * every start instead of about 3. esbuild's ASCII charset already escapes strings, templates and
 * names; what is left is comments and regular expression literals (a dependency's `[\ud800-\uffff]`
 * written with the character itself), where an escape is the same character. A character beyond
 * the BMP is written as its two UTF-16 halves, which a regular expression with or without the `u`
 * flag reads as that character.
 */
async function asciiOnly(file: string): Promise<void> {
  const text = await readFile(file, "utf8");
  const ascii = text.replace(
    /[^\x00-\x7f]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  if (ascii !== text) await writeFile(file, ascii);
}

/**
 * The CLI bundled into `folder`/dist/cli, a folder of the caller's own: a benchmark runs that and
 * leaves the shared dist/ to whatever else runs it. Its entry. Beside it a package.json says its
 * files are ES modules, as the installed package's does: without one, Node parses each file to find
 * out (about 3 ms of an audit's start here).
 */
export async function bundleCliInto(folder: string): Promise<string> {
  const outdir = path.join(folder, "dist", "cli");
  await buildCli(outdir);
  await writeFile(path.join(folder, "package.json"), '{ "type": "module" }\n');
  return path.join(outdir, "main.js");
}
