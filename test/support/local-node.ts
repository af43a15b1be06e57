import { stringify } from "yaml";
import { NodeAuditError } from "../../src/errors.js";
import { lastLines, runProbeProcess, type Transport } from "../../src/transport/transport.js";

/**
 * setpriv's arguments to run `command` as nobody, with PATH /usr/bin:/bin and no other environment
 * but the `NAME=value` words that may start `command`.
 */
export const asNobody = (...command: string[]) => [
  "--reuid=65534",
  "--regid=65534",
  "--clear-groups",
  "env",
  "-i",
  "PATH=/usr/bin:/bin",
  ...command,
];
const NOBODY_ARGS = asNobody("sh", "-s");
/** The whole command, for tests that run a probe as nobody themselves. */
export const NOBODY = ["setpriv", ...NOBODY_ARGS];

/**
 * This machine as an unprivileged user with PATH /usr/bin:/bin, as a non-root SSH session sees it.
 */
export function unprivilegedTransport(node = "localhost"): Transport {
  return {
    describe: () => "local shell as nobody",
    run: (script, limits) =>
      runProbeProcess(
        node,
        "setpriv",
        NOBODY_ARGS,
        script,
        limits,
        (failure) =>
          new NodeAuditError(
            node,
            "probe",
            `probe failed (exit ${failure.exitCode}): ${lastLines(failure.stderr)}`,
          ),
      ),
  };
}

/** A manifest tree with one node whose spec is `spec`. */
export function nodeTree(
  spec: Record<string, unknown>,
  name = "localhost",
): Record<string, string> {
  return { [`nodes/${name}.yaml`]: stringify(spec) };
}
