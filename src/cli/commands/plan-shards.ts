import { MAX_SHARDS } from "../../report/schema.js";
import {
  loadManifests,
  MANIFEST_OPTIONS,
  parse,
  parseWholeNumber,
  selectNodes,
} from "../options.js";

// A GitHub Actions matrix holds at most 256 jobs: MAX_SHARDS.
export const DEFAULT_NODES_PER_SHARD = 200;

export interface ShardPlan {
  /** n in every `--shard k/n`. */
  count: number;
  /** Every k from 1 to n: merge-reports needs each shard's report, even an empty one. */
  shards: number[];
  nodes: number;
}

/** `requested` shards (0: enough for `perShard` nodes each), never more than there are nodes. */
export function planShards(
  names: readonly string[],
  requested: number,
  perShard: number,
): ShardPlan {
  const wanted = requested > 0 ? requested : Math.ceil(names.length / perShard);
  const count = Math.max(1, Math.min(wanted, names.length, MAX_SHARDS));
  return { count, shards: Array.from({ length: count }, (_, i) => i + 1), nodes: names.length };
}

export async function planShardsCommand(argv: string[]): Promise<number> {
  const { values } = parse("plan-shards", argv, {
    ...MANIFEST_OPTIONS,
    nodes: { type: "string" },
    shards: { type: "string", default: "0" },
    "nodes-per-shard": { type: "string" },
  });
  const requested = parseWholeNumber("shards", values.shards, 0, {
    min: 0,
    hint: "(0 chooses from the fleet's size)",
  });
  const fleet = await loadManifests(values);
  const names = selectNodes(fleet, values.nodes).map((n) => n.name);
  const plan = planShards(
    names,
    requested,
    parseWholeNumber("nodes-per-shard", values["nodes-per-shard"], DEFAULT_NODES_PER_SHARD),
  );
  process.stdout.write(`${JSON.stringify(plan)}\n`);
  return 0;
}
