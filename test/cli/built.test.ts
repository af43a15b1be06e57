// The CLI as users run it: src/ bundled into dist/ by scripts/build.ts. The rest of the suite runs
// the sources; this shows the bundle holds together. Every command loads, and a real audit of this
// machine, its manifests pulled from the real git server, becomes a pull request on the GitHub
// double: isomorphic-git and Octokit at work inside the bundle.
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { COMMAND_HELP } from "../../src/cli/help.js";
import { BUILT_ENTRY, ensureBuilt, REPO_ROOT, runBuiltCli } from "../support/cli.js";
import type { GitServer } from "../support/git-server.js";
import type { GitHubDouble } from "../support/github-double/index.js";
import { startForge } from "../support/forge.js";

const TOKEN = "ghs_built_cli";
const OWNER = "acme";
const REPO = "fleet";

let server: GitServer;
let double: GitHubDouble;
let work: string;
let swappiness: number;

before(async () => {
  await ensureBuilt();
  swappiness = Number((await readFile("/proc/sys/vm/swappiness", "utf8")).trim());
  work = await mkdtemp(path.join(tmpdir(), "qm-built-"));
  ({ server, double } = await startForge({
    token: TOKEN,
    owner: OWNER,
    repo: REPO,
    files: {
      "fleet-manifests/fleet.yaml": "policy:\n  sysctl: { on_drift: accept }\n",
      "fleet-manifests/nodes/localhost.yaml": `system:\n  sysctl_parameters:\n    vm.swappiness: ${swappiness + 1}\n`,
    },
  }));
});

