import { stringify } from "yaml";
import { NodeAuditError } from "../../src/errors.js";
import { lastLines, runProbeProcess, type Transport } from "../../src/transport/transport.js";

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
        [
          "--reuid=65534",
          "--regid=65534",
          "--clear-groups",
          "env",
          "-i",
          "PATH=/usr/bin:/bin",
          "sh",
          "-s",
        ],
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
