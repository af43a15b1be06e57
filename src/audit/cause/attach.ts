import { boundedCause, type Cause } from "../../domains/cause.js";
import { HOST_CLOCK_TOLERANCE_S, untimedEvidence } from "../../domains/file-times.js";
import type { HostRecord, RecordContext } from "../../domains/host-record.js";
import { domainByName } from "../../domains/registry.js";
import type { DriftItem } from "../../report/schema.js";
import { declaredAsBefore, rolloutCause, splitPrints, type DeclaredBefore } from "./rollout.js";

// Each drift item's cause from what the host recorded: only a record that explains the live value
// itself (the version a transaction installed, the digest a package shipped, the kernel booted) names
// a cause, and its domain reads it (`Domain.cause`); anything less is `unknown`. A wrong cause is
// worse than none.

const UNKNOWN: Cause = { kind: "unknown", evidence: "nothing on the host recorded this change" };

// A time as a report holds it (the reader's ISO datetime): a four-digit year, UTC.
const REPORT_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,3})?Z$/;

/**
 * The cause, or `unknown` saying why when the time the host recorded for it is none: not a time a
 * report holds, or later than the audit by more than the tolerance (a wrong clock; a file's owner
 * sets its mtime anywhere on tmpfs). A report never holds a time its own reader refuses.
 */
function timeChecked(cause: Cause): Cause {
  const at = cause.at;
  if (at === undefined || cause.kind === "rollout") return cause;
  const ms = Date.parse(at);
  const why = Number.isNaN(ms)
    ? "not a time"
    : ms > Date.now() + HOST_CLOCK_TOLERANCE_S * 1000
      ? "later than the audit by more than a day"
      : REPORT_TIME.test(at)
        ? undefined
        : "not a time";
  if (why === undefined) return cause;
  return {
    kind: "unknown",
    evidence: untimedEvidence(`the time the host recorded for this ${cause.kind} change,`, at, why),
  };
}

/** A drift of the node as its last audit left it in the history. */
export interface SeenDrift {
  firstSeen: string;
  /** The cause found then, `unknown` too. */
  cause?: Cause;
}

/** What a node's audit knows beside the host's record. */
export interface CauseContext extends RecordContext {
  /** What the node's last audit declared, and the revision audited now: a rollout's evidence. */
  before?: DeclaredBefore;
  /** The prints of what this audit declares (`declaredPrints`), beside the last audit's `before`. */
  declared?: string;
  revision?: string | null;
  /** When the revision audited now was committed. */
  revisionAt?: string;
  /**
   * The node's last audit saw this drift fingerprint (the same live value): when an audit first saw
   * it, and the cause known then, if any.
   */
  seen?: (fingerprint: string) => SeenDrift | undefined;
}

/**
 * A runtime write is a change since the node's last audit. A live value that audit saw already
 * changed before it, and what wrote it is no longer told apart. One it did not see changed since
 * only where it declared the value declared now here (or the node's whole declaration is the same):
 * a drift's fingerprint holds the declared value too, so under another declaration that audit may
 * have seen this live value as clean or as other drift, and when it changed is not known.
 */
function sinceLastAudit(
  cause: Cause,
  item: DriftItem,
  ctx: CauseContext,
  seen: SeenDrift | undefined,
): Cause {
  if (cause.kind !== "runtime") return cause;
  if (seen)
    return {
      kind: "unknown",
      evidence: `the live value is the one an audit first saw at ${seen.firstSeen}: it changed before then`,
    };
  const { before, declared, since } = ctx;
  if (!before || declaredAsBefore(item, before) || sameDeclaration(before, declared)) return cause;
  const at = since === undefined ? "" : ` at ${new Date(since).toISOString()}`;
  return {
    kind: "unknown",
    evidence: `the manifests changed this value since this node's last audit${at}: when the live value changed is not known`,
  };
}

/** The node declares exactly what it declared at its last audit. */
function sameDeclaration(before: DeclaredBefore, declared: string | undefined): boolean {
  if (declared === undefined) return false;
  const now = splitPrints(declared);
  return now.size === before.prints.size && [...now].every((p) => before.prints.has(p));
}

/**
 * The items with a cause each: a pending rollout first (the manifest moved, whatever the host
 * recorded), then one a domain found itself, else the one known when the drift was first seen; a
 * latent-only item (live as declared, a boot or restart would change it) changed nothing yet: its
 * cause, where the domain reads one, is what put its coming value in place, else the one read when
 * an audit first saw that coming value.
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
    const seen = ctx.seen?.(item.fingerprint);
    if (item.latentPolicy) {
      const latent =
        item.latent &&
        domainByName(item.domain)?.latentCause?.({ ...item, latent: item.latent }, record, known);
      const cause = latent && boundedCause(timeChecked(latent));
      return cause || seen?.cause ? { ...item, cause: kept(cause, seen) } : item;
    }
    const rollout =
      ctx.before && rolloutCause(item, ctx.before, ctx.revision ?? null, ctx.revisionAt);
    if (rollout) return { ...item, cause: rollout };
    // A domain reading the host's record refines the cause its compare found (`item.cause`).
    const read = domainByName(item.domain)?.cause?.(item, record, known) ?? item.cause ?? UNKNOWN;
    return {
      ...item,
      cause: kept(boundedCause(timeChecked(sinceLastAudit(read, item, ctx, seen))), seen),
    };
  });
}

/**
 * What the host shows since the last audit rarely tells why a drift persists: the cause found when
 * it was first seen stays with it, word for word (an unknown one's why too, so an open pull request
 * is not rewritten for "seen before"), unless a known one is read now.
 */
function kept(read: Cause | undefined, seen: SeenDrift | undefined): Cause {
  return ((!read || read.kind === "unknown") && seen?.cause) || read || UNKNOWN;
}
