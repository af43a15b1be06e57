import { io } from "../io.js";
import { ReportMergeError, UsageError } from "../../errors.js";
import { auditOutcome, ExitBit } from "../exit.js";
import { parseFlags } from "../flags.js";
import { UNAUDITED_FLAGS, unauditedSource, warnDropped } from "../unaudited.js";
import { writeReportStream } from "../output.js";
import { checkOut, formatFlag, OUTPUT_FLAGS } from "../output-options.js";
import { visible } from "../../text/escape.js";
import { runMergeReports } from "../../runs/merge-reports.js";

const MERGE_REPORTS_FLAGS = {
  ...OUTPUT_FLAGS,
  // Reports are for machines; `--format text` still shows one to a person.
  format: formatFlag("json"),
  ...UNAUDITED_FLAGS,
};

/** `merge-reports`'s argv as its config and the shard files: nothing read yet. */
function mergeReportsConfig(argv: string[]) {
  const { config, positionals: files } = parseFlags("merge-reports", argv, MERGE_REPORTS_FLAGS, {
    positionals: true,
  });
  if (files.length === 0)
    throw new UsageError(
      "merge-reports needs the shard report files: merge-reports --out report.json shard-*.json",
    );
  return { config, files, unaudited: unauditedSource(config) };
}

/**
 * `merge-reports [--format F] [--out FILE] SHARD.json...`: one report from the shard reports of
 * `audit --shard k/n`, exiting like the audit of the whole fleet would.
 */
export async function mergeReportsCommand(argv: string[]): Promise<number> {
  const { config, files, unaudited } = mergeReportsConfig(argv);
  await checkOut(config.out);
  try {
    const { head, spool, annotate } = await runMergeReports({
      files,
      unaudited,
      warn: warnDropped,
    });
    try {
      // Written node by node from the spool rather than as one string the size of the report.
      await writeReportStream(head, () => spool.entries(annotate), config);
      return auditOutcome(spool.counts, false, head.unauditedBudget);
    } finally {
      spool.close();
    }
  } catch (error) {
    if (!(error instanceof ReportMergeError)) throw error;
    io().stderr.write(`quartermaster merge-reports: ${visible(error.message)}; nothing merged\n`);
    return ExitBit.usage;
  }
}