after(async () => {
  await double?.stop();
  await server?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

/** What the bundle's `entry` loads before it runs: its text and its static imports', transitively. */
async function loadedBefore(entry: string, seen = new Map<string, string>()): Promise<string[]> {
  if (seen.has(entry)) return [...seen.values()];
  const text = await readFile(entry, "utf8");
  seen.set(entry, text);
  // esbuild writes one static import per statement: `import "./x.js";`, `} from "./x.js";`.
  for (const [, file] of text.matchAll(/^(?:import|\}) [^"(]*"(\.\.?\/[^"]+)";$/gm))
    await loadedBefore(path.resolve(path.dirname(entry), file!), seen);
  return [...seen.values()];
}

/** The ES module of the CLI the entry loads where it keeps no code cache (src/cli/main.ts). */
async function cliModule(): Promise<string> {
  const main = await readFile(BUILT_ENTRY, "utf8");
  const chunk = /\bimport\("(\.\/chunks\/cli-[^"]+)"\)/.exec(main)?.[1];
  assert.ok(chunk, "the entry's import of the CLI's module");
  return path.resolve(path.dirname(BUILT_ENTRY), chunk);
}

/** What the audit command loads before it runs: its chunk and that chunk's static imports. */
async function auditLoads(): Promise<string> {
  const cli = await cliModule();
  const chunk = /\baudit: .*import\("(\.\/audit-[^"]+)"\)/.exec(await readFile(cli, "utf8"))?.[1];
  assert.ok(chunk, "the audit command's chunk");
  return (await loadedBefore(path.resolve(path.dirname(cli), chunk))).join("\n");
}

/** What the chunk holding `source` (a file of src/, by its comment) loads before it runs. */
async function loadsOf(source: RegExp): Promise<string> {
  const dir = path.join(path.dirname(BUILT_ENTRY), "chunks");
  for (const name of await readdir(dir)) {
    const file = path.join(dir, name);
    if (name.endsWith(".js") && source.test(await readFile(file, "utf8")))
      return (await loadedBefore(file)).join("\n");
  }
  assert.fail(`no chunk holds ${source}`);
}

describe("the built CLI", () => {
  it("loads no schema library, YAML parser or domain for --version and its usage", async () => {
    const loaded = [
      ...(await loadedBefore(BUILT_ENTRY)),
      ...(await loadedBefore(await cliModule())),
    ].join("\n");
    assert.match(loaded, /^\/\/ src\/cli\/program\.ts$/m);
    for (const heavy of [/node_modules\/zod\//, /node_modules\/yaml\//, /^\/\/ src\/domains\//m])
      assert.doesNotMatch(loaded, heavy);
  });

  it("is ASCII throughout: V8 holds a source with one other character as two bytes a character", async () => {
    const dir = path.dirname(BUILT_ENTRY);
    const chunks = path.join(dir, "chunks");
    const files = [
      BUILT_ENTRY,
      path.join(dir, "quartermaster.cjs"),
      ...(await readdir(chunks)).filter((f) => f.endsWith(".js")).map((f) => path.join(chunks, f)),
    ];
    for (const file of files)
      assert.doesNotMatch(await readFile(file, "latin1"), /[^\x00-\x7f]/, path.basename(file));
  });

  it("prints the version of package.json", async () => {
    const { version } = JSON.parse(await readFile(path.join(REPO_ROOT, "package.json"), "utf8"));
    const result = await runBuiltCli(["--version"]);
    assert.equal(result.stdout, `quartermaster ${version}`);
  });

  it("loads no history reader for an audit that reads no history", async () => {
    const loaded = await auditLoads();
    assert.match(loaded, /^\/\/ src\/runs\/unaudited\.ts$/m);
    for (const reader of [/^\/\/ src\/propose\//m, /^\/\/ src\/report\/read\.ts$/m])
      assert.doesNotMatch(loaded, reader);
  });

  it("loads no output format, report schema, colour library or node:crypto before an audit's first session", async () => {
    const loaded = await auditLoads();
    assert.match(loaded, /^\/\/ src\/audit\/fleet\.ts$/m);
    for (const later of [
      /^\/\/ src\/cli\/output\.ts$/m,
      /^\/\/ src\/report\/formats\/index\.ts$/m,
      /^\/\/ src\/report\/schema\.ts$/m,
      /^\/\/ node_modules\/supports-color\//m,
      // The probe's nonce is read from the kernel's random source until something loads it.
      /^import .* from "(node:)?crypto";$/m,
    ])
      assert.doesNotMatch(loaded, later);
  });

  it("loads the output format a run writes and no other", async () => {
    const anyFormat = [
      /^\/\/ src\/report\/formats\/(text|json|markdown|junit|prometheus|events|github)\.ts$/m,
      /^\/\/ src\/report\/fleet-page\//m,
      /^\/\/ src\/report\/runs\.ts$/m,
    ];
    const output = await loadsOf(/^\/\/ src\/cli\/output\.ts$/m);
    for (const format of anyFormat) assert.doesNotMatch(output, format);
    const json = await loadsOf(/^\/\/ src\/report\/formats\/json\.ts$/m);
    for (const other of anyFormat.slice(1)) assert.doesNotMatch(json, other);
    assert.doesNotMatch(json, /^\/\/ src\/report\/formats\/text\.ts$/m);
  });

  for (const command of Object.keys(COMMAND_HELP)) {
    it(`loads ${command} and prints its usage`, async () => {
      const result = await runBuiltCli([command, "--help"]);
      assert.equal(result.exitCode, 0, result.stderr);
      assert.match(result.stdout, new RegExp(`^usage: quartermaster ${command}\\b`));
      assert.equal(result.stderr, "");
    });
  }

  it("turns an audit of this machine, pulled from the git server, into a pull request", async () => {
    const repo = ["--repo", server.repoUrl(OWNER, REPO), "--cache-dir", path.join(work, "cache")];
    const report = path.join(work, "report.json");
    const env = double.cliEnv();
    const audit = await runBuiltCli(
      ["audit", "--local", "--nodes", "localhost", ...repo, "--format", "json", "--out", report],
      { env },
    );
    assert.equal(audit.exitCode, 1, audit.stderr);
    const propose = await runBuiltCli(["propose", "--report", report, ...repo], { env });
    assert.equal(propose.exitCode, 0, propose.stderr + propose.stdout);
    const heads = double.pulls().map((p) => p.head);
    assert.equal(heads.length, 1, heads.join(", "));
    assert.match(heads[0]!, /^quartermaster--accept--sysctl--vm-swappiness--/);
    assert.deepEqual(double.violations, []);
  });
});
