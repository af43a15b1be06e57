// A propose run: the report and the manifests read, the forge gathered once, the plan made from
// them, then (unless a dry run) carried out under the lock, the state kept, the dashboard updated.
import { ForgeError, UsageError } from "../errors.js";
import type { Forge } from "../forge/forge.js";
import type { Waiver } from "../manifest/schema.js";
import {
  updateDashboard,
  readDashboard,
  tickedBranches,
  type Dashboard,
} from "../propose/dashboard.js";
import { executePlan, stateAfter, type Outcome } from "../propose/execute.js";
import { gatherForge, noForgeFacts } from "../propose/gather.js";
import { proposalInput } from "../propose/input.js";
import { LOCK_BRANCH, lockProposals } from "../propose/lock.js";
import type { PlanInput } from "../propose/plan-input.js";
import type { Action } from "../propose/proposal.js";
import { askAgain, describePending, pendingReviews, refusedOnOpen } from "../propose/reviews.js";
import { planRun, type RunPlan } from "../propose/run-plan.js";
import { REPORT_INDEX, reportFileToKeep, type KeptReport } from "../propose/kept-report.js";
import {
  changesState,
  HISTORY_FILE,
  readLastReport,
  STATE_BRANCH,
  writeState,
  type StateFiles,
} from "../propose/state.js";
import { annotateNode, type AuditHistory } from "../report/history.js";
import { readReportNodes, type OnNode } from "../report/read.js";
import type { NodeResult, Report } from "../report/schema.js";
import { sharingItems } from "../report/shared-items.js";
import { visible } from "../text/escape.js";
import { resolveManifestDir, type ManifestSource } from "./fleet.js";

export const DEFAULT_MAX_NEW_PRS = 10;

/** What a propose run needs to know: settled before it reads anything. */
export interface ProposeOptions {
  source: ManifestSource;
  /** The report file to plan from; undefined: the one the last run kept on the state branch. */
  reportFile: string | undefined;
  /** The forge; undefined only on a dry run without its settings (planned as if it were empty). */
  forge: Forge | undefined;
  dryRun: boolean;
  /** The flag; absent, fleet.yaml's `propose.max_new_prs`, else DEFAULT_MAX_NEW_PRS. */
  maxNewPrs: number | undefined;
  /** The branch pull requests go to; absent, the repository's default branch. */
  base: string | undefined;
  /** The workflow run's page, linked from the dashboard. */
  runUrl: string | undefined;
}

/** What the run says as it goes: warnings, and the plan once it is final (before it is carried out). */
export interface ProposeReporter {
  /** One warning, escaped already. */
  warn(message: string): void;
  planned(actions: readonly Action[], dry: boolean, maxNewPrs: number): void;
}

/** What a propose run came to. */
export interface ProposeOutcome {
  actions: Action[];
  /** Nothing was written: a dry run, or one without a forge. */
  dry: boolean;
  /** What carrying each action out came to; on a dry run, every action as planned. */
  outcomes: Outcome[];
  /** The nodes not audited past the report's budget, when over it. */
  overBudget?: readonly string[];
  /** The dashboard could not be written. */
  dashboardFailed: boolean;
}

/** The report to plan from, read node by node; what to keep of it (read only by a run that keeps it). */
export type ReportSource = (
  onNode: OnNode,
) => Promise<{ head: Report; kept: () => Promise<KeptReport> }>;

/**
 * Where the report to plan from is read: the file, or the one the last run kept (once read, the
 * same one is read again); a report the forge keeps with no forge to read it from is refused before
 * anything is read.
 */
export function reportSource(file: string | undefined, forge: Forge | undefined): ReportSource {
  if (file !== undefined)
    return async (onNode) => ({
      head: await readReportNodes(file, onNode),
      kept: () => reportFileToKeep(file),
    });
  if (!forge)
    throw new UsageError("--report-from-repo reads the report from GitHub: set GITHUB_TOKEN");
  let again: KeptReport | undefined;
  return async (onNode) => {
    const read = await readLastReport(forge, onNode, again);
    if (read === undefined)
      throw new UsageError(
        `--report-from-repo: no report kept yet (${STATE_BRANCH}:${REPORT_INDEX}); a propose run with --report keeps one`,
      );
    again = read.kept;
    return { head: read.report, kept: () => Promise.resolve(read.kept) };
  };
}

/**
 * The report read, each node dated from `history` as it is read (since when it is dark and its
 * drift exists) and its drift items' common fields shared: a fleet's report is never held twice.
 */
export async function readDated(
  source: ReportSource,
  history: AuditHistory,
): Promise<{ report: Report; kept: () => Promise<KeptReport> }> {
  const nodes: NodeResult[] = [];
  const shared = sharingItems();
  // Nodes before the report's `startedAt` (a report edited by hand): dated once it is known.
  const early: number[] = [];
  const { head, kept } = await source((node, startedAt) => {
    if (startedAt === undefined) early.push(nodes.length);
    nodes.push(startedAt === undefined ? node : shared(annotateNode(node, history, startedAt)));
  });
  for (const i of early) nodes[i] = shared(annotateNode(nodes[i]!, history, head.startedAt));
  return { report: { ...head, nodes }, kept };
}

