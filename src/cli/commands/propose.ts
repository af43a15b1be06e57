import { appendFile } from "node:fs/promises";
import { ForgeError, UsageError } from "../../errors.js";
import { GitHub, settingsFromEnv } from "../../forge/github.js";
import {
  describeAction,
  executePlan,
  planRun,
  stateAfter,
  type Outcome,
} from "../../propose/execute.js";
import { proposalInput } from "../../propose/input.js";
import { LOCK_BRANCH, lockProposals } from "../../propose/lock.js";
import type { Action } from "../../propose/proposal.js";
import {
  readDashboard,
  tickedBranches,
  updateDashboard,
  type Dashboard,
} from "../../propose/dashboard.js";
import { changesState, writeState } from "../../propose/state.js";
import { readReport } from "../../report/read.js";
import { visible } from "../../text/escape.js";
import { codeCell } from "../../text/markdown.js";
import { ExitBit } from "../exit.js";
import { parseFlags, switchFlag, textFlag, wholeFlag } from "../flags.js";
import { BASE_FLAG, MANIFEST_FLAGS, REPORT_FLAG, resolveManifestDir } from "../options.js";

export const DEFAULT_MAX_NEW_PRS = 10;

const PROPOSE_FLAGS = {
  ...MANIFEST_FLAGS,
  report: REPORT_FLAG,
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
};

/** `propose`'s argv as its config: every flag read and checked, nothing read or opened yet. */
function proposeConfig(argv: string[]) {
  const { config } = parseFlags("propose", argv, PROPOSE_FLAGS);
  const { report } = config;
  if (!report)
    throw new UsageError(
      "propose needs --report FILE (an audit report written with --format json)",
    );
  return { ...config, report };
}

export async function proposeCommand(argv: string[]): Promise<number> {
  const config = proposeConfig(argv);
  const budget = config["max-new-prs"];
  const audited = await readReport(config.report);
  const manifestDir = await resolveManifestDir(config);

  let github: GitHub | undefined;
  try {
    github = new GitHub(settingsFromEnv());
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    if (!config["dry-run"]) throw new UsageError(error.message);
    process.stderr.write(
      `quartermaster: ${error.message}; planning as if no pull request exists yet\n`,
    );
  }
  // A dry run may lack the issues permission: it plans without the ticked boxes.
  const dashboard: Dashboard =
    github && !config["dry-run"] ? await readDashboard(github) : { body: "" };
  const { input: loaded, revision, waivers } = await proposalInput(manifestDir, audited);
  // The flag wins over fleet.yaml's `propose.max_new_prs`.
  const input = { ...loaded, maxNewPrs: budget ?? loaded.maxNewPrs ?? DEFAULT_MAX_NEW_PRS };
  const ticked = tickedBranches(dashboard.body);
  const fleet = new Set(input.nodes.map((n) => n.name));
  const planned = await planRun(github, input, ticked);
  const overBudget = audited.unauditedBudget?.over;
  if (overBudget)
    process.stderr.write(
      `quartermaster: more nodes not audited than allowed: ${visible(overBudget.join("; "))}\n`,
    );
  const overBit = overBudget ? ExitBit.overUnauditedBudget : 0;
  const dry = config["dry-run"] || !github;
  // Runs that write (pull requests, or the state kept between runs) take turns, and plan again
  // once their turn comes, from what the one before did and kept.
  const release =
    !dry && (planned.actions.some(writes) || changesState(stateAfter(planned, fleet), planned))
      ? await lockProposals(github!, revision, () =>
          process.stderr.write(
            `quartermaster: another propose run is writing pull requests (branch ${LOCK_BRANCH}); waiting for it\n`,
          ),
        )
      : undefined;
  try {
    const run = release ? await planRun(github, input, ticked) : planned;
    const { actions, report } = run;
    for (const action of actions)
      process.stdout.write(
        `${dry && action.type !== "defer" && action.type !== "wait" ? "would " : ""}${describeAction(action)}\n`,
      );
    const deferred = actions.filter((a) => a.type === "defer").length;
    if (deferred)
      process.stdout.write(
        `${deferred} new pull request${deferred === 1 ? " is" : "s are"} deferred: at most ${input.maxNewPrs} are opened per run\n`,
      );
    if (!actions.length)
      process.stdout.write("nothing to propose: every pull request is up to date\n");
    if (dry) {
      if (config.summary)
        await appendFile(
          config.summary,
          summary(
            actions.map((action) => ({ action, ok: true })),
            dry,
          ),
        );
      return overBit;
    }

    const base = { branch: config.base ?? (await github!.defaultBranch()), sha: revision };
    const outcomes = await executePlan(github!, actions, base);
    try {
      await writeState(github!, stateAfter(run, fleet), run, revision);
    } catch (error) {
      if (!(error instanceof ForgeError)) throw error;
      process.stderr.write(
        `quartermaster: ${visible(error.message)}; deferred pull requests may lose their place in the queue, and this run is missing from the audit history\n`,
      );
    }
    const dashboardFailed = !(await updateDashboard(github!, dashboard, {
      report,
      actions,
      tickets: input.tickets,
      waivers,
    }));
    const failed = outcomes.filter((o) => !o.ok);
    for (const outcome of outcomes) {
      if (outcome.number)
        process.stdout.write(
          visible(
            `opened #${outcome.number} ${outcome.action.type === "open" ? outcome.action.branch : ""}`,
          ) + "\n",
        );
    }
    for (const failure of failed)
      process.stderr.write(
        `quartermaster: ${describeAction(failure.action)}: ${visible(failure.error ?? "")}\n`,
      );
    if (config.summary) await appendFile(config.summary, summary(outcomes, false));
    if (failed.length) {
      process.stderr.write(
        `${failed.length} of ${outcomes.length} actions failed; the next run retries them (the report is unchanged on disk)\n`,
      );
      return ExitBit.unaudited | overBit;
    }
    return (dashboardFailed ? ExitBit.unaudited : 0) | overBit;
  } finally {
    await release?.();
  }
}

/** Whether carrying out `action` writes to GitHub. */
const writes = (action: Action) =>
  action.type !== "defer" &&
  action.type !== "wait" &&
  (action.type !== "leave" || Boolean(action.comment));

const VERB: Record<Action["type"], string> = {
  open: "open",
  update: "update",
  close: "close",
  leave: "leave alone",
  defer: "deferred",
  wait: "wait",
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
