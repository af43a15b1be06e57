import { io } from "../io.js";
import { appendFile } from "node:fs/promises";
import { ForgeError, UsageError } from "../../errors.js";
import { GitHub, settingsFromEnv } from "../../forge/github.js";
import { isHeartbeatUrl, pingHeartbeat } from "../../forge/heartbeat.js";
import type { Waiver } from "../../manifest/schema.js";
import { describeAction, executePlan, stateAfter, type Outcome } from "../../propose/execute.js";
import { gatherForge, noForgeFacts } from "../../propose/gather.js";
import { planRun, type RunPlan } from "../../propose/run-plan.js";
import { proposalInput } from "../../propose/input.js";
import { LOCK_BRANCH, lockProposals } from "../../propose/lock.js";
import type { PlanInput } from "../../propose/plan-input.js";
import type { Action } from "../../propose/proposal.js";
import {
  readDashboard,
  tickedBranches,
  updateDashboard,
  type Dashboard,
} from "../../propose/dashboard.js";
import { askAgain, describePending, pendingReviews, refusedOnOpen } from "../../propose/reviews.js";
import {
  changesState,
  writeState,
  type StateFiles,
  HISTORY_FILE,
  readLastReport,
  REPORT_FILE,
  STATE_BRANCH,
} from "../../propose/state.js";
import { parseReport, readReport, readText } from "../../report/read.js";
import type { Report } from "../../report/schema.js";
import { visible } from "../../text/escape.js";
import { codeCell } from "../../text/markdown.js";
import { ExitBit } from "../exit.js";
import { boundHeapGrowth } from "../../runs/audit.js";
import { warnDropped } from "../unaudited.js";
import { checkedFlag, parseFlags, switchFlag, textFlag, wholeFlag } from "../flags.js";
import { BASE_FLAG, MANIFEST_FLAGS, REPORT_FLAG, resolveManifestDir } from "../options.js";

export const DEFAULT_MAX_NEW_PRS = 10;

