// What `audit` and `merge-reports` judge the unaudited budget by: the limits (flag, fleet.yaml or
// what the shard reports recorded) and the history of earlier runs (a file, or the state branch).
import { InputFileError } from "../errors.js";
import type { GitHubSettings } from "../forge/github-settings.js";
import type { AuditSettings } from "../manifest/schema.js";
import {
  annotateNode,
  parseHistory,
  type AuditHistory,
  type ReadHistory,
} from "../report/history.js";
import type { NodeResult, Report } from "../report/schema.js";
import type { SpooledReport } from "../report/spool.js";
import { durationMs, UnauditedTally, unauditedLimit } from "../report/unaudited.js";

/** Says which entries of the history `file` were left out, and hands the history on. */
export type WarnDropped = (file: string, history: ReadHistory) => ReadHistory;

type Budget = NonNullable<Report["unauditedBudget"]>;

export interface Judge {
  history?: AuditHistory;
  /** Unset: the run has nothing to judge against (no limit set, no history). */
  budget?: Omit<Budget, "over">;
}

/** The flags' limit and where the history is: a file, or the state branch through these settings. */
export interface UnauditedSource {
  maxUnaudited: string | undefined;
  history?: { file: string } | { github: GitHubSettings };
}

/** What a run's unaudited budget is judged by, and who is told of the history's dropped entries. */
export interface JudgedBy {
  unaudited: UnauditedSource;
  warn: WarnDropped;
}

async function historyFrom(
  source: UnauditedSource["history"],
  warn: WarnDropped,
): Promise<AuditHistory | undefined> {
  if (source === undefined) return undefined;
  // The readers (Octokit and the state branch's, the report file's) load only in a run that reads
  // a history, before its first session: most audits never do.
  if ("github" in source) {
    const [{ GitHub }, { HISTORY_FILE, readHistory, STATE_BRANCH }] = await Promise.all([
      import("../forge/github.js"),
      import("../propose/state.js"),
    ]);
    return warn(`${STATE_BRANCH}:${HISTORY_FILE}`, await readHistory(new GitHub(source.github)));
  }
  const { readText } = await import("../report/read.js");
  const history = parseHistory(await readText(source.file, "audit history"));
  if (typeof history === "string") throw new InputFileError(source.file, history);
  return warn(source.file, history);
}

/**
 * The limits and history this run is judged by: `--max-unaudited` over fleet.yaml's, over what
 * the shard reports were judged by.
 */
export async function unauditedJudge(
  source: UnauditedSource,
  warn: WarnDropped,
  fleet: AuditSettings | undefined,
  recorded?: Report["unauditedBudget"],
): Promise<Judge> {
  const flag = source.maxUnaudited;
  const history = await historyFrom(source.history, warn);
  const maxUnaudited = flag ?? fleet?.max_unaudited ?? recorded?.maxUnaudited;
  const maxFor = fleet?.max_unaudited_for ?? recorded?.maxUnauditedFor;
  if (maxUnaudited === undefined && maxFor === undefined && !history) return {};
  return {
    ...(history && { history }),
    budget: {
      ...(maxUnaudited !== undefined && { maxUnaudited }),
      ...(maxFor !== undefined && { maxUnauditedFor: maxFor }),
    },
  };
}

/** A node entry as the history annotates it (unchanged without history). */
function annotated(judge: Judge, startedAt: string): (node: NodeResult) => NodeResult {
  const { history } = judge;
  return history ? (node) => annotateNode(node, history, startedAt) : (node) => node;
}

/** The report head's `unauditedBudget`, judged over every (annotated) node entry. */
async function judgeBudget(
  judge: Judge,
  startedAt: string,
  nodes: AsyncIterable<NodeResult> | Iterable<NodeResult>,
): Promise<Report["unauditedBudget"]> {
  const { budget } = judge;
  if (!budget) return undefined;
  const limit = budget.maxUnaudited === undefined ? undefined : unauditedLimit(budget.maxUnaudited);
  const tally = new UnauditedTally(
    {
      ...(limit && { limit, limitName: `max_unaudited ${budget.maxUnaudited}` }),
      ...(budget.maxUnauditedFor !== undefined && {
        forMs: durationMs(budget.maxUnauditedFor),
      }),
      forName:
        budget.maxUnauditedFor === undefined
          ? "one missed run, max_unaudited_for being unset"
          : `max_unaudited_for ${budget.maxUnauditedFor}`,
    },
    startedAt,
  );
  const annotate = annotated(judge, startedAt);
  for await (const node of nodes) tally.add(annotate(node));
  const over = tally.reasons();
  return { ...budget, ...(over.length && { over }) };
}

/** A spooled report judged: `annotate` gives an entry as the history annotates it. */
export type JudgedReport = SpooledReport & { annotate: (node: NodeResult) => NodeResult };

/** The spooled report with its head's `unauditedBudget` judged over the spool's entries. */
export async function judgeSpooled(judge: Judge, spooled: SpooledReport): Promise<JudgedReport> {
  const { head, spool } = spooled;
  const budget = await judgeBudget(judge, head.startedAt, spool.entries());
  if (budget) head.unauditedBudget = budget;
  return { ...spooled, annotate: annotated(judge, head.startedAt) };
}
