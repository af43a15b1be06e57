import { StringDecoder } from "node:string_decoder";
import {
  defuseRunnerCommands,
  lineStart,
  type LineState,
  type RunnerEscapes,
} from "../text/escape.js";
import { io, type Output } from "./io.js";

// Standard output whose reader went away (`quartermaster audit --format json | head -1`): what is
// left is dropped quietly, and the command still ends with its own exit code. A closed pipe is not
// a failure of the audit.
let gone = false;

/** Whether standard output's reader has gone away. */
export const readerGone = () => gone;

/** Set up once, by the CLI's entry: a closed standard output ends nothing. */
export function watchReader(): void {
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
    gone = true;
  });
}

type Write = Output["write"];
interface Guard {
  raw: Write;
  state: LineState;
}
// Keyed by stream, so a stream is guarded once however many runs write to it.
const guards = new WeakMap<Output, Guard>();

/**
 * Every write to the stream goes through `defuseRunnerCommands`, line state kept across writes: no
 * command, whatever it prints and however it splits it, prints a line the Actions runner acts on.
 */
function guard(stream: Output): void {
  if (guards.has(stream)) return;
  const raw: Write = stream.write.bind(stream);
  const state = lineStart();
  const decoder = new StringDecoder("utf8");
  const guarded = (chunk: string | Uint8Array, ...rest: never[]) => {
    const text = typeof chunk === "string" ? chunk : decoder.write(Buffer.from(chunk));
    return raw(defuseRunnerCommands(text, state), ...rest);
  };
  stream.write = guarded;
  guards.set(stream, { raw, state });
}

/** Guards both streams of the run, before anything is written to them. */
export function guardOutput(streams: { stdout: Output; stderr: Output }): void {
  guard(streams.stdout);
  guard(streams.stderr);
}

/**
 * Workflow commands Quartermaster means (`--format github`, validate's annotations), whole lines
 * each escaped by `workflowCommand`: the one output that bypasses the guard.
 */
export function writeWorkflowCommands(lines: string): void {
  const { stdout } = io();
  const guarded = guards.get(stdout);
  if (!guarded) {
    stdout.write(lines);
    return;
  }
  guarded.raw(lines);
  Object.assign(guarded.state, lineStart());
}

/**
 * Text in a format with escapes of its own (XML, the Prometheus exposition): runner commands
 * defused in those terms, so a parser of the format still reads the exact text.
 */
export function writeDefused(text: string, escapes: RunnerEscapes): void {
  const { stdout } = io();
  const guarded = guards.get(stdout);
  if (!guarded) stdout.write(defuseRunnerCommands(text, lineStart(), escapes));
  else guarded.raw(defuseRunnerCommands(text, guarded.state, escapes));
}
