// The flags of an audit run, shared by `audit` and `diff`, and the run options they give.
import { parseShard } from "../audit/fleet.js";
import { UsageError } from "../errors.js";
import { MAX_SHARDS } from "../report/version.js";
import type { AuditOptions } from "../runs/audit.js";
import { checkedFlag, type Config } from "./flags.js";
import {
  CONCURRENCY_FLAG,
  MANIFEST_FLAGS,
  manifestSource,
  SELECT_FLAGS,
  SSH_CONFIG_FLAG,
  TIMEOUT_FLAG,
} from "./options.js";
import { OUTPUT_FLAGS } from "./output-options.js";

/** `k/n`: one shard of the fleet (parseShard). */
const SHARD_FLAG = {
  ...checkedFlag(
    "K/N",
    "audit only shard K of N (for a matrix of jobs; join with merge-reports)",
    (given) => {
      const shard = parseShard(given);
      if (!shard)
        throw new UsageError(`--shard takes k/n with 1 <= k <= n <= ${MAX_SHARDS}, not "${given}"`);
      return shard;
    },
  ),
  excludes: { local: "--shard splits a fleet; it does not go with --local" },
};

/** The flags of an audit run and its report, shared by `diff`. */
export const AUDIT_FLAGS = {
  ...MANIFEST_FLAGS,
  ...SELECT_FLAGS,
  ...OUTPUT_FLAGS,
  concurrency: CONCURRENCY_FLAG,
  timeout: TIMEOUT_FLAG,
  "ssh-config": SSH_CONFIG_FLAG,
  shard: SHARD_FLAG,
};

/** The flags an audit run reads, whichever command names them. */
export type AuditRunConfig = Omit<Config<typeof AUDIT_FLAGS>, keyof typeof OUTPUT_FLAGS>;

/** The audit run the flags describe. */
export function auditOptions(config: AuditRunConfig): AuditOptions {
  return {
    source: manifestSource(config),
    nodes: config.nodes,
    categories: config.category,
    local: config.local,
    concurrency: config.concurrency,
    timeout: config.timeout,
    sshConfig: config["ssh-config"],
    shard: config.shard,
  };
}
