import * as z from "zod";
import type { FileChange, Forge } from "../forge/forge.js";
import { StateError } from "../errors.js";
import {
  emptyHistory,
  parseHistory,
  serializeHistory,
  type AuditHistory,
  type ReadHistory,
} from "../report/history.js";
import { MAX_TEXT_BYTES, type OnNode } from "../report/read.js";
import { emptyRuns, parseRuns, serializeRuns, type RunHistory } from "../report/runs.js";
import { visible } from "../text/escape.js";
import {
  NODE_LISTS_FILE,
  parseNodeLists,
  serializeNodeLists,
  type NodeLists,
} from "./node-lists.js";
import { keptReportFiles, readKeptIndex, readKeptReport, type KeptReport } from "./kept-report.js";
import { partsFiles, readParts, readPartsIndex, writeParts } from "./parts.js";

// The bot's state branch: a branch no pull request comes from, one commit on top of the manifests'
// revision holding what one run leaves for the next (the deferral queue, the audit history, the
// node lists of big pull requests).

export const STATE_BRANCH = "quartermaster-state";
export const HISTORY_FILE = "audit-history.json";
export const RUNS_FILE = "run-history.json";
/**
 * Where a history over the forge's largest blob is kept instead, in gzip parts (parts.ts): a folder
 * of its name (audit-history/, run-history/). 100,000 nodes write an audit history of about 70 MB
 * and a run history of about 180 MB, over GitHub's 100 MiB blob.
 */
export const partsDir = (file: string) => file.replace(/\.json$/, "");

/**
 * A history's text and where it was read: from its parts when it is kept in parts, else its one
 * file; undefined: none. A StateError when its parts are not the text their index names.
 */
async function readStateText(
  github: Forge,
  file: string,
  what: string,
): Promise<{ text: string; where: string } | undefined> {
  const dir = partsDir(file);
  const index = await readPartsIndex(github, STATE_BRANCH, dir, what);
  if (index === undefined) {
    const text = await github.readFile(STATE_BRANCH, file, `reading ${what}`);
    return text === undefined ? undefined : { text, where: `${STATE_BRANCH}:${file}` };
  }
  // Past what a string holds whole, reading would fail with no word of which file: say so first.
  if (index.bytes > MAX_TEXT_BYTES)
    throw new StateError(
      `${STATE_BRANCH}:${dir}`,
      `is ${index.bytes} bytes, over the ${MAX_TEXT_BYTES} ${what} may be; not read`,
    );
  const chunks: Buffer[] = [];
  await readParts(github, STATE_BRANCH, dir, index, what, (chunk) => chunks.push(chunk));
  return { text: Buffer.concat(chunks).toString("utf8"), where: `${STATE_BRANCH}:${dir}` };
}

/** A history's files on the state commit: its one file, or its parts when it is over one blob. */
async function stateTextFiles(
  github: Forge,
  file: string,
  text: string,
  what: string,
): Promise<Record<string, FileChange>> {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= github.settings.maxBlobBytes) return { [file]: text };
  return partsFiles(partsDir(file), await writeParts(github, [bytes], what));
}

/**
 * The audit history as the last run left it, empty when there is none yet. One that cannot be read
 * at all stops the run: starting again would restart every dark node's clock and drift's age.
 */
export async function readHistory(github: Forge): Promise<ReadHistory> {
  const read = await readStateText(github, HISTORY_FILE, AUDIT_HISTORY);
  if (read === undefined) return { ...emptyHistory(), dropped: [] };
  const history = parseHistory(read.text);
  if (typeof history !== "string") return history;
  throw new StateError(
    read.where,
    `${history}; the run stops rather than start the history again (restore the file from the branch's history, or delete it to start again)`,
  );
}

/**
 * The history of runs as the last run left it: empty when there is none yet, or (with the warning
 * to give) when it is not one.
 */
export async function readRuns(github: Forge): Promise<{ runs: RunHistory; warning?: string }> {
  let read;
  try {
    read = await readStateText(github, RUNS_FILE, RUN_HISTORY);
  } catch (error) {
    if (!(error instanceof StateError)) throw error;
    return { runs: emptyRuns(), warning: `${error.file} ${error.message}; starting it again` };
  }
  if (read === undefined) return { runs: emptyRuns() };
  const runs = parseRuns(read.text);
  if (typeof runs !== "string") return { runs };
  return {
    runs: emptyRuns(),
    warning: `${read.where} is ${visible(runs)}; starting the run history again`,
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

/**
 * The report the last full run planned from (what a refresh plans from again), node by node;
 * undefined: none yet. `again`: the one read before, read again.
 */
export const readLastReport = (github: Forge, onNode: OnNode, again?: KeptReport) =>
  readKeptReport(github, STATE_BRANCH, onNode, again);

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

const AUDIT_HISTORY = "the audit history";
const RUN_HISTORY = "the run history";

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
  const { [HISTORY_FILE]: history, [RUNS_FILE]: runs, ...small } = stateTexts(next);
  const files = {
    ...small,
    ...(await stateTextFiles(github, HISTORY_FILE, history, AUDIT_HISTORY)),
    ...(await stateTextFiles(github, RUNS_FILE, runs, RUN_HISTORY)),
    ...(next.lastReport && (await keptReportFiles(github, next.lastReport))),
  };
  await github.setBranch(
    STATE_BRANCH,
    await github.commitFiles(base, files, "Quartermaster: state kept between runs"),
  );
}
