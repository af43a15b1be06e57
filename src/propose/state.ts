import * as z from "zod";
import type { Forge } from "../forge/forge.js";
import { StateError } from "../errors.js";
import {
  emptyHistory,
  parseHistory,
  serializeHistory,
  type AuditHistory,
  type ReadHistory,
} from "../report/history.js";
import { emptyRuns, parseRuns, serializeRuns, type RunHistory } from "../report/runs.js";
import { visible } from "../text/escape.js";
import {
  NODE_LISTS_FILE,
  parseNodeLists,
  serializeNodeLists,
  type NodeLists,
} from "./node-lists.js";
import { keptReportFiles, readKeptIndex, readKeptReport, type KeptReport } from "./kept-report.js";

// The bot's state branch: a branch no pull request comes from, one commit on top of the manifests'
// revision holding what one run leaves for the next (the deferral queue, the audit history, the
// node lists of big pull requests).

export const STATE_BRANCH = "quartermaster-state";
export const HISTORY_FILE = "audit-history.json";
export const RUNS_FILE = "run-history.json";

/**
 * The audit history as the last run left it, empty when there is none yet. One that cannot be read
 * at all stops the run: starting again would restart every dark node's clock and drift's age.
 */
export async function readHistory(github: Forge): Promise<ReadHistory> {
  const text = await github.readFile(STATE_BRANCH, HISTORY_FILE, "reading the audit history");
  if (text === undefined) return { ...emptyHistory(), dropped: [] };
  const history = parseHistory(text);
  if (typeof history !== "string") return history;
  throw new StateError(
    `${STATE_BRANCH}:${HISTORY_FILE}`,
    `${history}; the run stops rather than start the history again (restore the file from the branch's history, or delete it to start again)`,
  );
}

/**
 * The history of runs as the last run left it: empty when there is none yet, or (with the warning
 * to give) when it is not one.
 */
export async function readRuns(github: Forge): Promise<{ runs: RunHistory; warning?: string }> {
  const text = await github.readFile(STATE_BRANCH, RUNS_FILE, "reading the run history");
  if (text === undefined) return { runs: emptyRuns() };
  const runs = parseRuns(text);
  if (typeof runs !== "string") return { runs };
  return {
    runs: emptyRuns(),
    warning: `${STATE_BRANCH}:${RUNS_FILE} is ${visible(runs)}; starting the run history again`,
  };
}

/**
 * What to warn of when the state branch's last commit is not the bot's own: whoever wrote it can
 * rewrite the audit history and the queue this run plans from. A ruleset letting only the bot's
 * identity update the branch prevents it (docs/operations.md).
 */
export async function stateBranchWriter(github: Forge): Promise<string | undefined> {
  const head = await github.branchHead(STATE_BRANCH);
  if (head === undefined) return undefined;
  const { author, committer } = await github.commit(head);
  const bot = github.settings.author.email;
  if (author === bot && committer === bot) return undefined;
  const other = author === bot ? committer : author;
  return `${STATE_BRANCH} was last written by ${visible(other ?? "an unknown author")} (commit ${head.slice(0, 12)}), not by ${visible(bot)}: check that commit; a ruleset should let only the bot's identity update the branch (docs/operations.md, security settings)`;
}

/** The report the last full run planned from (what a refresh plans from again); undefined: none yet. */
export const readLastReport = (github: Forge) => readKeptReport(github, STATE_BRANCH);

/**
 * The last report's digest and parts, for this run to tell whether it keeps another: undefined when
 * none is kept in parts (none, or the single file of before), with the warning to give when the
 * index is not one. Either way this run keeps its own report in parts.
 */
export async function readLastReportIndex(
  github: Forge,
): Promise<{ kept?: KeptReport; warning?: string }> {
  try {
    const kept = await readKeptIndex(github, STATE_BRANCH);
    return kept ? { kept } : {};
  } catch (error) {
    if (!(error instanceof StateError)) throw error;
    return { warning: `${error.file} ${error.message}; this run keeps its report again` };
  }
}

/**
 * The node lists kept for markers that name their nodes by digest: none when there is no file yet,
 * or (with the warning to give) when it is not one.
 */
export async function readNodeLists(
  github: Forge,
): Promise<{ lists: NodeLists; warning?: string }> {
  const text = await github.readFile(STATE_BRANCH, NODE_LISTS_FILE, "reading the PRs' node lists");
  if (text === undefined) return { lists: new Map() };
  const { lists, problem } = parseNodeLists(text);
  return {
    lists,
    ...(problem !== undefined && {
      warning: `${STATE_BRANCH}:${NODE_LISTS_FILE} is ${visible(problem)}; no pull request's node list is read from it`,
    }),
  };
}

// The deferral queue: when each deferred pull request first waited, so the per-run budget opens
// the longest-waiting first.

const WAITING_FILE = "deferred.json";
const Waiting = z.record(z.string(), z.string());

/** Branch -> when its PR was first deferred, as the last run left it; empty when there is none. */
export async function readWaiting(github: Forge): Promise<Map<string, string>> {
  const text = await github.readFile(
    STATE_BRANCH,
    WAITING_FILE,
    "reading the deferred pull requests",
  );
  if (text === undefined) return new Map();
  // The branch is the bot's, but anyone with write access can push to it: read it as data.
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    return new Map();
  }
  const parsed = Waiting.safeParse(json);
  return parsed.success ? new Map(Object.entries(parsed.data)) : new Map();
}

/** The deferral queue as the state branch keeps it: branches sorted, so unchanged is the same text. */
function waitingText(waiting: ReadonlyMap<string, string>): string {
  return `${JSON.stringify(Object.fromEntries([...waiting].sort(([a], [b]) => (a < b ? -1 : 1))), null, 2)}\n`;
}

export interface StateFiles {
  waiting: ReadonlyMap<string, string>;
  history: AuditHistory;
  runs: RunHistory;
  /** The node lists of pull requests whose marker names them by digest. */
  nodeLists: NodeLists;
  /** The report the run planned from, for a refresh after a merge to plan from again. */
  lastReport?: KeptReport;
}

const stateTexts = (state: StateFiles) => ({
  [WAITING_FILE]: waitingText(state.waiting),
  [HISTORY_FILE]: serializeHistory(state.history),
  [RUNS_FILE]: serializeRuns(state.runs),
  [NODE_LISTS_FILE]: serializeNodeLists(state.nodeLists),
});

/** Whether `next` differs from `previous` in any state file (the report by its digest). */
export function changesState(next: StateFiles, previous: StateFiles): boolean {
  const [a, b] = [stateTexts(next), stateTexts(previous)];
  if (next.lastReport && next.lastReport.sha256 !== previous.lastReport?.sha256) return true;
  return Object.entries(a).some(([file, text]) => b[file as keyof typeof b] !== text);
}

/**
 * Keeps the state for the next run: one commit on `base` with every state file, unless none
 * changed since `previous`. Written under the propose lock, `previous` read under it too: a run
 * that kept its state meanwhile is never overwritten.
 */
export async function writeState(
  github: Forge,
  next: StateFiles,
  previous: StateFiles,
  base: string,
): Promise<void> {
  if (!changesState(next, previous)) return;
  const files = {
    ...stateTexts(next),
    ...(next.lastReport && (await keptReportFiles(github, next.lastReport))),
  };
  await github.setBranch(
    STATE_BRANCH,
    await github.commitFiles(base, files, "Quartermaster: state kept between runs"),
  );
}
