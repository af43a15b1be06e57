import { runSpooledAudit } from "../../runs/audit.js";
import { AUDIT_FLAGS, auditOptions } from "../audit-options.js";
import { auditOutcome } from "../exit.js";
import { switchFlag, parseFlags } from "../flags.js";
import { UNAUDITED_FLAGS, unauditedSource, warnDropped } from "../unaudited.js";
import { checkOut } from "../output-options.js";
import { Progress } from "../progress.js";
import { io } from "../io.js";
import { visible } from "../../text/escape.js";

const AUDIT_COMMAND_FLAGS = {
  ...AUDIT_FLAGS,
  ...UNAUDITED_FLAGS,
  // audit's own: diff and snapshot share the other flags but not this exit policy.
  strict: switchFlag(
    "exit with bit 4 when a declared item could not be read (unknown), as for a node not audited",
  ),
};

/** `audit`'s argv as its config: every flag read and checked, nothing read or opened yet. */
function auditConfig(argv: string[]) {
  const { config } = parseFlags("audit", argv, AUDIT_COMMAND_FLAGS);
  return { ...config, unaudited: unauditedSource(config) };
}

// The writing and its formats: loaded once a node has answered, so not before the first session.
const loadOutput = () => import("../output.js");

export async function auditCommand(argv: string[]): Promise<number> {
  const config = auditConfig(argv);
  // An unusable --out fails before anything is audited.
  await checkOut(config.out);
  let progress: Progress | undefined;
  let output: ReturnType<typeof loadOutput> | undefined;
  const { head, spool, annotate } = await runSpooledAudit({
    ...auditOptions(config),
    unaudited: config.unaudited,
    warn: warnDropped,
    notice: (line) =>
      io().stderr.write(
        `quartermaster: ${visible(line)}; the nodes it was offered to are not audited\n`,
      ),
    say: (text) => io().stderr.write(`quartermaster: ${visible(text)}\n`),
    onResult: (total) => {
      if (total >= 2) progress = new Progress(total);
      return (result) => {
        output ??= loadOutput();
        progress?.update(result);
      };
    },
  });
  try {
    progress?.finish();
    const { writeReportStream } = await (output ?? loadOutput());
    // Written node by node from the spool rather than as one string the size of the report.
    await writeReportStream(head, () => spool.entries(annotate), config);
    return auditOutcome(spool.counts, config.strict, head.unauditedBudget);
  } finally {
    spool.close();
  }
}