const PROPOSE_FLAGS = {
  ...MANIFEST_FLAGS,
  report: REPORT_FLAG,
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

/** `propose`'s argv as its config: every flag read and checked, nothing read or opened yet. */
function proposeConfig(argv: string[]) {
  const { config } = parseFlags("propose", argv, PROPOSE_FLAGS);
  if (config.report !== undefined && config["report-from-repo"])
    throw new UsageError(
      "--report FILE and --report-from-repo are two sources of one report: give one",
    );
  if (config.report === undefined && !config["report-from-repo"])
    throw new UsageError(
      "propose needs --report FILE (an audit report written with --format json) or --report-from-repo",
    );
  return config;
}

export async function proposeCommand(argv: string[]): Promise<number> {
  const config = proposeConfig(argv);
  // Planning a large fleet makes much short-lived garbage: keep the heap near what is live.
  boundHeapGrowth();
  const heartbeat = config["heartbeat-url"];
  if (heartbeat === undefined || config["dry-run"]) return proposeRun(config);
  // Unset until the run returns: a run that throws pings /fail too.
  let code: number | undefined;
  try {
    return (code = await proposeRun(config));
  } finally {
    const warning = await pingHeartbeat(heartbeat, code !== 0);
    if (warning) io().stderr.write(`quartermaster: ${warning}\n`);
  }
}

async function proposeRun(config: ReturnType<typeof proposeConfig>): Promise<number> {
  const budget = config["max-new-prs"];
  const manifestDir = await resolveManifestDir(config);
  const github = connectGitHub(config["dry-run"]);
  const { audited, text } = await reportOf(config.report, github);
  // A dry run may lack the issues permission: it plans without the ticked boxes.
  const dashboard: Dashboard =
    github && !config["dry-run"] ? await readDashboard(github) : { body: "" };
  for (const warning of dashboard.warnings ?? []) io().stderr.write(`quartermaster: ${warning}\n`);
  const { input: loaded, revision, waivers } = await proposalInput(manifestDir, audited);
  // The flag wins over fleet.yaml's `propose.max_new_prs`.
  const input = { ...loaded, maxNewPrs: budget ?? loaded.maxNewPrs ?? DEFAULT_MAX_NEW_PRS };
  const ticked = tickedBranches(dashboard.body);
  const fleet = new Set(input.nodes.map((n) => n.name));
  // Read from the forge, then planned once from what was read; what a second read warns of again
  // is not said twice.
  const warned = new Set<string>();
  const gathered = async () => {
    const facts = github ? await gatherForge(github) : noForgeFacts();
    for (const warning of facts.warnings.filter((w) => !warned.has(w))) {
      warned.add(warning);
      io().stderr.write(`quartermaster: ${warning}\n`);
    }
    return planRun(facts, input, ticked);
  };
  const planned = await gathered();
  warnDropped(`${STATE_BRANCH}:${HISTORY_FILE}`, planned.history);
  const overBit = warnOverBudget(audited.unauditedBudget?.over);
  const dry = config["dry-run"] || !github;
  const release = dry ? undefined : await waitForTurn(github, planned, fleet, revision);
  try {
    // Once the turn comes, the forge is read again: the run before may have opened, closed or kept.
    const run = release ? await gathered() : planned;
    printPlan(run.actions, dry, input.maxNewPrs);
    if (dry) {
      if (config.summary)
        await appendFile(
          config.summary,
          summary(
            run.actions.map((action) => ({ action, ok: true })),
            dry,
          ),
        );
      return overBit;
    }
    const { tickets } = input;
    const turn = { github, run, fleet, revision, dashboard, tickets, waivers, lastReport: text };
    return (await carryOut(turn, config)) | overBit;
  } finally {
    await release?.();
  }
}

/**
 * The report to plan from: the file (read a node at a time), or the one the last run kept on the
 * state branch; and its text, kept there again (each state commit is on the manifests' revision
 * and holds every state file), read only by a run that keeps it.
 */
async function reportOf(
  file: string | undefined,
  github: GitHub | undefined,
): Promise<{ audited: Report; text: () => Promise<string> }> {
  if (file !== undefined) return { audited: await readReport(file), text: () => readText(file) };
  const where = `${STATE_BRANCH}:${REPORT_FILE}`;
  if (!github)
    throw new UsageError("--report-from-repo reads the report from GitHub: set GITHUB_TOKEN");
  const kept = await readLastReport(github);
  if (kept === undefined)
    throw new UsageError(
      `--report-from-repo: no report kept yet (${where}); a propose run with --report keeps one`,
    );
  return { audited: parseReport(kept, where), text: () => Promise.resolve(kept) };
}

/** The forge from the environment; without its settings, only a dry run goes on (with none). */
function connectGitHub(dryRun: boolean): GitHub | undefined {
  try {
    return new GitHub(settingsFromEnv(io().env));
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    if (!dryRun) throw new UsageError(error.message);
    io().stderr.write(
      `quartermaster: ${error.message}; planning as if no pull request exists yet\n`,
    );
    return undefined;
  }
}

/** Says which nodes went unaudited past the report's budget; the exit bit for it. */
function warnOverBudget(overBudget: readonly string[] | undefined): number {
  if (overBudget)
    io().stderr.write(
      `quartermaster: more nodes not audited than allowed: ${visible(overBudget.join("; "))}\n`,
    );
  return overBudget ? ExitBit.overUnauditedBudget : 0;
}

/**
 * Runs that write (pull requests, or the state kept between runs) take turns, and plan again once
 * their turn comes, from what the one before did and kept. The lock's release, when one was taken.
 */
async function waitForTurn(
  github: GitHub,
  planned: RunPlan,
  fleet: ReadonlySet<string>,
  revision: string,
): Promise<(() => Promise<void>) | undefined> {
  return planned.actions.some(writes) || changesState(stateAfter(planned, fleet), planned)
    ? await lockProposals(github, revision, () =>
        io().stderr.write(
          `quartermaster: another propose run is writing pull requests (branch ${LOCK_BRANCH}); waiting for it\n`,
        ),
      )
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

/** A run that holds its turn: what it planned, and what it read the plan from. */
interface Turn {
  github: GitHub;
  run: RunPlan;
  fleet: ReadonlySet<string>;
  revision: string;
  dashboard: Dashboard;
  tickets: PlanInput["tickets"];
  waivers: Waiver[];
  lastReport: () => Promise<string>;
}

/**
 * Carries the plan out, keeps the state for the next run and updates the dashboard, then says
 * what was opened and what failed; the exit bit when anything failed.
 */
async function carryOut(
  { github, run, fleet, revision, dashboard, tickets, waivers, lastReport }: Turn,
  config: { base?: string | undefined; summary?: string | undefined },
): Promise<number> {
  const { actions, report } = run;
  const base = { branch: config.base ?? (await github.defaultBranch()), sha: revision };
  const outcomes = await executePlan(github, actions, base);
  const unasked = [
    ...refusedOnOpen(outcomes),
    ...(await askAgain(github, pendingReviews(dashboard.body))),
  ];
  for (const pending of unasked) io().stderr.write(describePending(pending));
  const state = { ...stateAfter(run, fleet, outcomes), lastReport: await lastReport() };
  await keepState(github, state, run, revision);
  const dashboardWarning = await updateDashboard(
    github,
    dashboard,
    { report, actions, tickets, waivers, unasked, runs: state.runs.runs },
    io().env,
  );
  if (dashboardWarning !== undefined) io().stderr.write(`quartermaster: ${dashboardWarning}\n`);
  const failed = printOutcomes(outcomes);
  if (config.summary) await appendFile(config.summary, summary(outcomes, false));
  if (failed) {
    io().stderr.write(
      `${failed} of ${outcomes.length} actions failed; the next run retries them (the report is unchanged on disk)\n`,
    );
    return ExitBit.unaudited;
  }
  return dashboardWarning !== undefined ? ExitBit.unaudited : 0;
}

/** Writes the state the next run starts from; GitHub refusing it costs only what it would keep. */
async function keepState(
  github: GitHub,
  state: StateFiles,
  run: RunPlan,
  revision: string,
): Promise<void> {
  try {
    await writeState(github, state, run, revision);
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    io().stderr.write(
      `quartermaster: ${visible(error.message)}; deferred pull requests may lose their place in the queue, and this run is missing from the audit history\n`,
    );
  }
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

/** Whether carrying out `action` writes to GitHub. */
const writes = (action: Action) =>
  action.type !== "defer" && (action.type !== "leave" || Boolean(action.comment));

const VERB: Record<Action["type"], string> = {
  open: "open",
  update: "update",
  close: "close",
  leave: "leave alone",
  defer: "deferred",
};

/** The run's pull requests as Markdown for a job summary: every title and branch as code. */
function summary(outcomes: readonly Outcome[], dry: boolean): string {
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
