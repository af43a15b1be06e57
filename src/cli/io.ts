import { AsyncLocalStorage } from "node:async_hooks";

/** A stream the CLI writes to: a terminal, a pipe, or a caller's capture. */
export type Output = NodeJS.WritableStream & { isTTY?: boolean };

/** What one run of the CLI writes to and reads beyond its arguments: the process's by default. */
export interface Io {
  stdout: Output;
  stderr: Output;
  env: NodeJS.ProcessEnv;
}

// Carried through the async calls of one run, so an in-process caller's runs never share streams.
const current = new AsyncLocalStorage<Io>();

/** The streams and environment of the run in progress. */
export const io = (): Io =>
  current.getStore() ?? { stdout: process.stdout, stderr: process.stderr, env: process.env };

const isProcessIo = (value: Io) =>
  value.stdout === process.stdout && value.stderr === process.stderr && value.env === process.env;

/**
 * Runs `run` with `value` as what `io()` answers inside it. The process's own streams, outside any
 * other run, are what `io()` answers anyway: the CLI's own process then never enables the async
 * hooks behind AsyncLocalStorage, which tax every promise of an audit.
 */
export const withIo = <T>(value: Io, run: () => T): T =>
  current.getStore() === undefined && isProcessIo(value) ? run() : current.run(value, run);
