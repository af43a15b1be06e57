import fs from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import git from "isomorphic-git";
import { UsageError } from "../errors.js";
import { loadFleet } from "../manifest/load.js";
import type { Waiver } from "../manifest/schema.js";
import type { PlanInput } from "./plan-input.js";

async function readTree(dir: string, root: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const entry of await fs.promises.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.ya?ml$/.test(entry.name)) continue;
    const abs = path.join(entry.parentPath, entry.name);
    files.set(path.relative(root, abs), await readFile(abs, "utf8"));
  }
  return files;
}

/**
 * What the planner needs besides the forge's pull requests, and the commit the manifests were read
 * at.
 */
export async function proposalInput(
  manifestDir: string,
): Promise<{ input: Omit<PlanInput, "pulls" | "report">; revision: string; waivers: Waiver[] }> {
  let repoRoot: string;
  let revision: string;
  try {
    repoRoot = await git.findRoot({ fs, filepath: manifestDir });
    revision = await git.resolveRef({ fs, dir: repoRoot, ref: "HEAD" });
  } catch (error) {
    // No .git above the directory, or no commit in it.
    if (!(error instanceof git.Errors.NotFoundError)) throw error;
    throw new UsageError(
      `${manifestDir} is not inside a git checkout: pull requests are commits on top of the manifests' commit`,
    );
  }
  const manifestsPath = path.relative(repoRoot, manifestDir) || ".";
  const fleet = await loadFleet(manifestDir, { displayPrefix: manifestsPath });
  const files = await readTree(manifestDir, repoRoot);
  return {
    input: {
      nodes: fleet.nodes,
      tickets: fleet.tickets,
      files,
      manifestsPath,
      maxNewPrs: fleet.settings.propose?.max_new_prs,
    },
    revision,
    waivers: fleet.settings.ignore ?? [],
  };
}
