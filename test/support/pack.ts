// The npm package as a release ships it: `npm pack` of the built bundle. Packs with
// --ignore-scripts after `ensureBuilt`, so the prepack build never replaces dist/ while another
// test process reads it.
import { execa } from "execa";
import { ensureBuilt, REPO_ROOT } from "./cli.js";

/** Packs the package into `dir`; returns the tarball's path. */
export async function packRelease(dir: string): Promise<string> {
  await ensureBuilt();
  const { stdout } = await execa(
    "npm",
    ["pack", "--ignore-scripts", "--json", "--pack-destination", dir],
    { cwd: REPO_ROOT },
  );
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  return `${dir}/${packed!.filename}`;
}

/**
 * Installs a tarball globally under `prefix` from the tarball alone: an empty npm cache, --offline,
 * and a registry nothing listens on, so any fetch would fail. Returns npm's result.
 */
export async function installOffline(tarball: string, prefix: string, cache: string) {
  return execa(
    "npm",
    ["install", "--global", "--offline", "--prefix", prefix, "--cache", cache, tarball],
    {
      reject: false,
      env: { npm_config_registry: "http://127.0.0.1:9/", npm_config_update_notifier: "false" },
    },
  );
}
