// What a report's summary and exit code count, with no schema built: the exit code and the spool
// need the count, not zod (importing schema.ts builds every report and domain schema).
import type { DriftItem, NodeResult, NodeStatus, Summary } from "./schema.js";

/** Drift that makes its node drifted and sets exit bit 1: not acknowledged, not a latent ticket. */
export function countsAsDrift(item: Pick<DriftItem, "acknowledged" | "latentPolicy">): boolean {
  return !item.acknowledged && item.latentPolicy !== "ticket";
}

/**
 * Latent-only drift (live as declared now; a boot, restart or daemon-reload changes it): counted
 * apart from drift (`summary.latentItems`), whatever `policy.latent` makes of it.
 */
export const isLatent = (item: Pick<DriftItem, "latentPolicy">): boolean =>
  item.latentPolicy !== undefined;

/**
 * Where the summary counts an item: latent-only items apart, whatever `policy.latent` makes of
 * them; acknowledged drift (waived, ticketed) apart, as a test suite counts skipped tests apart from
 * failures, so a node whose only drift is acknowledged is clean; the rest is drift.
 */
export const itemCount = (
  item: Pick<DriftItem, "acknowledged" | "latentPolicy">,
): "latentItems" | "acknowledgedItems" | "driftItems" =>
  isLatent(item) ? "latentItems" : item.acknowledged ? "acknowledgedItems" : "driftItems";

const STATUS_COUNT: Record<
  NodeStatus,
  Exclude<keyof Summary, "nodes" | "driftItems" | "acknowledgedItems" | "latentItems">
> = {
  clean: "clean",
  drift: "drifted",
  unreachable: "unreachable",
  error: "errors",
  maintenance: "maintenance",
};

/** What a report's summary and its exit code need, counted entry by entry. */
export class ReportTally {
  readonly summary: Summary = {
    nodes: 0,
    clean: 0,
    drifted: 0,
    unreachable: 0,
    errors: 0,
    maintenance: 0,
    driftItems: 0,
    acknowledgedItems: 0,
    latentItems: 0,
  };
  /** Drift not covered by a ticket or a waiver. */
  driftFound = false;
  /** Nodes unreachable or failed. */
  unauditedNodes = false;
  /** Nodes with domains they could not show. */
  unknownItems = false;

  add(node: NodeResult): void {
    const s = this.summary;
    s.nodes++;
    s[STATUS_COUNT[node.status]]++;
    for (const item of node.drift) s[itemCount(item)]++;
    this.driftFound ||= node.drift.some(countsAsDrift);
    this.unauditedNodes ||= node.status === "unreachable" || node.status === "error";
    this.unknownItems ||= (node.unknown?.length ?? 0) > 0;
  }

  static of(nodes: Iterable<NodeResult>): ReportTally {
    const tally = new ReportTally();
    for (const node of nodes) tally.add(node);
    return tally;
  }
}

export function summarize(nodes: readonly NodeResult[]): Summary {
  return ReportTally.of(nodes).summary;
}
