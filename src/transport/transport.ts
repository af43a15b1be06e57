import { execa } from "execa";
import { NodeAuditError } from "../errors.js";

export interface ProbeRun {
  /** Probe stdout, decoded one byte per character (latin1) so file contents survive byte for byte. */
  stdout: string;
  stderr: string;
  durationMs: number;
  /** The node's overall time budget this run had: parsing its output counts against what is left. */
  timeoutMs: number;
}

export interface RunLimits {
  timeoutMs: number;
  maxOutputBytes: number;
}

/** Runs the probe script on a node and returns what it printed. Throws NodeAuditError. */
export interface Transport {
  describe(): string;
  run(script: string, limits: RunLimits): Promise<ProbeRun>;
}

export interface ProcessFailure {
  exitCode?: number;
  stderr: string;
  timedOut: boolean;
  isMaxBuffer: boolean;
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
  const result = await execa(file, args, {
    input: script,
    encoding: "latin1",
    reject: false,
    timeout: limits.timeoutMs,
    killSignal: "SIGKILL",
    maxBuffer: limits.maxOutputBytes,
    stripFinalNewline: false,
    env: { LC_ALL: "C" },
  });
  const durationMs = performance.now() - started;
  const stderr = typeof result.stderr === "string" ? result.stderr : "";
  if (result.isMaxBuffer) {
    throw new NodeAuditError(
      node,
      "too-large",
      `probe output exceeded the ${limits.maxOutputBytes}-byte cap (audit.max_output_bytes): probe stopped, node not audited`,
    );
  }
  if (result.timedOut || result.failed || result.exitCode !== 0) {
    throw classify({
      exitCode: result.exitCode,
      stderr,
      timedOut: result.timedOut,
      isMaxBuffer: false,
    });
  }
  return { stdout: String(result.stdout), stderr, durationMs, timeoutMs: limits.timeoutMs };
}

export function lastLines(text: string, count = 3): string {
  return text.trim().split("\n").slice(-count).join(" | ");
}
