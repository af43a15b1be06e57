import type { ReadHistory } from "../report/history.js";
import type { Report } from "../report/schema.js";
import type { ForgeFacts } from "./gather.js";
import { ownersOf } from "./group.js";
import { plan } from "./plan.js";
import type { PlanInput } from "./plan-input.js";
import type { Action } from "./proposal.js";
import type { ExistingPull } from "./pulls.js";
import type { StateFiles } from "./state.js";

// A propose run's plan, made once from the facts gathered from the forge (gather.ts): pure.

/** One run's plan and what it was planned from. */
export interface RunPlan extends StateFiles {
  history: ReadHistory;
  /** The report, each node's drift and dark time dated from `history`. */
  report: Report;
  actions: Action[];
  waiting: Map<string, string>;
  /** The bot's pull requests as read: whose node lists the next run may need. */
  pulls: ExistingPull[];
  /** Each node's owners, for the run history. */
  owners: Map<string, string[]>;
}

/**
 * Plans a run from what the runs before it left on the forge. `input.report` is the report as
 * read, dated from the facts' history (`datedReport`). `ticked`: deferred branches a person asked to open now (on the dashboard), over the budget.
 */
export function planRun(
  facts: ForgeFacts,
  input: Omit<PlanInput, "pulls" | "waiting">,
  ticked: ReadonlySet<string> = new Set(),
): RunPlan {
  const { history, runs, lastReport, waiting, pulls, nodeLists } = facts;
  return {
    history,
    runs,
    owners: new Map(input.nodes.map((node) => [node.name, ownersOf(node)])),
    report: input.report,
    ...(lastReport !== undefined && { lastReport }),
    actions: planActions(facts, input, ticked),
    waiting,
    pulls,
    nodeLists,
  };
}

/** The actions for `input` given the forge's pull requests and queue. */
export function planActions(
  { pulls, waiting }: Pick<ForgeFacts, "pulls" | "waiting">,
  input: Omit<PlanInput, "pulls" | "waiting">,
  ticked: ReadonlySet<string> = new Set(),
): Action[] {
  const asked = [...ticked].filter((branch) => waiting.has(branch));
  // Waiting longest goes first: a ticked box makes its PR the longest-waiting of all.
  const queue = new Map([...waiting, ...asked.map((branch) => [branch, ""] as const)]);
  return plan({
    ...input,
    ...(input.maxNewPrs !== undefined && { maxNewPrs: input.maxNewPrs + asked.length }),
    pulls,
    waiting: queue,
  });
}
