import type { Forge } from "../forge/forge.js";
import { emptyHistory, type ReadHistory } from "../report/history.js";
import { emptyRuns, type RunHistory } from "../report/runs.js";
import { botPulls, hasLeftAloneNotice, humanCommits, type ExistingPull } from "./pulls.js";
import type { KeptReport } from "./kept-report.js";
import {
  readHistory,
  readLastReportIndex,
  readRuns,
  readWaiting,
  stateBranchWriter,
} from "./state.js";

// The one step of a propose run that reads the forge: every fact the planner needs, gathered before
// it plans, so the plan is made once from them (run-plan.ts) and carried out after (execute.ts).

/** What the runs before this one left on the forge. */
export interface ForgeFacts {
  /**
   * The bot's pull requests, open and closed; each open one with a marker says whether anyone but
   * the bot committed to it, and whether the bot already said it leaves it alone.
   */
  pulls: ExistingPull[];
  /** Branch -> when its PR was first deferred. */
  waiting: Map<string, string>;
  history: ReadHistory;
  runs: RunHistory;
  /** The report the last run kept: its digest and parts. */
  lastReport?: KeptReport;
  /** What to warn of about what was read (a state file not read as one). */
  warnings: string[];
}

/** The facts of a run without a forge: nothing before it. */
export const noForgeFacts = (): ForgeFacts => ({
  pulls: [],
  waiting: new Map(),
  history: { ...emptyHistory(), dropped: [] },
  runs: emptyRuns(),
  warnings: [],
});

/** Reads every forge fact a propose run plans from. */
export async function gatherForge(github: Forge): Promise<ForgeFacts> {
  const { pulls, waiting } = await gatherPulls(github);
  const history = await readHistory(github);
  const { runs, warning } = await readRuns(github);
  const { kept: lastReport, warning: index } = await readLastReportIndex(github);
  const writer = await stateBranchWriter(github);
  return {
    pulls,
    waiting,
    history,
    runs,
    ...(lastReport !== undefined && { lastReport }),
    warnings: [writer, warning, index].filter((w) => w !== undefined),
  };
}

/** The facts the planner decides pull requests from: the bot's pull requests and the queue. */
export async function gatherPulls(github: Forge): Promise<Pick<ForgeFacts, "pulls" | "waiting">> {
  const pulls: ExistingPull[] = [];
  for (const pull of await botPulls(github)) pulls.push(await withCommits(github, pull));
  return { pulls, waiting: await readWaiting(github) };
}

/** An open proposal with who committed to it: the planner may update or close it. */
async function withCommits(github: Forge, pull: ExistingPull): Promise<ExistingPull> {
  if (pull.state !== "open" || !pull.marker) return pull;
  const human = await humanCommits(github, pull.number);
  return {
    ...pull,
    humanCommits: human,
    leftAloneNotice: human && (await hasLeftAloneNotice(github, pull)),
  };
}
