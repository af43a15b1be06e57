import { io } from "../io.js";
import { appendFile } from "node:fs/promises";
import { ForgeError, UsageError } from "../../errors.js";
import { GitHub, settingsFromEnv } from "../../forge/github.js";
import { isHeartbeatUrl, pingHeartbeat } from "../../forge/heartbeat.js";
import { describeAction, type Outcome } from "../../propose/execute.js";
import type { Action } from "../../propose/proposal.js";
import { STATE_BRANCH } from "../../propose/state.js";
import { runPropose, type ProposeOutcome, type ProposeReporter } from "../../runs/propose.js";
import { visible } from "../../text/escape.js";
import { codeCell } from "../../text/markdown.js";
import { ExitBit } from "../exit.js";
import { checkedFlag, parseFlags, switchFlag, textFlag, wholeFlag, type Config } from "../flags.js";
import { BASE_FLAG, MANIFEST_FLAGS, manifestSource, REPORT_FLAG } from "../options.js";

const PROPOSE_FLAGS = {
  ...MANIFEST_FLAGS,
  report: {
    ...REPORT_FLAG,
    required: {
      message:
        "propose needs --report FILE (an audit report written with --format json) or --report-from-repo",
      unless: ["report-from-repo"],
    },
    excludes: {
      "report-from-repo":
        "--report FILE and --report-from-repo are two sources of one report: give one",
    },
  },
  "report-from-repo": switchFlag(
    `plan from the report the last run kept on branch ${STATE_BRANCH} (a refresh after a merge: no audit)`,
  ),
  base: BASE_FLAG,
  "dry-run": switchFlag("print the plan; change nothing"),
  "max-new-prs": wholeFlag(
    "N",
    "open at most N new pull requests this run (default: fleet.yaml propose.max_new_prs, else 10)",
    undefined,
    { min: 0, hint: "(0 or more)" },
  ),
  summary: textFlag(
    "FILE",
    "append a Markdown account of the run (opened, updated, closed, deferred) to FILE, e.g. $GITHUB_STEP_SUMMARY",
  ),
  "heartbeat-url": checkedFlag(
    "URL",
    "ping URL when the run ends (URL/fail when it fails), for a monitor that alarms when runs stop; not on --dry-run",
    (given) => {
      if (!isHeartbeatUrl(given))
        throw new UsageError("--heartbeat-url takes an http:// or https:// address");
      return given;
    },
  ),
};

type ProposeConfig = Config<typeof PROPOSE_FLAGS>;

export async function proposeCommand(argv: string[]): Promise<number> {
  const { config } = parseFlags("propose", argv, PROPOSE_FLAGS);
  const heartbeat = config["heartbeat-url"];
  if (heartbeat === undefined || config["dry-run"]) return proposeRun(config);
  // Unset until the run returns: a run that throws pings /fail too.
  let code: number | undefined;
  try {
    return (code = await proposeRun(config));
  } finally {
    const warning = await pingHeartbeat(heartbeat, code !== 0);
    if (warning) warn(warning);
  }
}

const warn = (message: string) => io().stderr.write(`quartermaster: ${message}\n`);

const reporter: ProposeReporter = { warn, planned: printPlan };

/** Runs propose as the flags and the environment say, prints what came of it; the exit code. */
async function proposeRun(config: ProposeConfig): Promise<number> {
  const dryRun = config["dry-run"];
  const outcome = await runPropose(
    {
      source: manifestSource(config),
      reportFile: config.report,
      forge: connectGitHub(dryRun),
      dryRun,
      maxNewPrs: config["max-new-prs"],
      base: config.base,
      runUrl: runUrl(io().env),
    },
    reporter,
  );
  const overBit = outcome.overBudget ? ExitBit.overUnauditedBudget : 0;
  const failed = outcome.dry ? 0 : printOutcomes(outcome.outcomes);
  if (config.summary) await appendFile(config.summary, summary(outcome));
  if (failed) {
    io().stderr.write(
      `${failed} of ${outcome.outcomes.length} actions failed; the next run retries them (the report is unchanged on disk)\n`,
    );
    return ExitBit.unaudited | overBit;
  }
  return (outcome.dashboardFailed ? ExitBit.unaudited : 0) | overBit;
}

/** The forge from the environment; without its settings, only a dry run goes on (with none). */
function connectGitHub(dryRun: boolean): GitHub | undefined {
  try {
    return new GitHub(settingsFromEnv(io().env));
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    if (!dryRun) throw new UsageError(error.message);
    warn(`${error.message}; planning as if no pull request exists yet`);
    return undefined;
  }
}

/** The workflow run's page, when run in GitHub Actions. */
function runUrl(env: NodeJS.ProcessEnv): string | undefined {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repository, GITHUB_RUN_ID: id } = env;
  return server && repository && id && /^\d+$/.test(id)
    ? `${server.replace(/\/+$/, "")}/${repository}/actions/runs/${id}`
    : undefined;
}

/** The plan on stdout, one action a line, prefixed "would " where a dry run only plans it. */
function printPlan(actions: readonly Action[], dry: boolean, maxNewPrs: number): void {
  for (const action of actions)
    io().stdout.write(
      `${dry && action.type !== "defer" ? "would " : ""}${describeAction(action)}\n`,
    );
  const deferred = actions.filter((a) => a.type === "defer").length;
  if (deferred)
    io().stdout.write(
      `${deferred} new pull request${deferred === 1 ? " is" : "s are"} deferred: at most ${maxNewPrs} are opened per run\n`,
    );
  if (!actions.length) io().stdout.write("nothing to propose: every pull request is up to date\n");
}

/** The pull requests opened on stdout, the failed actions on stderr; how many failed. */
function printOutcomes(outcomes: readonly Outcome[]): number {
  const failed = outcomes.filter((o) => !o.ok);
  for (const outcome of outcomes) {
    if (outcome.number)
      io().stdout.write(
        visible(
          `opened #${outcome.number} ${outcome.action.type === "open" ? outcome.action.branch : ""}`,
        ) + "\n",
      );
  }
  for (const failure of failed)
    io().stderr.write(
      `quartermaster: ${describeAction(failure.action)}: ${visible(failure.error ?? "")}\n`,
    );
  return failed.length;
}

const VERB: Record<Action["type"], string> = {
  open: "open",
  update: "update",
  close: "close",
  leave: "leave alone",
  defer: "deferred",
};

/** The run's pull requests as Markdown for a job summary: every title and branch as code. */
function summary({ outcomes, dry }: ProposeOutcome): string {
  const out = [`## Quartermaster pull requests${dry ? " (dry run: nothing written)" : ""}`, ""];
  if (!outcomes.length) return `${out.join("\n")}Every pull request is up to date.\n\n`;
  const deferred = outcomes.filter((o) => o.action.type === "defer");
  if (deferred.length) {
    const budget = (deferred[0]!.action as Extract<Action, { type: "defer" }>).budget;
    out.push(
      `**${deferred.length} deferred**: at most ${budget} new pull requests are opened per run; the rest are opened on later runs, those waiting longest first.`,
      "",
    );
  }
  out.push("| action | pull request | branch | title |", "|---|---|---|---|");
  for (const { action, ok, number } of outcomes) {
    const pr = number ?? ("number" in action ? action.number : undefined);
    const title = "title" in action ? codeCell(action.title) : "";
    const branch = "branch" in action ? codeCell(action.branch) : "";
    out.push(
      `| ${VERB[action.type]}${ok ? "" : " (failed)"} | ${pr === undefined ? "" : `#${pr}`} | ${branch} | ${title} |`,
    );
  }
  return `${out.join("\n")}\n\n`;
}
