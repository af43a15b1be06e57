// Standard output whose reader went away (`quartermaster audit --format json | head -1`): what is
// left is dropped quietly, and the command still ends with its own exit code. A closed pipe is not
// a failure of the audit.
let gone = false;

/** Whether standard output's reader has gone away. */
export const readerGone = () => gone;

/** Set up once, by the CLI's entry, before anything is written. */
export function dropOutputWhenReaderGoes(): void {
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
    gone = true;
  });
}
