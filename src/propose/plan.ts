import type { Report } from "../report/schema.js";
import { budget } from "./budget.js";
import { desiredPulls } from "./desired.js";
import { specListShapes } from "../manifest/lists.js";
import type { Action } from "./proposal.js";
import type { Covered, PlanInput } from "./plan-input.js";
import { reconcile } from "./reconcile.js";

// The planner is a pure function: (report, manifests, tickets, the bot's pull requests) -> actions.
// Every decision about pull requests is made here and in the steps it calls; the executor only
// carries actions out.

/**
 * Drift grouped into the PRs it calls for, those reconciled with the PRs that exist, new ones
 * within the budget.
 */
export function plan(input: PlanInput): Action[] {
  const covered = coveredBy(input.report);
  const pulls = desiredPulls(input, covered, specListShapes());
  return budget(
    reconcile(pulls, input.pulls, covered),
    input.maxNewPrs,
    input.waiting ?? new Map(),
    input.report.startedAt,
  );
}

function coveredBy(report: Report): Covered {
  const results = new Map(report.nodes.map((n) => [n.name, n]));
  return (name, domain) => {
    const result = results.get(name);
    if (!result || (result.status !== "clean" && result.status !== "drift")) return false;
    if (report.categories && !(report.categories as string[]).includes(domain)) return false;
    return !result.unknown?.some((u) => u.domain === domain);
  };
}
