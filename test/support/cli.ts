import assert from "node:assert/strict";
import { execa } from "execa";
import { readdirSync, statSync } from "node:fs";
import { Writable } from "node:stream";
import { stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { removeTree, writeTree } from "./tree.js";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/** The CLI as `npm run build` builds it and users run it: src/ bundled into dist/ (scripts/build.ts). */
export const BUILT_ENTRY = path.join(REPO_ROOT, "dist/cli/main.js");
/** The single executable for nodes without Node (`npm run build:exe`). */
export const EXECUTABLE = path.join(REPO_ROOT, "dist/quartermaster-linux-x64");

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

interface CliOptions {
  cwd?: string;
  env?: Record<string, string>;
}

async function run(node: string[], args: string[], options: CliOptions): Promise<CliResult> {
  const result = await execa(process.execPath, [...node, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { NO_COLOR: "1", ...options.env },
    reject: false,
  });
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/**
 * Runs the real CLI as a user would, in a separate process, from `cwd`: for a test of what only a
 * process has (its own environment for the programs it starts, runs at once). The process runs
 * the bundle of src/ (built first if older), which starts on a fifth of the CPU that tsx takes to
 * load the sources.
 */
export async function spawnCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  await ensureBuilt();
  return runBuiltCli(args, options);
}

/** A stream that keeps what is written to it. */
class Capture extends Writable {
  private readonly chunks: Buffer[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.chunks.push(chunk);
    done();
  }
  // As execa answers a process's output: decoded, one final newline stripped.
  text = () =>
    Buffer.concat(this.chunks)
      .toString("utf8")
      .replace(/\r?\n$/, "");
}

// One run at a time: a run changes the process's working directory while it lasts.
let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs the CLI from its sources in this process, as `spawnCli` would in another one: the same
 * environment, working directory, exit code and output, without a Node start-up per run.
 */
export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const result = queue.then(() => runHere(args, options));
  queue = result.catch(() => undefined);
  return result;
}

async function runHere(args: string[], options: CliOptions): Promise<CliResult> {
  const { main } = await import("../../src/cli/program.js");
  const [stdout, stderr] = [new Capture(), new Capture()];
  const env = { ...process.env, NO_COLOR: "1", ...options.env };
  const cwd = process.cwd();
  process.chdir(options.cwd ?? REPO_ROOT);
  try {
    const exitCode = await main(args, { stdout, stderr, env });
    return { exitCode, stdout: stdout.text(), stderr: stderr.text() };
  } finally {
    process.chdir(cwd);
  }
}

/** Runs the built CLI (dist/); call `ensureBuilt` first. */
export const runBuiltCli = (args: string[], options: CliOptions = {}) =>
  run([BUILT_ENTRY], args, options);

/** Newest modification time of a file under `dir`, in milliseconds. */
function newest(dir: string): number {
  return Math.max(
    ...readdirSync(dir, { withFileTypes: true, recursive: true })
      .filter((e) => e.isFile())
      .map((e) => statSync(path.join(e.parentPath, e.name)).mtimeMs),
  );
}

/**
 * Builds dist/ when it is missing or older than src/. CI builds it before the tests, so this builds
 * only for a developer who changed src/ since.
 */
export const ensureBuilt = () => ensureNewerThanSources(BUILT_ENTRY, "build");

/** Builds the single executable when it is missing or older than src/ (`npm run build:exe`). */
export const ensureExecutable = () => ensureNewerThanSources(EXECUTABLE, "build:exe");

const isStale = async (file: string, sources: string) => {
  const built = await stat(file).catch(() => undefined);
  return !built || built.mtimeMs < newest(sources);
};

/**
 * Test files run at once, and a build removes dist/ before writing it: one process builds, under
 * an exclusive lock on src/, and the others wait for it and find the build done.
 */
async function ensureNewerThanSources(file: string, script: string): Promise<void> {
  const sources = path.join(REPO_ROOT, "src");
  if (!(await isStale(file, sources))) return;
  // One process holds the lock through its own descriptor until its input ends.
  const holder = execa("sh", [
    "-c",
    'exec 9<"$1" && flock 9 && echo locked && exec cat',
    "sh",
    sources,
  ]);
  try {
    // A holder that cannot take the lock exits, and execa rejects with its stderr.
    await Promise.race([new Promise((resolve) => holder.stdout.once("data", resolve)), holder]);
    if (await isStale(file, sources))
      await execa("npm", ["run", script, "--silent"], { cwd: REPO_ROOT });
  } finally {
    holder.stdin.end();
    await holder;
  }
}

/**
 * A node's live state as `snapshot` prints it through the real CLI, parsed: the node declared by
 * `nodeFile` (its `ssh:` says how to reach it) in a tree of its own, removed after.
 */
export async function cliSnapshot(
  node: string,
  nodeFile: string,
  sshConfig: string,
  more: string[] = [],
): Promise<Record<string, unknown>> {
  const tree = await writeTree({ [`nodes/${node}.yaml`]: nodeFile });
  try {
    const args = ["snapshot", "--manifests", tree, "--node", node, "--ssh-config", sshConfig];
    const result = await runCli([...args, ...more]);
    assert.equal(result.exitCode, 0, result.stderr);
    return parse(result.stdout) as Record<string, unknown>;
  } finally {
    await removeTree(tree);
  }
}
