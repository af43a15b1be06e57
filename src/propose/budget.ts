import { SEVERITIES } from "../domains/domain.js";
import type { Action, Reconciled } from "./proposal.js";

/**
 * At most `max` of the `open` actions are kept: those deferred longest first (the forge keeps when
 * each was first deferred), then the most severe, then by branch, an order that stays the same
 * from run to run; the others become `defer`. Updates and closes are never limited. Only the
 * bodies of the pull requests opened are written.
 */
export function budget(
  actions: Reconciled[],
  max: number | undefined,
  waiting: ReadonlyMap<string, string>,
  now: string,
): Action[] {
  const written = (a: Reconciled): Action => (a.type === "open" ? { ...a, body: a.body() } : a);
  if (max === undefined) return actions.map(written);
  type Open = Extract<Reconciled, { type: "open" }>;
  const since = (a: Open) => waiting.get(a.branch) ?? now;
  // Resolve PRs carry no severity label and go first among equals: they only close out recorded
  // work.
  const rank = (a: Open) => SEVERITIES.findIndex((s) => a.labels.includes(`severity:${s}`));
  const order = (a: Open, b: Open) =>
    (since(a) < since(b) ? -1 : since(a) > since(b) ? 1 : 0) ||
    rank(a) - rank(b) ||
    (a.branch < b.branch ? -1 : 1);
  const opens = actions.filter((a): a is Open => a.type === "open");
  const kept = new Set([...opens].sort(order).slice(0, max));
  return actions.map((a) =>
    a.type !== "open" || kept.has(a)
      ? written(a)
      : {
          type: "defer",
          kind: a.kind,
          branch: a.branch,
          title: a.title,
          budget: max,
          since: since(a),
        },
  );
}

/** What the forge keeps for the next run: when each PR deferred now was first deferred. */
export function waitingAfter(actions: readonly Action[]): Map<string, string> {
  return new Map(
    actions.flatMap((a) => (a.type === "defer" ? [[a.branch, a.since] as const] : [])),
  );
}
