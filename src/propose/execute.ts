import { ForgeError } from "../errors.js";
import type { Forge } from "../forge/forge.js";
import type { Unasked } from "../forge/records.js";
import { nextHistory } from "../report/history.js";
import { appendRun, type RunContext } from "../report/runs.js";
import { visible } from "../text/escape.js";
import { waitingAfter } from "./budget.js";
import { listsAfter } from "./node-lists.js";
import type { Action, PullContent } from "./proposal.js";
import { LEFT_ALONE_MARK } from "./pulls.js";
import type { RunPlan } from "./run-plan.js";
import type { StateFiles } from "./state.js";

export interface Outcome {
  action: Action;
  ok: boolean;
  error?: string;
  /** The PR number an `open` created. */
  number?: number;
  /** The owners of the PR an `open` created that GitHub could not be asked to request. */
  unasked?: Unasked[];
}

/**
 * The state a run leaves for the next: deferred PRs keep their place in the queue (the next run
 * opens the longest-waiting first); the history keeps since when each node of `fleet` is dark and
 * each drift exists; the run history gains this run, with the pull requests `outcomes` opened; the
 * node lists of pull requests that name theirs by digest are kept for the runs that read them.
 */
export const stateAfter = (
  run: RunPlan,
  fleet: ReadonlySet<string>,
  outcomes: readonly Outcome[] = [],
): StateFiles => ({
  waiting: waitingAfter(run.actions),
  nodeLists: listsAfter(run.pulls, run.actions),
  history: nextHistory(run.history, run.report, fleet),
  runs: appendRun(run.runs, run.report, {
    pulls: carried(run.actions, outcomes),
    owners: run.owners,
  }),
});

/** The pull requests carrying drift after this run: those updated, and those opened. */
function carried(actions: readonly Action[], outcomes: readonly Outcome[]): RunContext["pulls"] {
  const opened = new Map(outcomes.map((o) => [o.action, o.number]));
  return actions.flatMap((action) => {
    const number =
      action.type === "update"
        ? action.number
        : action.type === "open"
          ? opened.get(action)
          : undefined;
    if (number === undefined || (action.type !== "open" && action.type !== "update")) return [];
    const { kind, domain } = action.marker;
    return [
      {
        number,
        kind,
        nodes: action.nodes,
        fingerprints: action.fingerprints,
        ...(domain && { domain }),
      },
    ];
  });
}

/** Carries the actions out one by one; a failed action is reported and the rest still run. */
export async function executePlan(
  github: Forge,
  actions: readonly Action[],
  base: { branch: string; sha: string },
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const action of actions) {
    try {
      const outcome: Outcome = { action, ok: true };
      switch (action.type) {
        case "open": {
          const sha = await github.commitFiles(base.sha, action.files, action.title);
          await github.setBranch(action.branch, sha);
          outcome.number = await github.openPull({
            branch: action.branch,
            base: base.branch,
            title: action.title,
            body: action.body,
          });
          // Labels a run fails to add are added by the next (reconcile); reviews are asked anyway.
          const labelled = await github.addLabels(outcome.number, action.labels).then(
            () => undefined,
            (error: unknown) => {
              if (!(error instanceof ForgeError)) throw error;
              return error.message;
            },
          );
          outcome.unasked = await github.requestReviewers(outcome.number, action.owners);
          if (labelled !== undefined) Object.assign(outcome, { ok: false, error: labelled });
          break;
        }
        case "update":
          if (action.updateFiles)
            await github.setBranch(
              action.branch,
              await github.commitFiles(base.sha, action.files, action.title),
            );
          await github.updatePull(action.number, { title: action.title, body: action.body });
          await github.addLabels(action.number, action.addLabels);
          break;
        case "close":
          // Closed first: a run that fails after it never posts the same comment twice.
          await github.closePull(action.number);
          await github.comment(action.number, action.comment);
          await github.deleteBranch(action.branch);
          break;
        case "leave":
          if (action.comment)
            await github.comment(action.number, `${action.comment}\n\n${LEFT_ALONE_MARK}`);
          break;
        case "defer":
          break;
      }
      outcomes.push(outcome);
    } catch (error) {
      // The forge refused or failed: the next run retries. Anything else is a bug, not an outcome.
      if (!(error instanceof ForgeError)) throw error;
      outcomes.push({ action, ok: false, error: error.message });
    }
  }
  return outcomes;
}

/**
 * One line per action for stdout and logs; titles and paths carry host text, so the line goes
 * through `visible`.
 */
export function describeAction(action: Action): string {
  return visible(describe(action));
}

const notes = (content: PullContent) =>
  content.notes?.map((note) => ` [note: ${note.replaceAll("`", "")}]`).join("") ?? "";

function describe(action: Action): string {
  switch (action.type) {
    case "open":
      return `open   ${action.kind.padEnd(7)} ${action.branch}: ${action.title} (${Object.keys(action.files).join(", ")})${notes(action)}`;
    case "update":
      return `update #${action.number} ${action.kind} ${action.branch}${action.updateFiles ? " (new commit)" : " (body only)"}: ${action.title}${notes(action)}`;
    case "close":
      return `close  #${action.number} ${action.branch}`;
    case "leave":
      return `leave  #${action.number}: ${action.reason}${action.comment ? " (comment once)" : ""}`;
    case "defer":
      return `defer  ${action.kind.padEnd(7)} ${action.branch}: ${action.title} (over this run's budget of ${action.budget} new pull requests; opened on a later run)`;
  }
}
