import type { LoadedNode } from "../manifest/load.js";
import type { Ticket } from "../manifest/tickets.js";
import type { Report } from "../report/schema.js";
import { budget } from "./budget.js";
import { desiredPulls } from "./desired.js";
import { specListShapes } from "../manifest/lists.js";
import type { Action } from "./proposal.js";
import type { ExistingPull } from "./pulls.js";
import { reconcile } from "./reconcile.js";

// The planner is a pure function: (report, manifests, tickets, the bot's pull requests) -> actions.
// Every decision about pull requests is made here and in the steps it calls; the executor only
// carries actions out.

export interface PlanInput {
  report: Report;
  nodes: readonly LoadedNode[];
  tickets: readonly { ticket: Ticket; file: string }[];
  /** Manifest file texts at the base commit, by repository path. */
  files: ReadonlyMap<string, string>;
  /** Repository path of the manifests directory, e.g. "fleet-manifests". */
  manifestsPath: string;
  pulls: readonly ExistingPull[];
  labels?: readonly string[];
  /** At most this many new PRs; the rest are deferred to later runs. Unset: no limit. */
  maxNewPrs?: number;
  /**
   * Branch -> when its PR was first deferred (ISO time), kept by the forge between runs: oldest
   * open first.
   */
  waiting?: ReadonlyMap<string, string>;
}

/**
 * Whether this run saw `domain` on node `name`: audited, in the run's categories, not unknown
 * there. Only then is absent drift gone.
 */
export type Covered = (name: string, domain: string) => boolean;

/**
 * Drift grouped into the PRs it calls for, those reconciled with the PRs that exist, new ones
 * within the budget.
 */
export function plan(input: PlanInput): Action[] {
  const covered = coveredBy(input.report);
  const { pulls, waits } = desiredPulls(input, covered, specListShapes());
  return [
    ...budget(
      reconcile(pulls, input.pulls, covered, new Set(waits.map((w) => w.branch))),
      input.maxNewPrs,
      input.waiting ?? new Map(),
      input.report.startedAt,
    ),
    ...waits.map((w): Action => ({ type: "wait", kind: "accept", ...w })),
  ];
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
