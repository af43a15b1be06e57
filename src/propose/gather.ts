import type { Forge } from "../forge/forge.js";
import { emptyHistory, type ReadHistory } from "../report/history.js";
import { emptyRuns, type RunHistory } from "../report/runs.js";
import { markerDigest } from "./marker.js";
import { needsNodes, NODE_LISTS_FILE, type NodeLists } from "./node-lists.js";
import { botPulls, hasLeftAloneNotice, humanCommits, type ExistingPull } from "./pulls.js";
import type { KeptReport } from "./kept-report.js";
import {
  readHistory,
  readLastReportIndex,
  readNodeLists,
  readRuns,
  readWaiting,
  STATE_BRANCH,
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
  /** The node lists the last run kept, for markers that name their nodes by digest. */
  nodeLists: NodeLists;
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
  nodeLists: new Map(),
  history: { ...emptyHistory(), dropped: [] },
  runs: emptyRuns(),
  warnings: [],
});

/** Reads every forge fact a propose run plans from. */
export async function gatherForge(github: Forge): Promise<ForgeFacts> {
  const { warnings, ...decided } = await gatherPulls(github);
  const history = await readHistory(github);
  const { runs, warning } = await readRuns(github);
  const { kept: lastReport, warning: index } = await readLastReportIndex(github);
  const writer = await stateBranchWriter(github);
  return {
    ...decided,
    history,
    runs,
    ...(lastReport !== undefined && { lastReport }),
    warnings: [writer, warning, index, ...warnings].filter((w) => w !== undefined),
  };
}

/**
 * The facts the planner decides pull requests from: the bot's pull requests with their nodes, the
 * queue; and what to warn of (a node list not kept).
 */
export async function gatherPulls(
  github: Forge,
): Promise<Pick<ForgeFacts, "pulls" | "waiting" | "nodeLists" | "warnings">> {
  const { lists, warning } = await readNodeLists(github);
  const pulls: ExistingPull[] = [];
  for (const pull of await botPulls(github, lists)) pulls.push(await withCommits(github, pull));
  const lost = pulls.filter((p) => p.marker && !p.nodes && needsNodes(p)).map(lostList);
  return {
    pulls,
    waiting: await readWaiting(github),
    nodeLists: lists,
    warnings: [...(warning === undefined ? [] : [warning]), ...lost],
  };
}

const lostList = (pull: ExistingPull) =>
  `pull request #${pull.number} names its nodes by digest ${markerDigest(pull.marker!)}, and ${STATE_BRANCH}:${NODE_LISTS_FILE} has no such list: ${pull.state === "open" ? "it is not closed until a run proposes its drift again" : "its rejection holds for any nodes"}`;

/**
 * An open proposal with who committed to it, and whether it still merges: the planner may update
 * (rebuild) or close it.
 */
async function withCommits(github: Forge, pull: ExistingPull): Promise<ExistingPull> {
  if (pull.state !== "open" || !pull.marker) return pull;
  const human = await humanCommits(github, pull.number);
  return {
    ...pull,
    humanCommits: human,
    leftAloneNotice: human && (await hasLeftAloneNotice(github, pull)),
    ...((await github.mergeable(pull.number)) === false && { conflicts: true }),
  };
}
