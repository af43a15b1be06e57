// A merge-reports run: one report from the shard reports of `audit --shard k/n`, judged as the
// audit of the whole fleet would be.
import { ManifestErrors, ReportMergeError } from "../errors.js";
import { mergeReports, type ShardReport } from "../report/merge-reports.js";
import { readReport } from "../report/read.js";
import type { Report } from "../report/schema.js";
import {
  annotated,
  judgeBudget,
  unauditedJudge,
  type UnauditedSource,
  type WarnDropped,
} from "./unaudited.js";

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

/** The shard report files, and what the merged report's unaudited budget is judged by. */
export interface MergeReportsOptions {
  files: readonly string[];
  unaudited: UnauditedSource;
  warn: WarnDropped;
}

/** The merged report; a ReportMergeError when the shards are unusable or do not fit together. */
export async function runMergeReports(options: MergeReportsOptions): Promise<Report> {
  const shards = await Promise.all(options.files.map(readShard));
  const joined = mergeReports(shards);
  // The shards were judged by fleet.yaml's limits at one revision: the whole fleet is too.
  const judge = await unauditedJudge(
    options.unaudited,
    options.warn,
    undefined,
    shards[0]!.report.unauditedBudget,
  );
  const budget = await judgeBudget(judge, joined.startedAt, joined.nodes);
  return {
    ...joined,
    ...(budget && { unauditedBudget: budget }),
    nodes: joined.nodes.map(annotated(judge, joined.startedAt)),
  };
}
