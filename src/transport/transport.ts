import { NodeAuditError } from "../errors.js";
import { runProcess, type RunLimits } from "./launcher.js";

export type { RunLimits };

export interface ProbeRun {
  /**
   * Probe stdout, decoded one byte per character (latin1) so file contents survive byte for byte.
   */
  stdout: string;
  stderr: string;
  durationMs: number;
  /**
   * The node's overall time budget this run had: parsing its output counts against what is left.
   */
  timeoutMs: number;
  /** Connection attempts it took, when the transport retries transient failures (ssh). */
  tries?: number;
}

/** Runs the probe script on a node and returns what it printed. Throws NodeAuditError. */
export interface Transport {
  describe(): string;
  run(script: string, limits: RunLimits): Promise<ProbeRun>;
}

export interface ProcessFailure {
  /** Unset when the process could not be started. */
  exitCode?: number;
  stderr: string;
  timedOut: boolean;
}

/**
 * Runs `file args` with the probe on stdin. `classify` turns a failed process into the node
 * error the report shows (the ssh transport knows ssh's exit 255 and its messages).
 */
export async function runProbeProcess(
  node: string,
  file: string,
  args: readonly string[],
  script: string,
  limits: RunLimits,
  classify: (failure: ProcessFailure) => NodeAuditError,
): Promise<ProbeRun> {
  const started = performance.now();
  const result = await runProcess(file, args, script, limits);
  const durationMs = performance.now() - started;
  const { stdout, stderr } = result;
  if (result.stopped === "too-large") {
    throw new NodeAuditError(
      node,
      "too-large",
      `probe output exceeded the ${limits.maxOutputBytes}-byte cap (audit.max_output_bytes): probe stopped, node not audited`,
    );
  }
  if (result.stopped === "timeout" || result.exitCode !== 0) {
    throw classify({
      ...(result.exitCode !== undefined && { exitCode: result.exitCode }),
      stderr,
      timedOut: result.stopped === "timeout",
    });
  }
  return {
    stdout,
    stderr,
    durationMs,
    timeoutMs: limits.timeoutMs,
  };
}

/** How a failed process ended, in words: its exit status, or that it never started. */
export const howItEnded = (failure: ProcessFailure) =>
  failure.exitCode === undefined ? "not started" : `exit ${failure.exitCode}`;

export function lastLines(text: string, count = 3): string {
  return text.trim().split("\n").slice(-count).join(" | ");
}
