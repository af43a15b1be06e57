import type { DomainName } from "../domains/registry.js";
import type { DriftItem } from "../report/schema.js";

export interface LedgerChange {
  appeared: DriftItem[];
  resolved: DriftItem[];
}

/**
 * The drift reported so far, by fingerprint: a check of some domains yields only what is new
 * since the last report and what went away, so no drift is ever reported twice.
 */
export class DriftLedger {
  private readonly reported = new Map<string, DriftItem>();

  /** Records a check that covered `domains` and found `items` in them. */
  update(domains: ReadonlySet<DomainName>, items: readonly DriftItem[]): LedgerChange {
    const found = new Map(
      items.filter((i) => domains.has(i.domain)).map((i) => [i.fingerprint, i]),
    );
    const appeared = [...found.values()].filter((i) => !this.reported.has(i.fingerprint));
    const resolved = [...this.reported.values()].filter(
      (i) => domains.has(i.domain) && !found.has(i.fingerprint),
    );
    for (const item of resolved) this.reported.delete(item.fingerprint);
    for (const item of appeared) this.reported.set(item.fingerprint, item);
    return { appeared, resolved };
  }

  /** Drift present now, acknowledged or not. */
  items(): DriftItem[] {
    return [...this.reported.values()];
  }

  /** Whether some drift is neither waived nor covered by a ticket. */
  hasUnacknowledged(): boolean {
    return this.items().some((i) => !i.acknowledged);
  }
}
