import { audited } from "../report/unaudited.js";
import { ForgeError } from "../errors.js";
import type { Forge } from "../forge/forge.js";
import { expiryTime, type Waiver } from "../manifest/schema.js";
import type { Ticket } from "../manifest/tickets.js";
import type { LatentEvent } from "../domains/cause.js";
import { latentSentence } from "../domains/registry.js";
import { NODE_STATUSES, type NodeStatus, type Report } from "../report/schema.js";
import { plural, unauditedText } from "../report/formats/common.js";
import { ticketCovers } from "../drift/drift.js";
import { codeCell, codeSpan, nodeSpans, textCell } from "../text/markdown.js";
import { itemSignature } from "./group.js";
import { ticketsPastDue } from "./ticket.js";
import { visible } from "../text/escape.js";
import { MAX_BODY_CHARS } from "./body.js";
import { statusMermaid } from "./dashboard-chart.js";
import type { Action } from "./proposal.js";
import { botPulls } from "./pulls.js";
import { pendingRow, type PendingReview } from "./reviews.js";

// The dashboard: one issue per repository that `propose` keeps up to date, the fleet's state
// between runs. Rendering is pure; the issue is edited only when the rendered body changed.

export const DASHBOARD_LABEL = "quartermaster-dashboard";
export const DASHBOARD_TITLE = "Quartermaster dashboard";
const MARK = "<!-- quartermaster-dashboard -->";
/** Waivers expiring within this many days are listed. */
export const WAIVER_NOTICE_DAYS = 14;
const DAY_MS = 86_400_000;
/** Rows per section before the rest is counted rather than listed. */
const MAX_ROWS = 50;

export interface DashboardPull {
  number: number;
  title: string;
  createdAt?: string;
}

export interface DashboardDeferred {
  branch: string;
  title: string;
  since: string;
}

export interface DashboardInput {
  /** The run's report, annotated with history (`unaudited` on nodes not audited). */
  report: Pick<Report, "startedAt" | "manifestRevision" | "summary" | "nodes" | "unauditedBudget">;
  /** The bot's open pull requests. */
  pulls: readonly DashboardPull[];
  deferred: readonly DashboardDeferred[];
  tickets: readonly { ticket: Ticket; file: string }[];
  waivers: readonly Waiver[];
  /** The run history's runs, oldest first: the chart of counts by status. */
  runs?: readonly { at: string; counts: Record<NodeStatus, number> }[];
  /** Owners this run could not ask to review. */
  unasked?: readonly PendingReview[];
}

/** Nodes with latent drift that one of `events` sets off: each with its items' first reason. */
function pendingNodes(
  nodes: DashboardInput["report"]["nodes"],
  events: readonly LatentEvent[],
): string[] {
  return nodes.flatMap((n) => {
    const items = n.drift.filter((d) => d.latent && events.includes(d.latent.after));
    if (!items.length) return [];
    const first = items[0]!;
    const more = items.length > 1 ? ` (and ${plural(items.length - 1, "item")} more)` : "";
    return [
      `- ${codeSpan(n.name)}: ${latentSentence({ ...first, latent: first.latent! }, (text) => codeSpan(text, 120))}${more}`,
    ];
  });
}

/**
 * `rows` under `heading` (and a table's `header`), worst first as given: at most `max`, then how
 * many more.
 */
function section(
  heading: string,
  rows: readonly string[],
  max: number,
  empty: string,
  header: readonly string[] = [],
): string[] {
  const shown = rows.slice(0, max);
  const more = rows.length - shown.length;
  return [
    `### ${heading} (${rows.length})`,
    "",
    ...(rows.length ? [...header, ...shown] : [empty]),
    ...(more > 0 ? ["", `_…and ${more} more: the audit report artifact lists them all._`] : []),
    "",
  ];
}

/**
 * The dashboard's content: counts first, then each list worst first, capped so the whole stays under
 * GitHub's body limit on any fleet. Node names, titles and branches are host or manifest text:
 * only ever in code.
 */
