import module from "node:module";
import os from "node:os";
import path from "node:path";

/**
 * Where the CLI keeps V8's compiled code between runs, or undefined for none: the workflow
 * runner's own temp folder (RUNNER_TEMP), else the user's cache folder. Never on a `--local` run
 * (it runs on a node, where a cache would be files written on every host) unless the environment
 * asks for one with NODE_COMPILE_CACHE, which Node then honours itself.
 */
export function compileCacheDir(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  home: string,
): string | undefined {
  if (argv.includes("--local") || env.NODE_COMPILE_CACHE || env.NODE_DISABLE_COMPILE_CACHE)
    return undefined;
  if (env.RUNNER_TEMP) return path.join(env.RUNNER_TEMP, "quartermaster-compile-cache");
  return path.join(
    env.XDG_CACHE_HOME || path.join(home, ".cache"),
    "quartermaster",
    "compile-cache",
  );
}

/**
 * Node 22.1 and later cache compiled modules (`module.enableCompileCache`): the commands load after
 * this, so their code (most of a start's compile time) comes from the cache on the next run.
 */
export function useCompileCache(argv: readonly string[]): void {
  const enable = (module as { enableCompileCache?: (dir: string) => unknown }).enableCompileCache;
  const dir = enable && compileCacheDir(argv, process.env, os.homedir());
  // A folder it cannot write leaves the run uncached, as Node's own NODE_COMPILE_CACHE does.
  if (dir) enable(dir);
}
