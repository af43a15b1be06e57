// A scheduled run as the drift-audit workflow makes it, for the end-to-end tests of propose: an
// audit of the test hosts through the real CLI that reads the history from the bot's state branch,
// written as JSON, then `propose` on it against the suite forge.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Report } from "../../src/report/schema.js";
import { runCli, type CliResult } from "./cli.js";
import type { SuiteForge } from "./forge.js";

export interface ScheduledRun {
  /** Audits into `<name>.json` in the forge's scratch folder; the exit code must be `exitCode`. */
  audit(name: string, exitCode: number): Promise<{ file: string; report: Report }>;
  /** `propose` with `args` (a report source, other flags) on the forge's repository; must exit 0. */
  propose(args: string[]): Promise<CliResult>;
}

/** The runs of `forge`'s repository auditing the hosts `sshConfig()` names. */
export function scheduledRun(forge: SuiteForge, sshConfig: () => string): ScheduledRun {
  const env = () => forge.double.cliEnv();
  return {
    async audit(name, exitCode) {
      const file = path.join(forge.work, `${name}.json`);
      const result = await runCli(
        [
          "audit",
          ...forge.repoArgs(),
          "--ssh-config",
          sshConfig(),
          "--state-from-repo",
          "--format",
          "json",
          "--out",
          file,
        ],
        { env: env() },
      );
      assert.equal(result.exitCode, exitCode, result.stderr);
      return { file, report: Report.parse(JSON.parse(await readFile(file, "utf8"))) };
    },
    async propose(args) {
      const result = await runCli(["propose", ...args, ...forge.repoArgs()], { env: env() });
      assert.equal(result.exitCode, 0, result.stderr);
      return result;
    },
  };
}
