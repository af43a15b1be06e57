// A plan-shards run: how many `audit --shard k/n` jobs the selected nodes take.
import { MAX_SHARDS } from "../report/version.js";
import { fleetSessionLimit } from "../transport/session-gate.js";
import { loadManifests, selectNodes, type ManifestSource } from "./fleet.js";

export interface ShardPlan {
  /** n in every `--shard k/n`. */
  count: number;
  /** Every k from 1 to n: merge-reports needs each shard's report, even an empty one. */
  shards: number[];
  nodes: number;
}

/**
 * `requested` shards (0: enough for `perShard` nodes each), never more than there are nodes, nor
 * than `sessionLimit`: each shard gets a share of a first hop's sessions, and at least one.
 */
export function planShards(
  names: readonly string[],
  requested: number,
  perShard: number,
  sessionLimit = MAX_SHARDS,
): ShardPlan {
  const wanted = requested > 0 ? requested : Math.ceil(names.length / perShard);
  const count = Math.max(1, Math.min(wanted, names.length, MAX_SHARDS, sessionLimit));
  return { count, shards: Array.from({ length: count }, (_, i) => i + 1), nodes: names.length };
}

export interface PlanShardsOptions {
  source: ManifestSource;
  nodes: readonly string[] | undefined;
  /** 0: about `perShard` nodes each. */
  shards: number;
  perShard: number;
}

/** The plan for the selected nodes, and the session limit of the jump hosts they share. */
export async function runPlanShards(
  options: PlanShardsOptions,
): Promise<{ plan: ShardPlan; sessionLimit: number }> {
  const nodes = selectNodes(await loadManifests(options.source), options.nodes);
  const sessionLimit = fleetSessionLimit(nodes);
  const names = nodes.map((n) => n.name);
  return { plan: planShards(names, options.shards, options.perShard, sessionLimit), sessionLimit };
}
