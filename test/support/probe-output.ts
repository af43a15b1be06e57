// Probe output as a host would send it, written by hand: what a compromised host can send instead
// of what the probe prints. Framing follows src/probe/script.ts (a frame line starts with the run's
// nonce).
import type { Transport } from "../../src/transport/transport.js";

/**
 * One section's body from its parts: `[label, text]` become mark lines, each followed by its text.
 */
export function marked(nonce: string, parts: readonly (readonly [string, string])[]): string {
  return parts.map(([label, text]) => `\n${nonce} mark ${label}\n${text}`).join("");
}

/** Whole probe output: every section framed by begin and end lines, then the end-of-probe line. */
export function framed(nonce: string, sections: readonly (readonly [string, string])[]): string {
  const body = sections
    .map(([name, text]) => `\n${nonce} begin ${name}\n${text}\n${nonce} end ${name}\n`)
    .join("");
  return `${body}\n${nonce} done\n`;
}

/** Names a host controls that are also names of Object.prototype's members. */
export const PROTOTYPE_NAMES = [
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "valueOf",
];

/** The maintenance section of a host not in maintenance. */
export const NOT_IN_MAINTENANCE = (nonce: string) =>
  marked(nonce, [
    ["locks", ""],
    ["held", ""],
  ]);

/**
 * The whole output of a clean host not in maintenance that runs kernel 6.1.0-28-amd64, for a node
 * declaring only that.
 */
export const KERNEL_ONLY = (nonce: string) =>
  framed(nonce, [
    ["maintenance", NOT_IN_MAINTENANCE(nonce)],
    [
      "kernel",
      marked(nonce, [
        ["running", "6.1.0-28-amd64\n"],
        ["installed", ""],
      ]),
    ],
  ]);

/**
 * A transport that answers every probe with `output(nonce)`, the nonce read from the probe script.
 */
export function scriptedTransport(
  output: (nonce: string) => string,
  timeoutMs = 60_000,
): Transport {
  return {
    describe: () => "scripted output",
    run: async (script) => {
      const nonce = /^QM_N=(\S+)$/m.exec(script)?.[1];
      if (!nonce) throw new Error("no nonce in the probe script");
      return { stdout: output(nonce), stderr: "", durationMs: 1, timeoutMs };
    },
  };
}