export function renderDashboard(input: DashboardInput, max = MAX_ROWS): string {
  const now = Date.parse(input.report.startedAt);
  const { summary } = input.report;
  const counts = NODE_STATUSES.map((status) => ({
    status,
    count: input.report.nodes.filter((n) => n.status === status).length,
  }));
  const unaudited = input.report.nodes
    .filter((n) => !audited(n))
    .sort((a, b) =>
      (a.unaudited?.since ?? "") < (b.unaudited?.since ?? "")
        ? -1
        : (a.unaudited?.since ?? "") > (b.unaudited?.since ?? "")
          ? 1
          : a.name < b.name
            ? -1
            : 1,
    )
    .map(
      (n) =>
        `- ${codeSpan(n.name)}: ${n.status}${n.unaudited ? `, ${unauditedText(n.unaudited)}` : ""}`,
    );
  const pulls = [...input.pulls]
    .sort((a, b) => (a.createdAt ?? "").localeCompare(b.createdAt ?? "") || a.number - b.number)
    .map(
      (p) => `| #${p.number} | ${codeCell(p.title, 120)} | ${p.createdAt?.slice(0, 10) ?? "?"} |`,
    );
  const deferred = [...input.deferred]
    .sort((a, b) => a.since.localeCompare(b.since) || (a.branch < b.branch ? -1 : 1))
    .map(
      (d) =>
        `- [ ] ${codeSpan(d.title, 120)}, waiting since ${d.since} <!-- open: ${openMark(d.branch)} -->`,
    );
  const pastDue = ticketsPastDue(input.tickets, now).map(({ ticket, file, due }) => {
    // Its drift still there is raised here, on the ticket, never as a fresh PR (desired.ts).
    const still = input.report.nodes
      .filter(
        (n) =>
          ticket.nodes.includes(n.name) &&
          n.drift.some((item) => ticketCovers(ticket, itemSignature(item))),
      )
      .map((n) => n.name);
    return `- ${codeSpan(ticket.id)} (${ticket.domain} ${codeSpan(ticket.key, 80)} on ${ticket.nodes.length} node${ticket.nodes.length === 1 ? "" : "s"}), due ${codeSpan(due)}: ${codeSpan(file)}${still.length ? `; its drift is still present on ${nodeSpans(still)}` : ""}`;
  });
  const waivers = input.waivers
    .filter(
      (w) => w.expires !== undefined && expiryTime(w.expires) < now + WAIVER_NOTICE_DAYS * DAY_MS,
    )
    .sort((a, b) => expiryTime(a.expires!) - expiryTime(b.expires!))
    .map(
      (w) =>
        `- ${expiryTime(w.expires!) < now ? "expired" : "expires"} ${codeSpan(w.expires!)}: node ${codeSpan(w.node)}, domain ${codeSpan(w.domain)}, key ${codeSpan(w.key, 80)}, ${codeSpan(w.reason, 120)}`,
    );
  const pendingReboot = pendingNodes(input.report.nodes, ["reboot"]);
  const pendingRestart = pendingNodes(input.report.nodes, ["restart", "daemon-reload"]);
  const pendingExpiry = pendingNodes(input.report.nodes, ["expiry"]);
  const budget = input.report.unauditedBudget?.over;
  const unasked = [...(input.unasked ?? [])]
    .sort((a, b) => a.number - b.number || (a.owner < b.owner ? -1 : 1))
    .map(pendingRow);
  // Said as the text report says it, so items a ticket or waiver covers never read as new work.
  const acknowledged = summary.acknowledgedItems
    ? `, ${summary.acknowledgedItems} acknowledged`
    : "";
  const latent = summary.latentItems ? `, ${summary.latentItems} latent` : "";
  const driftWords = `${plural(summary.driftItems, "drift item")}${acknowledged}${latent}`;

  const assemble = (rows: number) =>
    [
      MARK,
      "This issue is kept up to date by Quartermaster on every run; edits other than ticking a box are overwritten.",
      "",
      `**Fleet**: ${plural(summary.nodes, "node")}: ${counts.map((c) => `${c.count} ${c.status}`).join(", ")}; ${driftWords}.`,
      ...(budget
        ? ["", `**More nodes not audited than allowed**: ${textCell(budget.join("; "))}.`]
        : []),
      "",
      ...statusMermaid(input.runs ?? []),
      ...section("Nodes not audited", unaudited, rows, "Every node was audited."),
      ...section("Open pull requests, oldest first", pulls, rows, "None.", [
        "| PR | title | opened |",
        "|---|---|---|",
      ]),
      ...section(
        "Deferred pull requests: tick one to open it on the next run",
        deferred,
        rows,
        "None.",
      ),
      ...(unasked.length
        ? section("Owners not asked to review: asked again on the next run", unasked, rows, "")
        : []),
      ...(pendingReboot.length
        ? section("Pending reboot: latent drift a reboot sets off", pendingReboot, rows, "")
        : []),
      ...(pendingRestart.length
        ? section(
            "Pending restart: latent drift a restart or daemon-reload sets off",
            pendingRestart,
            rows,
            "",
          )
        : []),
      ...(pendingExpiry.length
        ? section(
            "Expiring before the next audit: latent drift the days to it set off",
            pendingExpiry,
            rows,
            "",
          )
        : []),
      ...section("Remediation tickets past due", pastDue, rows, "None."),
      ...section(
        `Waivers expired or expiring within ${WAIVER_NOTICE_DAYS} days`,
        waivers,
        rows,
        "None.",
      ),
      `Manifest revision ${input.report.manifestRevision ? codeSpan(input.report.manifestRevision) : "unknown"}.`,
      "",
    ].join("\n");
  let rows = max;
  let body = assemble(rows);
  while (body.length > MAX_BODY_CHARS && rows > 0) body = assemble((rows = Math.floor(rows / 2)));
  return body;
}

