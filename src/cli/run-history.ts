import { ForgeError, InputFileError, UsageError } from "../errors.js";
import { GitHub, settingsFromEnv } from "../forge/github.js";
import { readRuns } from "../propose/state.js";
import { readText } from "../report/read.js";
import { emptyRuns, parseRuns, type RunHistory } from "../report/runs.js";
import { io } from "./io.js";
import { switchFlag, textFlag, type Config } from "./flags.js";

// Where `report --format html` reads the history of runs from: a file, or the state branch.

export const RUN_HISTORY_FLAGS = {
  history: textFlag(
    "FILE",
    "the run history kept on the state branch (run-history.json), for --format html",
  ),
  "history-from-repo": switchFlag(
    "read the run history from the state branch of $GITHUB_REPOSITORY (needs GITHUB_TOKEN), for --format html",
  ),
};

type RunHistoryConfig = Config<typeof RUN_HISTORY_FLAGS>;

/** The flags' own conflicts, said before anything is read. */
export function checkRunHistoryFlags(config: RunHistoryConfig & { format: string }): void {
  if (config.history !== undefined && config["history-from-repo"])
    throw new UsageError(
      "--history FILE and --history-from-repo are two sources of one history: give one",
    );
  if ((config.history !== undefined || config["history-from-repo"]) && config.format !== "html")
    throw new UsageError("--history and --history-from-repo apply to --format html only");
}

/** The run history the flags name; empty when they name none. */
export async function runHistoryFrom(config: RunHistoryConfig): Promise<RunHistory> {
  if (config.history !== undefined) {
    const runs = parseRuns(await readText(config.history, "run history"));
    if (typeof runs === "string") throw new InputFileError(config.history, runs);
    return runs;
  }
  if (!config["history-from-repo"]) return emptyRuns();
  let github: GitHub;
  try {
    github = new GitHub(settingsFromEnv(io().env));
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    throw new UsageError(`--history-from-repo: ${error.message}`);
  }
  const { runs, warning } = await readRuns(github);
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
