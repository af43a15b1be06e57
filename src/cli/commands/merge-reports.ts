import { io } from "../io.js";
import { ManifestErrors, ReportMergeError, UsageError } from "../../errors.js";
import { mergeReports, type ShardReport } from "../../report/merge-reports.js";
import { readReport } from "../../report/read.js";
import { ExitBit } from "../exit.js";
import { parseFlags } from "../flags.js";
import {
  annotated,
  checkUnauditedFlags,
  judgeBudget,
  UNAUDITED_FLAGS,
  unauditedJudge,
} from "../unaudited.js";
import { checkOut, formatFlag, OUTPUT_FLAGS, writeReportStream } from "../output.js";
import { visible } from "../../text/escape.js";
import { auditExitCode, boundHeapGrowth } from "./audit.js";

async function readShard(file: string): Promise<ShardReport> {
  try {
    return { file, report: await readReport(file) };
  } catch (error) {
    // One refusal path for every unusable shard: "...; nothing merged".
    if (error instanceof ManifestErrors)
      throw new ReportMergeError(error.errors.map((e) => e.toString()).join("; "));
    throw error;
  }
}

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
  checkUnauditedFlags(config);
  return { config, files };
}

/**
 * `merge-reports [--format F] [--out FILE] SHARD.json...`: one report from the shard reports of
 * `audit --shard k/n`, exiting like the audit of the whole fleet would.
 */
export async function mergeReportsCommand(argv: string[]): Promise<number> {
  const { config, files } = mergeReportsConfig(argv);
  await checkOut(config.out);
  boundHeapGrowth();
  try {
    const shards = await Promise.all(files.map(readShard));
    const joined = mergeReports(shards);
    // The shards were judged by fleet.yaml's limits at one revision: the whole fleet is too.
    const judge = await unauditedJudge(config, undefined, shards[0]!.report.unauditedBudget);
    const budget = await judgeBudget(judge, joined.startedAt, joined.nodes);
    const merged = {
      ...joined,
      ...(budget && { unauditedBudget: budget }),
      nodes: joined.nodes.map(annotated(judge, joined.startedAt)),
    };
    // JSON is written node by node rather than as one string the size of the report.
    await writeReportStream({ ...merged, nodes: [] }, () => merged.nodes, config);
    return auditExitCode(merged);
  } catch (error) {
    if (!(error instanceof ReportMergeError)) throw error;
    io().stderr.write(`quartermaster merge-reports: ${visible(error.message)}; nothing merged\n`);
    return ExitBit.usage;
  }
}
