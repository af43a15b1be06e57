import { NodeAuditError } from "../errors.js";
import { howItEnded, lastLines, runProbeProcess, type Transport } from "./transport.js";

/** This machine, through a local `sh -s`: what `--local` and `watch` use. */
export function localTransport(node: string): Transport {
  return {
    describe: () => "local shell",
    run: (script, limits) =>
      runProbeProcess(node, "sh", ["-s"], script, limits, (failure) =>
        failure.timedOut
          ? new NodeAuditError(node, "timeout", `probe timed out after ${limits.timeoutMs / 1000}s`)
          : new NodeAuditError(
              node,
              "probe",
              `probe failed (${howItEnded(failure)}): ${lastLines(failure.stderr)}`,
            ),
      ),
  };
}
