import { io } from "./io.js";
import { durationMs, overUnauditedBudget, unauditedLimit } from "../report/unaudited.js";
import { ForgeError, InputFileError, UsageError } from "../errors.js";
import { GitHub, settingsFromEnv, type GitHubSettings } from "../forge/github.js";
import type { AuditSettings } from "../manifest/schema.js";
import { HISTORY_FILE, readHistory, STATE_BRANCH } from "../propose/state.js";
import {
  annotateNode,
  parseHistory,
  type AuditHistory,
  type ReadHistory,
} from "../report/history.js";
import { readText } from "../report/read.js";
import type { NodeResult, Report } from "../report/schema.js";
import { visible } from "../text/escape.js";
import { switchFlag, checkedFlag, textFlag, type Config } from "./flags.js";

// What `audit` and `merge-reports` need to judge the unaudited budget: the limits (flag, fleet.yaml
// or what the shard reports recorded) and the history of earlier runs (a file, or the state branch).

export const UNAUDITED_FLAGS = {
  "max-unaudited": checkedFlag(
    "N|N%",
    "exit with bit 8 when more than N nodes (or N% of them) were not audited (default: fleet.yaml audit.max_unaudited, else no limit)",
    (given) => {
      if (!unauditedLimit(given))
        throw new UsageError(
          `--max-unaudited takes a number of nodes or a share such as 10%, not "${visible(given)}"`,
        );
      return given;
    },
  ),
  state: {
    ...textFlag(
      "FILE",
      "the audit history kept on the state branch (audit-history.json): since when nodes are unaudited and drift exists, and bit 8 for audit.max_unaudited_for",
    ),
    excludes: {
      "state-from-repo":
        "--state FILE and --state-from-repo are two sources of one history: give one",
    },
  },
  "state-from-repo": switchFlag(
    "read the audit history from the state branch of $GITHUB_REPOSITORY (needs GITHUB_TOKEN)",
  ),
};

type UnauditedConfig = Config<typeof UNAUDITED_FLAGS>;

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

/** The flags as their source, settled before anything is read: a missing token is said first. */
export function unauditedSource(values: UnauditedConfig): UnauditedSource {
  const maxUnaudited = values["max-unaudited"];
  if (values.state !== undefined) return { maxUnaudited, history: { file: values.state } };
  if (!values["state-from-repo"]) return { maxUnaudited };
  try {
    return { maxUnaudited, history: { github: settingsFromEnv(io().env) } };
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    throw new UsageError(`--state-from-repo: ${error.message}`);
  }
}

async function historyFrom(source: UnauditedSource["history"]): Promise<AuditHistory | undefined> {
  if (source === undefined) return undefined;
  if ("github" in source)
    return warnDropped(
      `${STATE_BRANCH}:${HISTORY_FILE}`,
      await readHistory(new GitHub(source.github)),
    );
  const history = parseHistory(await readText(source.file, "audit history"));
  if (typeof history === "string") throw new InputFileError(source.file, history);
  return warnDropped(source.file, history);
}

/** Says which entries of the history `file` were left out: each costs only itself. */
export function warnDropped(file: string, history: ReadHistory): ReadHistory {
  for (const why of history.dropped)
    io().stderr.write(`quartermaster: ${file}: ${visible(why)}; that entry is left out\n`);
  return history;
}

/**
 * The limits and history this run is judged by: `--max-unaudited` over fleet.yaml's, over what
 * the shard reports were judged by.
 */
export async function unauditedJudge(
  source: UnauditedSource,
  fleet: AuditSettings | undefined,
  recorded?: Report["unauditedBudget"],
): Promise<Judge> {
  const flag = source.maxUnaudited;
  const history = await historyFrom(source.history);
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
export function annotated(judge: Judge, startedAt: string): (node: NodeResult) => NodeResult {
  const { history } = judge;
  return history ? (node) => annotateNode(node, history, startedAt) : (node) => node;
}

/** The report head's `unauditedBudget`, judged over every (annotated) node entry. */
export async function judgeBudget(
  judge: Judge,
  startedAt: string,
  nodes: AsyncIterable<NodeResult> | Iterable<NodeResult>,
): Promise<Report["unauditedBudget"]> {
  const { budget } = judge;
  if (!budget) return undefined;
  const annotate = annotated(judge, startedAt);
  const light: Pick<NodeResult, "name" | "status" | "unaudited">[] = [];
  for await (const node of nodes) {
    const { name, status, unaudited } = annotate(node);
    light.push({ name, status, ...(unaudited && { unaudited }) });
  }
  const limit = budget.maxUnaudited === undefined ? undefined : unauditedLimit(budget.maxUnaudited);
  const over = overUnauditedBudget(
    light,
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
  return { ...budget, ...(over.length && { over }) };
}
