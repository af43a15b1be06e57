import { ReportMergeError } from "../errors.js";
import { compareText } from "./formats/common.js";
import type { NodeResult, Report, Summary } from "./schema.js";
import { summarize } from "./tally.js";

/**
 * The order nodes appear in every report, sharded or not: code units, never the runner's locale.
 */
export const byNodeName = (a: NodeResult, b: NodeResult): number => compareText(a.name, b.name);

/** A shard report and the file it was read from, so refusals can name it. */
export interface ShardReport {
  file: string;
  report: Report;
}

/**
 * Which shard file each node came from, as the shards are read: the first node two shards share
 * is kept, to refuse the merge once the shards themselves are found to fit together.
 */
export class ShardNodes {
  private readonly fileOf = new Map<string, string>();
  private overlap: ReportMergeError | undefined;

  add(file: string, name: string): void {
    const seen = this.fileOf.get(name);
    if (seen === undefined) this.fileOf.set(name, file);
    else
      this.overlap ??= new ReportMergeError(
        `node ${name} appears in both ${seen} and ${file}: the shards overlap`,
      );
  }

  /** Throws the overlap found, if any. */
  check(): void {
    if (this.overlap) throw this.overlap;
  }
}

/**
 * Joins the reports of `--shard 1/n` ... `n/n` into the report an unsharded audit would have
 * written: every shard exactly once, one manifest revision, nodes in name order, the summary
 * recomputed, and no `shard`.
 */
export function mergeReports(shards: readonly ShardReport[]): Report {
  const owners = new ShardNodes();
  for (const { file, report } of shards)
    for (const node of report.nodes) owners.add(file, node.name);
  const nodes = shards.flatMap((s) => s.report.nodes).sort(byNodeName);
  return { ...mergedHead(shards, owners, summarize(nodes)), nodes };
}

/**
 * The merged report's every field but its nodes (`nodes` empty), from the shards' own; `owners`
 * saw every node of every shard, and `summary` counts them.
 */
export function mergedHead(
  shards: readonly ShardReport[],
  owners: ShardNodes,
  summary: Summary,
): Report {
  if (shards.length === 0) throw new ReportMergeError("no shard reports to merge");
  const unsharded = shards.filter((s) => !s.report.shard);
  if (unsharded.length) {
    throw new ReportMergeError(
      `${unsharded.map((s) => s.file).join(", ")}: not a shard report (written without --shard k/n)`,
    );
  }
  const count = shards[0]!.report.shard!.count;
  const mixed = shards.filter((s) => s.report.shard!.count !== count);
  if (mixed.length) {
    throw new ReportMergeError(
      `shard reports split the fleet differently: ${shards[0]!.file} is one of ${count} shards, ${mixed.map((s) => `${s.file} one of ${s.report.shard!.count}`).join(", ")}`,
    );
  }
  const revision = shards[0]!.report.manifestRevision;
  const otherRevision = shards.filter((s) => s.report.manifestRevision !== revision);
  if (otherRevision.length) {
    const show = (r: string | null) => r ?? "no revision (not a git checkout)";
    throw new ReportMergeError(
      `shard reports audited different manifest revisions: ${shards[0]!.file} at ${show(revision)}, ${otherRevision.map((s) => `${s.file} at ${show(s.report.manifestRevision)}`).join(", ")}`,
    );
  }
  const categories = (r: (typeof shards)[number]["report"]) =>
    r.categories?.join(",") ?? "all domains";
  const otherCategories = shards.filter(
    (s) => categories(s.report) !== categories(shards[0]!.report),
  );
  if (otherCategories.length) {
    throw new ReportMergeError(
      `shard reports audited different domains: ${shards[0]!.file} ${categories(shards[0]!.report)}, ${otherCategories.map((s) => `${s.file} ${categories(s.report)}`).join(", ")}`,
    );
  }
  const byIndex = new Map<number, string>();
  for (const { file, report } of shards) {
    const index = report.shard!.index;
    const seen = byIndex.get(index);
    if (seen !== undefined)
      throw new ReportMergeError(`${seen} and ${file} both cover shard ${index}/${count}`);
    byIndex.set(index, file);
  }
  const missing = Array.from({ length: count }, (_, i) => i + 1).filter((i) => !byIndex.has(i));
  if (missing.length) {
    throw new ReportMergeError(
      `shard${missing.length === 1 ? "" : "s"} ${missing.map((i) => `${i}/${count}`).join(", ")} missing: merge needs all ${count} shard reports`,
    );
  }
  owners.check();
  const reports = shards.map((s) => s.report);
  return {
    schemaVersion: reports[0]!.schemaVersion,
    startedAt: reports.map((r) => r.startedAt).reduce((a, b) => (a < b ? a : b)),
    finishedAt: reports.map((r) => r.finishedAt).reduce((a, b) => (a > b ? a : b)),
    manifestRevision: revision,
    ...(reports.some((r) => r.manifestDirty) && { manifestDirty: true as const }),
    ...(reports[0]!.categories && { categories: reports[0]!.categories }),
    nodes: [],
    summary,
  };
}