/** Plans from the report and the forge, and carries the plan out unless `dryRun`. */
export async function runPropose(
  options: ProposeOptions,
  reporter: ProposeReporter,
): Promise<ProposeOutcome> {
  const { forge } = options;
  const source = reportSource(options.reportFile, forge);
  const manifestDir = await resolveManifestDir(options.source);
  // A dry run may lack the issues permission: it plans without the ticked boxes.
  const dashboard: Dashboard = forge && !options.dryRun ? await readDashboard(forge) : { body: "" };
  for (const warning of dashboard.warnings ?? []) reporter.warn(warning);
  const { input: loaded, revision, waivers } = await proposalInput(manifestDir);
  // The flag wins over fleet.yaml's `propose.max_new_prs`.
  const maxNewPrs = options.maxNewPrs ?? loaded.maxNewPrs ?? DEFAULT_MAX_NEW_PRS;
  const ticked = tickedBranches(dashboard.body);
  const fleet = new Set(loaded.nodes.map((n) => n.name));
  // Read from the forge, the report dated from its history, then planned once from what was read;
  // what a second read warns of again is not said twice.
  const warned = new Set<string>();
  const gathered = async () => {
    const facts = forge ? await gatherForge(forge) : noForgeFacts();
    for (const warning of facts.warnings.filter((w) => !warned.has(w))) {
      warned.add(warning);
      reporter.warn(warning);
    }
    const { report, kept } = await readDated(source, facts.history);
    return { run: planRun(facts, { ...loaded, maxNewPrs, report }, ticked), kept };
  };
  let planned: Awaited<ReturnType<typeof gathered>> | undefined = await gathered();
  const { history, report } = planned.run;
  for (const why of history.dropped)
    reporter.warn(`${STATE_BRANCH}:${HISTORY_FILE}: ${visible(why)}; that entry is left out`);
  // A refresh audits nothing: the scheduled run that kept the report said so, and failed for it.
  const overBudget = options.reportFile === undefined ? undefined : report.unauditedBudget?.over;
  if (overBudget)
    reporter.warn(`more nodes not audited than allowed: ${visible(overBudget.join("; "))}`);
  const told = { ...(overBudget && { overBudget }) };
  if (options.dryRun || !forge) {
    const { actions } = planned.run;
    reporter.planned(actions, true, maxNewPrs);
    const outcomes = actions.map((action) => ({ action, ok: true }));
    return { actions, dry: true, outcomes, dashboardFailed: false, ...told };
  }
  const release = await waitForTurn(forge, planned.run, fleet, revision, reporter);
  try {
    // Once the turn comes, the forge is read again (the run before may have opened, closed or
    // kept), and the report with it: the first plan is let go of first, never held beside it.
    if (release) planned = undefined;
    const { run, kept } = planned ?? (await gathered());
    reporter.planned(run.actions, false, maxNewPrs);
    const { tickets } = loaded;
    const turn = { forge, run, fleet, revision, dashboard, tickets, waivers, lastReport: kept };
    return { ...(await carryOut(turn, options, reporter)), ...told };
  } finally {
    await release?.();
  }
}

/**
 * Runs that write (pull requests, or the state kept between runs) take turns, and plan again once
 * their turn comes, from what the one before did and kept. The lock's release, when one was taken.
 */
async function waitForTurn(
  forge: Forge,
  planned: RunPlan,
  fleet: ReadonlySet<string>,
  revision: string,
  reporter: ProposeReporter,
): Promise<(() => Promise<void>) | undefined> {
  return planned.actions.some(writes) || changesState(stateAfter(planned, fleet), planned)
    ? await lockProposals(forge, revision, () =>
        reporter.warn(
          `another propose run is writing pull requests (branch ${LOCK_BRANCH}); waiting for it`,
        ),
      )
    : undefined;
}

/** A run that holds its turn: what it planned, and what it read the plan from. */
interface Turn {
  forge: Forge;
  run: RunPlan;
  fleet: ReadonlySet<string>;
  revision: string;
  dashboard: Dashboard;
  tickets: PlanInput["tickets"];
  waivers: Waiver[];
  lastReport: () => Promise<KeptReport>;
}

/** Carries the plan out, keeps the state for the next run and updates the dashboard. */
async function carryOut(
  { forge, run, fleet, revision, dashboard, tickets, waivers, lastReport }: Turn,
  options: Pick<ProposeOptions, "base" | "runUrl">,
  reporter: ProposeReporter,
): Promise<Omit<ProposeOutcome, "overBudget">> {
  const { actions, report } = run;
  const base = { branch: options.base ?? (await forge.defaultBranch()), sha: revision };
  const outcomes = await executePlan(forge, actions, base);
  const unasked = [
    ...refusedOnOpen(outcomes),
    ...(await askAgain(forge, pendingReviews(dashboard.body))),
  ];
  for (const pending of unasked) reporter.warn(describePending(pending));
  const state = { ...stateAfter(run, fleet, outcomes), lastReport: await lastReport() };
  await keepState(forge, state, run, revision, reporter);
  const dashboardWarning = await updateDashboard(
    forge,
    dashboard,
    { report, actions, tickets, waivers, unasked, runs: state.runs.runs },
    options.runUrl,
  );
  if (dashboardWarning !== undefined) reporter.warn(dashboardWarning);
  return { actions, dry: false, outcomes, dashboardFailed: dashboardWarning !== undefined };
}

/** Writes the state the next run starts from; GitHub refusing it costs only what it would keep. */
async function keepState(
  forge: Forge,
  state: StateFiles,
  run: RunPlan,
  revision: string,
  reporter: ProposeReporter,
): Promise<void> {
  try {
    await writeState(forge, state, run, revision);
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    reporter.warn(
      `${visible(error.message)}; deferred pull requests may lose their place in the queue, and this run is missing from the audit history`,
    );
  }
}

/** Whether carrying out `action` writes to the forge. */
const writes = (action: Action) =>
  action.type !== "defer" && (action.type !== "leave" || Boolean(action.comment));
