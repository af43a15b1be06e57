import { wholeNumber } from "../whole-number.js";
import type { NodeResult } from "./schema.js";

// The unaudited budget: how many nodes a run may leave unaudited, and for how long one node may
// go without a successful audit, before the exit status adds bit 8. One blip is no alarm; a node
// dark for a day, or a fleet dark at once, is.

/** `--max-unaudited` / `audit.max_unaudited` as a share of the run's nodes: "10%", "2.5%". */
export const UNAUDITED_SHARE = /^(\d+(\.\d+)?)%$/;
/** `audit.max_unaudited_for`: whole days, hours, minutes and seconds, largest first ("1d12h"). */
export const DURATION = /^(?=\d)(\d+d)?(\d+h)?(\d+m)?(\d+s)?$/;

export type UnauditedLimit = { nodes: number } | { percent: number };

/** The limit a flag or fleet.yaml value names; undefined when it names none. */
export function unauditedLimit(value: string | number): UnauditedLimit | undefined {
  if (typeof value === "number")
    return Number.isSafeInteger(value) && value >= 0 ? { nodes: value } : undefined;
  const nodes = wholeNumber(value);
  if (nodes !== undefined) return { nodes };
  const share = UNAUDITED_SHARE.exec(value);
  if (!share) return undefined;
  const percent = Number(share[1]);
  return percent <= 100 ? { percent } : undefined;
}

const UNIT_MS: Record<string, number> = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 };

/** Milliseconds in a duration such as "24h" or "1d12h"; undefined when it is not one. */
export function durationMs(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+)([dhms])/g))
    total += Number(amount) * UNIT_MS[unit!]!;
  return total;
}

/** Audited in this run: its declared state was compared (clean or drifted). */
export const audited = (node: Pick<NodeResult, "status">): boolean =>
  node.status === "clean" || node.status === "drift";

export interface UnauditedBudget {
  limit?: UnauditedLimit;
  /**
   * How long a node may go without a successful audit. Unset: it may miss one run, whatever the
   * schedule (hourly or daily), and is overdue when it misses a second in a row.
   */
  forMs?: number;
  /** The words that set each part, for the verdict: `--max-unaudited 2`, `audit.max_unaudited_for 24h`. */
  limitName?: string;
  forName: string;
}

// The overdue nodes a verdict names; the rest are counted.
const NAMED_OVERDUE = 10;

/**
 * Why the run is over its unaudited budget (one sentence per reason), or nothing, its nodes added
 * one at a time and kept as counts (and the first overdue nodes' words). `now` is the run's start;
 * a node's `unaudited.since` comes from the state kept across runs.
 */
export class UnauditedTally {
  private total = 0;
  private missing = 0;
  private overdue = 0;
  private readonly named: string[] = [];

  constructor(
    private readonly budget: UnauditedBudget,
    private readonly now: string,
  ) {}

  add(node: Pick<NodeResult, "name" | "status" | "unaudited">): void {
    this.total++;
    if (audited(node)) return;
    this.missing++;
    const { unaudited } = node;
    const overdue =
      unaudited &&
      (this.budget.forMs === undefined
        ? unaudited.runs > 1
        : Date.parse(this.now) - Date.parse(unaudited.since) > this.budget.forMs);
    if (!overdue) return;
    if (this.overdue++ < NAMED_OVERDUE)
      this.named.push(
        `${node.name} (${unaudited.never ? "never audited, first tried" : "not audited since"} ${unaudited.since}, ${unaudited.runs} run${unaudited.runs === 1 ? "" : "s"})`,
      );
  }

  reasons(): string[] {
    const { budget, missing, total, overdue } = this;
    const reasons: string[] = [];
    if (budget.limit) {
      const allowed =
        "nodes" in budget.limit
          ? budget.limit.nodes
          : Math.floor((total * budget.limit.percent) / 100);
      if (missing > allowed)
        reasons.push(
          `${missing} of ${total} nodes not audited, more than ${budget.limitName ?? "allowed"} allows (${allowed})`,
        );
    }
    if (overdue)
      reasons.push(
        `${overdue} node${overdue === 1 ? "" : "s"} not audited ${budget.forMs === undefined ? "in more than one run in a row (the grace of" : "for longer than"} ${budget.forName}${budget.forMs === undefined ? ")" : ""}: ${this.named.join(", ")}${overdue > NAMED_OVERDUE ? ` and ${overdue - NAMED_OVERDUE} more` : ""}`,
      );
    return reasons;
  }
}

/** UnauditedTally's reasons for these nodes. */
export function overUnauditedBudget(
  nodes: Iterable<Pick<NodeResult, "name" | "status" | "unaudited">>,
  budget: UnauditedBudget,
  now: string,
): string[] {
  const tally = new UnauditedTally(budget, now);
  for (const node of nodes) tally.add(node);
  return tally.reasons();
}
