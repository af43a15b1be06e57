import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import vm from "node:vm";

/**
 * Where the CLI keeps V8's compiled code between runs, or undefined for none: the user's cache
 * folder, also in a workflow (a self-hosted runner keeps it from job to job, where it empties
 * RUNNER_TEMP at every job's start). Never on a `--local` run (it runs on a node, where a cache
 * would be files written on every host) unless the environment asks for one with
 * NODE_COMPILE_CACHE, which Node then honours itself.
 */
export function compileCacheDir(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  home: string,
): string | undefined {
  if (argv.includes("--local") || env.NODE_COMPILE_CACHE || env.NODE_DISABLE_COMPILE_CACHE)
    return undefined;
  return path.join(
    env.XDG_CACHE_HOME || path.join(home, ".cache"),
    "quartermaster",
    "compile-cache",
  );
}

/** The cache file of one command of one build on one Node: none of them shares another's. */
const codeCacheFile = (dir: string, command: string, buildId: string) =>
  path.join(dir, `${command}-${process.version}-${process.arch}-${buildId}.bin`);

/**
 * The code cache in `file`, when this user owns it and no one else may write it (a cache is code
 * V8 runs); else undefined.
 */
function ownCache(file: string): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    const { uid, mode } = fstatSync(fd);
    if (uid !== process.getuid?.() || mode & 0o022) return undefined;
    return readFileSync(fd);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Writes the script's code cache as it is at exit: every function this run compiled, not only
 * those compiled with the module (what Node's own compile cache keeps), so the next run of the
 * same command compiles next to nothing. Written whole under a temporary name then renamed; the
 * same command's caches of other builds on this Node are removed. A cache that cannot be written
 * is no error: the next run compiles as this one did.
 */
function saveCache(script: vm.Script, file: string): void {
  try {
    const dir = path.dirname(file);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, script.createCachedData(), { mode: 0o600 });
    renameSync(temporary, file);
    const base = path.basename(file);
    const sameCommandAndNode = base.slice(0, base.lastIndexOf("-") + 1);
    for (const other of readdirSync(dir))
      if (other !== base && other.startsWith(sameCommandAndNode) && other.endsWith(".bin"))
        rmSync(path.join(dir, other), { force: true });
  } catch {
    // An unwritable or full cache folder leaves the next run uncached, no worse.
  }
}

/**
 * Runs the CLI's CommonJS bundle `bundle` (built with `buildId`) for `command` (a name of letters
 * and dashes), its compiled code from and, when that was missing or refused (another V8, other
 * flags), to the cache in `dir`.
 */
export function runWithCodeCache(
  bundle: string,
  buildId: string,
  dir: string,
  command: string,
): void {
  const source = readFileSync(bundle, "utf8");
  const file = codeCacheFile(dir, command, buildId);
  const cachedData = ownCache(file);
  // CommonJS's own wrapper, on the first line so that line numbers stay the bundle's.
  const script = new vm.Script(
    `(function (exports, require, module, __filename, __dirname) {${source}\n})`,
    { filename: bundle, ...(cachedData && { cachedData }) },
  );
  if (!cachedData || script.cachedDataRejected) process.once("exit", () => saveCache(script, file));
  const run = script.runInThisContext() as (...args: unknown[]) => void;
  const module = { exports: {} };
  run(module.exports, createRequire(bundle), module, bundle, path.dirname(bundle));
}
