import { StringDecoder } from "node:string_decoder";
import { defuseRunnerCommands, lineStart, type LineState } from "../text/escape.js";

// Standard output whose reader went away (`quartermaster audit --format json | head -1`): what is
// left is dropped quietly, and the command still ends with its own exit code. A closed pipe is not
// a failure of the audit.
let gone = false;

/** Whether standard output's reader has gone away. */
export const readerGone = () => gone;

type Write = NodeJS.WriteStream["write"];
let stdout: { raw: Write; state: LineState } | undefined;

/**
 * Every write to the stream goes through `defuseRunnerCommands`, line state kept across writes: no
 * command, whatever it prints and however it splits it, prints a line the Actions runner acts on.
 * Returns the unguarded write and the line state.
 */
function guard(stream: NodeJS.WriteStream): { raw: Write; state: LineState } {
  const raw: Write = stream.write.bind(stream);
  const state = lineStart();
  const decoder = new StringDecoder("utf8");
  const guarded = (chunk: string | Uint8Array, ...rest: never[]) => {
    const text = typeof chunk === "string" ? chunk : decoder.write(Buffer.from(chunk));
    return raw(defuseRunnerCommands(text, state), ...rest);
  };
  stream.write = guarded;
  return { raw, state };
}

/** Set up once, by the CLI's entry, before anything is written. */
export function guardOutput(): void {
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
    gone = true;
  });
  stdout = guard(process.stdout);
  guard(process.stderr);
}

/**
 * Workflow commands Quartermaster means (`--format github`, validate's annotations), whole lines
 * each escaped by `workflowCommand`: the one output that bypasses the guard.
 */
export function writeWorkflowCommands(lines: string): void {
  if (!stdout) {
    process.stdout.write(lines);
    return;
  }
  stdout.raw(lines);
  Object.assign(stdout.state, lineStart());
}
