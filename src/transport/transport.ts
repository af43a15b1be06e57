import { spawn } from "node:child_process";
import { NodeAuditError } from "../errors.js";

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
}

interface Finished {
  /** Unset when the process was killed by a signal or could not start. */
  exitCode?: number;
  /** Decoded one byte per character (latin1): a string's length is its byte count. */
  stdout: string;
  stderr: string;
  /** Why the process was killed, if it was. */
  stopped?: "timeout" | "too-large";
}

/**
 * One child process: `input` on its stdin, stdout and stderr collected up to `maxOutputBytes`
 * each. Past the cap or the time limit it is killed (SIGKILL) and its pipes closed.
 */
function runProcess(
  file: string,
  args: readonly string[],
  input: string,
  limits: RunLimits,
): Promise<Finished> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { env: { ...process.env, LC_ALL: "C" } });
    let stopped: Finished["stopped"];
    const stop = (reason: NonNullable<Finished["stopped"]>) => {
      if (stopped) return;
      stopped = reason;
      child.kill("SIGKILL");
      // A grandchild holding the pipes open must not keep the node waiting.
      child.stdout.destroy();
      child.stderr.destroy();
    };
    const output = { stdout: "", stderr: "" };
    for (const stream of ["stdout", "stderr"] as const) {
      child[stream].setEncoding("latin1");
      child[stream].on("data", (chunk: string) => {
        if (output[stream].length + chunk.length > limits.maxOutputBytes) stop("too-large");
        else output[stream] += chunk;
      });
    }
    const timer = setTimeout(() => stop("timeout"), limits.timeoutMs);
    // A process that exits without reading all of its stdin (EPIPE), or that cannot start
    // (ENOENT): the exit status tells what happened.
    child.stdin.on("error", () => {});
    child.on("error", () => {});
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({
        ...(code !== null && code >= 0 && { exitCode: code }),
        ...output,
        stopped,
      });
    });
    child.stdin.end(input);
  });
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

export function lastLines(text: string, count = 3): string {
  return text.trim().split("\n").slice(-count).join(" | ");
}
