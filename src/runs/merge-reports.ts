// A merge-reports run: one report from the shard reports of `audit --shard k/n`, judged as the
// audit of the whole fleet would be.
import { ManifestErrors, ReportMergeError } from "../errors.js";
import { mergedHead, ShardNodes, type ShardReport } from "../report/merge-reports.js";
import { readReportNodes } from "../report/read.js";
import type { NodeResult } from "../report/schema.js";
import { EntrySpool } from "../report/spool.js";
import { judgeSpooled, unauditedJudge, type JudgedBy, type JudgedReport } from "./unaudited.js";

/** The shard's every field but its nodes; each node goes to `onNode` as it is read. */
async function readShard(file: string, onNode: (node: NodeResult) => void): Promise<ShardReport> {
  try {
    return { file, report: await readReportNodes(file, onNode) };
  } catch (error) {
    // One refusal path for every unusable shard: "...; nothing merged".
    if (error instanceof ManifestErrors)
      throw new ReportMergeError(error.errors.map((e) => e.toString()).join("; "));
    throw error;
  }
}

/** The shard report files, and what the merged report's unaudited budget is judged by. */
export interface MergeReportsOptions extends JudgedBy {
  files: readonly string[];
}

/**
 * The merged report, its nodes in a spool (in name order, as the history annotates them: `annotate`)
 * rather than in memory: one shard at a time is read, a node at a time. A ReportMergeError when the
 * shards are unusable or do not fit together.
 */
export async function runMergeReports(options: MergeReportsOptions): Promise<JudgedReport> {
  const spool = new EntrySpool();
  try {
    const owners = new ShardNodes();
    const shards: ShardReport[] = [];
    for (const file of options.files) {
      shards.push(
        await readShard(file, (node) => {
          owners.add(file, node.name);
          spool.add(node);
        }),
      );
    }
    const head = mergedHead(shards, owners, spool.counts.summary);
    // The shards were judged by fleet.yaml's limits at one revision: the whole fleet is too.
    const judge = await unauditedJudge(
      options.unaudited,
      options.warn,
      undefined,
      shards[0]!.report.unauditedBudget,
    );
    return await judgeSpooled(judge, { head, spool });
  } catch (error) {
    spool.close();
    throw error;
  }
}
