import { execa } from "execa";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const ENTRY = path.join(REPO_ROOT, "src/cli/main.ts");
// Resolved here, so the CLI can run from any working directory (tests run it inside temp trees).
export const TSX = import.meta.resolve("tsx");

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs the real CLI as a user would (a separate process), from `cwd`. */
export async function runCli(
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; input?: string } = {},
): Promise<CliResult> {
  const result = await execa(process.execPath, ["--import", TSX, ENTRY, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { NO_COLOR: "1", ...options.env },
    input: options.input,
    reject: false,
  });
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
}
