import { spoolFleet } from "../../audit/fleet.js";
import { boundHeapGrowth, fleetRun, historyRequests, type Reach } from "../../runs/audit.js";
import { AUDIT_FLAGS, auditOptions } from "../audit-options.js";
import { auditOutcome } from "../exit.js";
import { switchFlag, parseFlags } from "../flags.js";
import { UNAUDITED_FLAGS, unauditedSource, warnDropped } from "../unaudited.js";
import { annotated, judgeBudget, unauditedJudge } from "../../runs/unaudited.js";
import { checkOut, writeReportStream } from "../output.js";
import { Progress } from "../progress.js";

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

export async function auditCommand(argv: string[], reach: Reach = {}): Promise<number> {
  boundHeapGrowth();
  const config = auditConfig(argv);
  // An unusable --out fails before anything is audited.
  await checkOut(config.out);
  let progress: Progress | undefined;
  const { run, fleet } = await fleetRun(
    auditOptions(config),
    (total) => {
      if (total < 2) return () => {};
      progress = new Progress(total);
      return (result) => progress!.update(result);
    },
    reach,
  );
  // Entries go to a spool as nodes finish, and from it to the report: never all in memory.
  const judge = await unauditedJudge(config.unaudited, warnDropped, fleet.settings.audit);
  const { history } = judge;
  if (history) run.causeRequest = historyRequests(history, run.manifestRevision);
  const { head, spool } = await spoolFleet(run);
  try {
    progress?.finish();
    if (config.category) head.categories = config.category;
    const budget = await judgeBudget(judge, head.startedAt, spool.entries());
    if (budget) head.unauditedBudget = budget;
    const annotate = annotated(judge, head.startedAt);
    await writeReportStream(head, () => spool.entries(annotate), config);
    return auditOutcome(spool.counts, config.strict, budget);
  } finally {
    await spool.close();
  }
}
