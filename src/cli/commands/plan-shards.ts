import { io } from "../io.js";
import { parseFlags, wholeFlag } from "../flags.js";
import { runPlanShards } from "../../runs/plan-shards.js";
import { MANIFEST_FLAGS, manifestSource, SELECT_FLAGS } from "../options.js";

// A GitHub Actions matrix holds at most 256 jobs: MAX_SHARDS.
const DEFAULT_NODES_PER_SHARD = 200;

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
  const { plan, sessionLimit } = await runPlanShards({
    source: manifestSource(config),
    nodes: config.nodes,
    shards: config.shards,
    perShard: config["nodes-per-shard"],
  });
  if (plan.count < Math.min(config.shards, plan.nodes))
    io().stderr.write(
      `quartermaster: ${plan.count} shards, not ${config.shards}: parallel shards share each jump host's ssh.max_sessions (${sessionLimit})\n`,
    );
  io().stdout.write(`${JSON.stringify(plan)}\n`);
  return 0;
}
