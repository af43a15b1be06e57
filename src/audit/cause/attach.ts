import type { Cause } from "../../domains/cause.js";
import type { HostRecord, RecordContext } from "../../domains/host-record.js";
import { domainByName } from "../../domains/registry.js";
import type { DriftItem } from "../../report/schema.js";
import { rolloutCause, type DeclaredBefore } from "./rollout.js";

// Each drift item's cause from what the host recorded: only a record that explains the live value
// itself (the version a transaction installed, the digest a package shipped, the kernel booted) names
// a cause, and its domain reads it (`Domain.cause`); anything less is `unknown`. A wrong cause is
// worse than none.

const UNKNOWN: Cause = { kind: "unknown", evidence: "nothing on the host recorded this change" };

/** What a node's audit knows beside the host's record. */
export interface CauseContext extends RecordContext {
  /** What the node's last audit declared, and the revision audited now: a rollout's evidence. */
  before?: DeclaredBefore;
  revision?: string | null;
}

/**
 * The items with a cause each: a pending rollout first (the manifest moved, whatever the host
 * recorded), then one a domain found itself; a latent-only item (live as declared, a boot or
 * restart would change it) changed nothing yet, so it has none.
 */
export function attachCauses(
  items: readonly DriftItem[],
  record: HostRecord,
  ctx: CauseContext,
): DriftItem[] {
  const known: RecordContext = {
    node: ctx.node,
    ...(ctx.since !== undefined && { since: ctx.since }),
  };
  return items.map((item) => {
    if (item.latentPolicy) return item;
    const rollout = ctx.before && rolloutCause(item, ctx.before, ctx.revision ?? null);
    if (rollout) return { ...item, cause: rollout };
    if (item.cause) return item;
    const cause = domainByName(item.domain)?.cause?.(item, record, known);
    return { ...item, cause: cause ?? UNKNOWN };
  });
}
