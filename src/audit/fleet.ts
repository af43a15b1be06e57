import { createHash } from "node:crypto";
import pLimit from "p-limit";
import type { DriftContext } from "../drift/drift.js";
import type { LoadedNode } from "../manifest/load.js";
import { byNodeName } from "../report/merge.js";
import { SCHEMA_VERSION, summarize, type NodeResult, type Report } from "../report/schema.js";
import type { Transport } from "../transport/transport.js";
import { auditNode, type AuditSettings } from "./node.js";

export interface Shard {
  index: number;
  count: number;
}

/** Parses `k/n` (1-based). */
export function parseShard(text: string): Shard | undefined {
  const m = /^(\d+)\/(\d+)$/.exec(text);
  if (!m) return undefined;
  const [index, count] = [Number(m[1]), Number(m[2])];
  return index >= 1 && count >= 1 && index <= count ? { index, count } : undefined;
}

/** A node's shard depends on its name only, so adding a node never moves the others. */
export function shardOf(name: string, count: number): number {
  return (createHash("sha256").update(name).digest().readUInt32BE(0) % count) + 1;
}

export interface FleetRun {
  nodes: readonly LoadedNode[];
  transportFor: (node: LoadedNode) => Transport;
  settings: AuditSettings;
  drift: DriftContext;
  concurrency: number;
  manifestRevision: string | null;
  manifestDirty?: boolean;
  shard?: Shard;
  /** Called as each node finishes, in completion order. */
  onResult?: (result: NodeResult) => void;
}

/** Audits every node with bounded concurrency; one node's failure never stops the others. */
export async function auditFleet(run: FleetRun): Promise<Report> {
  const startedAt = new Date().toISOString();
  const limit = pLimit(Math.max(1, run.concurrency));
  const results = await Promise.all(
    run.nodes.map((node) =>
      limit(async () => {
        const result = await auditNode(node, run.transportFor(node), run.settings, run.drift);
        run.onResult?.(result);
        return result;
      }),
    ),
  );
  results.sort(byNodeName);
  const report: Report = {
    schemaVersion: SCHEMA_VERSION,
    startedAt,
    finishedAt: new Date().toISOString(),
    manifestRevision: run.manifestRevision,
    ...(run.manifestDirty && { manifestDirty: true as const }),
    nodes: results,
    summary: summarize(results),
  };
  if (run.shard) report.shard = run.shard;
  return report;
}
