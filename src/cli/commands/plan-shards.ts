import { io } from "../io.js";
import { MAX_SHARDS } from "../../report/schema.js";
import { fleetSessionLimit } from "../../transport/session-gate.js";
import { parseFlags, wholeFlag } from "../flags.js";
import { loadManifests, MANIFEST_FLAGS, SELECT_FLAGS, selectNodes } from "../options.js";

// A GitHub Actions matrix holds at most 256 jobs: MAX_SHARDS.
export const DEFAULT_NODES_PER_SHARD = 200;

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

const PLAN_SHARDS_FLAGS = {
  ...MANIFEST_FLAGS,
  nodes: SELECT_FLAGS.nodes,
  shards: wholeFlag(
    "N",
    "number of shards (0: about --nodes-per-shard nodes each) (default: 0)",
    0,
    { min: 0, hint: "(0 chooses from the fleet's size)" },
  ),
  "nodes-per-shard": wholeFlag(
    "N",
    "nodes per shard when --shards is 0 (default: 200)",
    DEFAULT_NODES_PER_SHARD,
  ),
};

export async function planShardsCommand(argv: string[]): Promise<number> {
  const { config } = parseFlags("plan-shards", argv, PLAN_SHARDS_FLAGS);
  const fleet = await loadManifests(config);
  const nodes = selectNodes(fleet, config.nodes);
  const sessionLimit = fleetSessionLimit(nodes);
  const plan = planShards(
    nodes.map((n) => n.name),
    config.shards,
    config["nodes-per-shard"],
    sessionLimit,
  );
  if (plan.count < Math.min(config.shards, nodes.length))
    io().stderr.write(
      `quartermaster: ${plan.count} shards, not ${config.shards}: parallel shards share each jump host's ssh.max_sessions (${sessionLimit})\n`,
    );
  io().stdout.write(`${JSON.stringify(plan)}\n`);
  return 0;
}
