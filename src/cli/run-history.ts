import { InputFileError, UsageError } from "../errors.js";
import { GitHub, type GitHubSettings } from "../forge/github.js";
import { readRuns } from "../propose/state.js";
import { readText } from "../report/read.js";
import { emptyRuns, parseRuns, type RunHistory } from "../report/runs.js";
import { io } from "./io.js";
import { switchFlag, textFlag, type Config } from "./flags.js";
import { githubSettings } from "./options.js";

// Where `report --format html` reads the history of runs from: a file, or the state branch.

export const RUN_HISTORY_FLAGS = {
  history: {
    ...textFlag(
      "FILE",
      "the run history kept on the state branch (run-history.json), for --format html",
    ),
    excludes: {
      "history-from-repo":
        "--history FILE and --history-from-repo are two sources of one history: give one",
    },
  },
  "history-from-repo": switchFlag(
    "read the run history from the state branch of $GITHUB_REPOSITORY (needs GITHUB_TOKEN), for --format html",
  ),
};

type RunHistoryConfig = Config<typeof RUN_HISTORY_FLAGS>;

/** Where the run history is: a file, the state branch through these settings, or nowhere. */
export type RunHistorySource = { file: string } | { github: GitHubSettings } | undefined;

/** The flags as their source, settled before anything is read: a missing token is said first. */
export function runHistorySource(config: RunHistoryConfig & { format: string }): RunHistorySource {
  if ((config.history !== undefined || config["history-from-repo"]) && config.format !== "html")
    throw new UsageError("--history and --history-from-repo apply to --format html only");
  if (config.history !== undefined) return { file: config.history };
  if (config["history-from-repo"]) return { github: githubSettings("--history-from-repo") };
  return undefined;
}

/** The run history the source names; empty when there is none. */
export async function runHistoryFrom(source: RunHistorySource): Promise<RunHistory> {
  if (source === undefined) return emptyRuns();
  if ("file" in source) {
    const runs = parseRuns(await readText(source.file, "run history"));
    if (typeof runs === "string") throw new InputFileError(source.file, runs);
    return runs;
  }
  const { runs, warning } = await readRuns(new GitHub(source.github));
  if (warning !== undefined) io().stderr.write(`quartermaster: ${warning}\n`);
  return runs;
}

/** The repository's web address in GitHub Actions (pull requests link there), else none. */
export function repositoryUrl(env: NodeJS.ProcessEnv = io().env): string | undefined {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repository } = env;
  return server && repository && /^[\w.-]+\/[\w.-]+$/.test(repository)
    ? `${server.replace(/\/+$/, "")}/${repository}`
    : undefined;
}
