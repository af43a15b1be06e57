// A scheduled run as the drift-audit workflow makes it, for the end-to-end tests of propose: an
// audit of the test hosts through the real CLI that reads the history from the bot's state branch,
// written as JSON, then `propose` on it against the suite forge.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Report } from "../../src/report/schema.js";
import { runCli, type CliResult } from "./cli.js";
import type { SuiteForge } from "./forge.js";

/** An audit's report: the file it wrote and what it holds. */
export interface Audited {
  file: string;
  report: Report;
}

export interface ScheduledRun {
  /** Audits into `<name>.json` in the forge's scratch folder; the exit code must be `exitCode`. */
  audit(name: string, exitCode: number): Promise<Audited>;
  /** The same audit as text, as an operator reads it; the exit code must be `exitCode`. */
  auditText(exitCode: number): Promise<string>;
  /** `propose` with `args` (a report source, other flags) on the forge's repository; must exit 0. */
  propose(args: string[]): Promise<CliResult>;
  /** The audit, then `propose --report` on its file with `args`: the whole scheduled run. */
  auditAndPropose(name: string, exitCode: number, args?: string[]): Promise<Audited>;
}

/**
 * The runs of `forge`'s repository auditing the hosts `sshConfig()` names. With `stateFromRepo:
 * false` each audit reads no history, as if it were the first; `env` is added to every run's.
 */
export function scheduledRun(
  forge: SuiteForge,
  sshConfig: () => string,
  options: { stateFromRepo?: boolean; env?: Record<string, string> } = {},
): ScheduledRun {
  const env = () => ({ ...forge.double.cliEnv(), ...options.env });
  const history = options.stateFromRepo === false ? [] : ["--state-from-repo"];
  const run = async (exitCode: number, format: string[]): Promise<CliResult> => {
    const args = ["audit", ...forge.repoArgs(), "--ssh-config", sshConfig(), ...history];
    const result = await runCli([...args, "--format", ...format], { env: env() });
    assert.equal(result.exitCode, exitCode, result.stderr);
    return result;
  };
  const audit = async (name: string, exitCode: number): Promise<Audited> => {
    const file = path.join(forge.work, `${name}.json`);
    await run(exitCode, ["json", "--out", file]);
    return { file, report: Report.parse(JSON.parse(await readFile(file, "utf8"))) };
  };
  const propose = async (args: string[]): Promise<CliResult> => {
    const result = await runCli(["propose", ...args, ...forge.repoArgs()], { env: env() });
    assert.equal(result.exitCode, 0, result.stderr);
    return result;
  };
  return {
    audit,
    auditText: async (exitCode) => (await run(exitCode, ["text"])).stdout,
    propose,
    async auditAndPropose(name, exitCode, args = []) {
      const audited = await audit(name, exitCode);
      await propose(["--report", audited.file, ...args]);
      return audited;
    },
  };
}