// Branch names are the bot's own (`quartermaster--…`), but a comment must never end early.
const openMark = (branch: string) => branch.replaceAll("--", "-\\-").replaceAll(">", "\\u003e");
const fromMark = (mark: string) => mark.replaceAll("-\\-", "--").replaceAll("\\u003e", ">");

/** The deferred branches whose box a person ticked: opened on this run. */
export function tickedBranches(body: string): Set<string> {
  const ticked = new Set<string>();
  for (const match of body.matchAll(/^- \[[xX]\] .*<!-- open: (\S+) -->\s*$/gm))
    ticked.add(fromMark(match[1]!));
  return ticked;
}

export interface Dashboard {
  number?: number;
  body: string;
  /** What reading it found to warn of: marked issues someone else opened, which are ignored. */
  warnings?: string[];
}

// Below this line: which run wrote the dashboard. Not compared: a run that changes nothing else
// leaves the issue alone.
const FOOTER = "\n---\n<!-- quartermaster-dashboard-run -->\n";

/** The issue's body: the content, then the run that wrote it. */
export function dashboardBody(content: string, run: { at: string; url?: string }): string {
  return `${content}${FOOTER}Updated by the run of ${run.at}${run.url ? ` ([workflow run](${run.url}); the fleet page is its \`fleet-page\` artifact)` : ""}.\n`;
}

const contentOf = (body: string) => {
  const end = body.lastIndexOf(FOOTER);
  return end < 0 ? body : body.slice(0, end);
};

/**
 * The repository's dashboard issue as it is now: the oldest open one the bot marked and opened.
 * Anyone may open an issue with its label and mark; such an issue is never read (its ticked boxes
 * would open deferred PRs) nor edited, only warned of.
 */
export async function readDashboard(github: Forge): Promise<Dashboard> {
  // Asked first, with or without a dashboard yet: a token that cannot say who it is stops the
  // first run as it stops every later one, before anything is written.
  const bot = await github.botLogin();
  const marked = (await github.issues(DASHBOARD_LABEL)).filter((i) => i.body.startsWith(MARK));
  if (!marked.length) return { body: "" };
  const found = marked.find((i) => i.author === bot);
  const warnings = marked
    .filter((i) => i.author !== bot)
    .map(
      (i) =>
        `issue #${i.number} has the dashboard's label and mark but was opened by ${i.author === undefined ? "an unknown account" : `"${visible(i.author)}"`}, not by the bot ("${visible(bot)}"): ignored, its ticked boxes open nothing`,
    );
  return {
    ...(found ? { number: found.number, body: found.body } : { body: "" }),
    ...(warnings.length > 0 && { warnings }),
  };
}

/**
 * Writes the dashboard: opens it the first time, edits it only when its content changed (the
 * run's line below it aside). Returns what was done.
 */
export async function writeDashboard(
  github: Forge,
  current: Dashboard,
  content: string,
  run: { at: string; url?: string },
): Promise<"opened" | "updated" | "unchanged"> {
  const body = dashboardBody(content, run);
  if (current.number === undefined) {
    await github.openIssue({ title: DASHBOARD_TITLE, body, labels: [DASHBOARD_LABEL] });
    return "opened";
  }
  if (contentOf(current.body) === content) return "unchanged";
  await github.updateIssue(current.number, body);
  return "updated";
}

/**
 * After a run's actions: the dashboard with the pull requests as they are now, linking `url` (the
 * workflow run's page). When GitHub refused, what to warn of (the next run tries again); undefined
 * when it is written.
 */
export async function updateDashboard(
  github: Forge,
  current: Dashboard,
  run: Pick<DashboardInput, "report" | "tickets" | "waivers" | "unasked" | "runs"> & {
    actions: readonly Action[];
  },
  url: string | undefined,
): Promise<string | undefined> {
  try {
    const pulls = (await botPulls(github)).filter((p) => p.state === "open");
    const deferred = run.actions.flatMap((a) =>
      a.type === "defer" ? [{ branch: a.branch, title: a.title, since: a.since }] : [],
    );
    const content = renderDashboard({ ...run, pulls, deferred });
    await writeDashboard(github, current, content, {
      at: run.report.startedAt,
      ...(url && { url }),
    });
    return undefined;
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    return `${visible(error.message)}; the dashboard is not updated`;
  }
}
