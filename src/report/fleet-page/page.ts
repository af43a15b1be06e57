import { latentOnly } from "../../domains/latent-words.js";
import { latentSentence } from "../../domains/registry.js";
import { NODE_STATUSES, type Report } from "../schema.js";
import { appendRun, type RunDrift, type RunHistory } from "../runs.js";
import { plural } from "../formats/common.js";
import { fleetFigures, repeatDrifters, type FleetFigures, type NodeStory } from "./figures.js";
import { html } from "./html.js";
import { barChart, statusChart, STATUS_COLOR } from "./svg.js";

// The fleet page: one self-contained HTML file (inline style and SVG, no script, nothing fetched)
// from a report and the run history, so it opens from an artifact zip on a laptop offline.

export interface PageOptions {
  /** The repository's web address, to link pull requests (`https://github.com/acme/fleet`). */
  repositoryUrl?: string;
}

const STYLE = `body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:960px;color:#1f2328}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #d0d7de;padding:2px 8px;text-align:left}
code{background:#f6f8fa;padding:0 3px}details{margin:.2em 0}summary{cursor:pointer}
i{display:inline-block;width:.8em;height:.8em;border-radius:50%;margin:0 .3em}.st{margin:.2em 0 .2em 1em}
.dr{font-size:12px}.dr code{word-break:break-all}
${NODE_STATUSES.map((s) => `.s-${s}{background:${STATUS_COLOR[s]}}`).join("")}`;

/** The page for `report`, over `history` (the report's run added when the history lacks it). */
export function renderFleetPage(
  report: Report,
  history: RunHistory,
  options: PageOptions = {},
): string {
  const withRun = history.runs.some((r) => r.at === report.startedAt)
    ? history
    : appendRun(history, report);
  const figures = fleetFigures(withRun);
  const { summary } = report;
  return [
    "<!DOCTYPE html>",
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`,
    `<title>Quartermaster fleet: ${html(report.startedAt)}</title><style>${STYLE}</style></head><body>`,
    `<h1>Quartermaster fleet</h1>`,
    `<p id="summary" data-nodes="${summary.nodes}">Run of ${html(report.startedAt)}, manifest revision <code>${html(report.manifestRevision ?? "unknown")}</code>: ${plural(summary.nodes, "node")}, ${summary.clean} clean, ${summary.drifted} drift, ${summary.unreachable} unreachable, ${summary.errors} error, ${summary.maintenance} maintenance; ${plural(summary.driftItems, "drift item")}, ${summary.acknowledgedItems} acknowledged, ${summary.latentItems} latent; ${plural(withRun.runs.length, "run")} in the history.</p>`,
    `<h2>Fleet status over time</h2>`,
    statusChart(figures.runs),
    ...openDrift(figures),
    ...latentItems(report),
    ...ownersTable(figures),
    ...repeats(figures),
    `<h2>Nodes (${figures.nodes.length})</h2>`,
    "<p>Times are UTC. Each node: its status changes, then its drift, one row each.</p>",
    ...figures.nodes.map((story) => nodeSection(story, options)),
    "</body></html>",
    "",
  ].join("\n");
}

function openDrift(figures: FleetFigures): string[] {
  const total = figures.openByAge.reduce((n, b) => n + b.count, 0);
  return [
    `<h2>Drift open by age (<span id="open-drift">${total}</span>)</h2>`,
    barChart("age-chart", "Open drift by age", figures.openByAge),
  ];
}

/**
 * What the next reboot, restart or daemon-reload changes, and what expires before the next audit,
 * from this run's report: each latent item in its domain's words, apart from drift (a clean node
 * may have some).
 */
function latentItems(report: Report): string[] {
  const code = (text: string) => `<code>${html(text)}</code>`;
  const rows = report.nodes.flatMap((node) =>
    node.drift.flatMap((item) =>
      item.latent
        ? [
            `<tr data-node="${html(node.name)}" data-after="${item.latent.after}"><td><a href="#${anchor(node.name)}">${code(node.name)}</a></td><td>${item.latent.after}</td><td>${html(item.domain)} ${code(item.key)}</td><td>${latentSentence({ ...item, latent: item.latent }, code)}${latentOnly(item) && item.cause ? `; ${cause(item)}` : ""}</td></tr>`,
          ]
        : [],
    ),
  );
  const expiring = report.nodes.some((n) => n.drift.some((d) => d.latent?.after === "expiry"));
  const onEvent = report.nodes.some((n) =>
    n.drift.some((d) => d.latent && d.latent.after !== "expiry"),
  );
  // Worded for the events present: an expiry is no reboot or restart.
  const heading = !expiring
    ? "What the next reboot or restart changes"
    : onEvent
      ? "What the next reboot or restart changes, and what expires before the next audit"
      : "What expires before the next audit";
  return [
    `<h2>${heading} (<span id="latent-count">${rows.length}</span>)</h2>`,
    rows.length
      ? `<p>Latent items hold now and will not after the event; they are not drift.</p><table id="latent"><tr><th>node</th><th>after</th><th>item</th><th>what it changes</th></tr>${rows.join("")}</table>`
      : "<p>None.</p>",
  ];
}

function ownersTable(figures: FleetFigures): string[] {
  const days = figures.owners[0]?.within.map((w) => w.days) ?? [];
  const percent = (resolved: number, of: number) =>
    of === 0 ? "n/a" : `${Math.round((resolved / of) * 100)}% (${resolved} of ${of})`;
  return [
    `<h2>Drift by owner</h2>`,
    `<p>Resolved within N days: of the drift first seen at least N days ago or already resolved, the share resolved within N days of being first seen.</p>`,
    `<table id="owners"><tr><th>owner</th><th>open</th>${days.map((d) => `<th>resolved within ${plural(d, "day")}</th>`).join("")}</tr>`,
    ...figures.owners.map(
      (o) =>
        `<tr data-owner="${html(o.owner)}"><td><code>${html(o.owner)}</code></td><td data-open="${o.open}">${o.open}</td>${o.within
          .map(
            (w) =>
              `<td data-within="${w.days}" data-resolved="${w.resolved}" data-of="${w.of}">${percent(w.resolved, w.of)}</td>`,
          )
          .join("")}</tr>`,
    ),
    "</table>",
  ];
}

function repeats(figures: FleetFigures): string[] {
  const nodes = repeatDrifters(figures);
  return [
    `<h2>Nodes that drift again and again (${nodes.length})</h2>`,
    nodes.length
      ? `<table id="repeat"><tr><th>node</th><th>times it turned to drift</th></tr>${nodes
          .map(
            (n) =>
              `<tr data-node="${html(n.name)}" data-episodes="${n.driftEpisodes}"><td><a href="#${anchor(n.name)}"><code>${html(n.name)}</code></a></td><td>${n.driftEpisodes}</td></tr>`,
          )
          .join("")}</table>`
      : "<p>None.</p>",
  ];
}

// An id per node name, collision-free: each code unit outside [a-z0-9-] is spelled out.
const anchor = (name: string) =>
  `node-${name.replace(/[^a-z0-9-]/g, (c) => `_${c.charCodeAt(0).toString(16)}_`)}`;

const CAUSE_EVENT: Record<string, string> = {
  reboot: "reboot",
  package: "package run",
  "package-file": "package run",
};

// A time the history holds (checked as ISO when read), to the second, in UTC: our own text, so
// not escaped, and short, because a page of 1,000 nodes shows thousands of them.
const when = (at: string) => new Date(at).toISOString().slice(0, 19).replace("T", " ");

// A node's timeline in two compact parts: its status changes in a line, then one row per drift
// with its whole story (first and last seen, cause, pull request, acknowledgement, resolution).
function nodeSection(story: NodeStory, options: PageOptions): string {
  const quiet = story.statuses.length === 1 && story.drift.length === 0;
  const head = `<summary><i class="s-${story.status}"></i><code>${html(story.name)}</code>: ${story.status}${quiet ? " in every run" : `, ${plural(story.drift.length, "drift")}, ${plural(story.statuses.length - 1, "status change")}`}</summary>`;
  const statuses = story.statuses
    .map((s) => `<i class="s-${s.status}"></i>${s.status} ${when(s.at)}`)
    .join(" → ");
  const drift = story.drift.length
    ? `<table class="dr"><tr><th>drift</th><th>first seen</th><th>last seen</th><th>cause</th><th>pull request</th><th>acknowledged</th><th>resolved</th></tr>${story.drift.map((d) => driftRow(d.fingerprint, d.drift, options)).join("")}</table>`
    : "";
  return `<details class="node" id="${anchor(story.name)}" data-node="${html(story.name)}" data-status="${story.status}"${quiet ? "" : " open"}>${head}<p class="st">${statuses}</p>${drift}</details>`;
}

function driftRow(fingerprint: string, drift: RunDrift, options: PageOptions): string {
  const returns = drift.returns ? `, came back ${plural(drift.returns, "time")}` : "";
  const cells = [
    `${html(drift.domain)} <code>${html(drift.key)}</code> (${html(drift.severity)})${returns}`,
    when(drift.firstSeen),
    when(drift.lastSeen),
    cause(drift),
    pull(drift, options),
    drift.acknowledged ? when(drift.acknowledged) : "",
    resolved(drift),
  ];
  return `<tr data-fp="${html(fingerprint)}">${cells.map((c) => `<td>${c}</td>`).join("")}</tr>`;
}

function cause({ cause }: Pick<RunDrift, "cause">): string {
  if (!cause) return "";
  const by = cause.by ? ` by <code>${html(cause.by)}</code>` : "";
  const at = cause.at ? ` at ${when(cause.at)}` : "";
  return `${CAUSE_EVENT[cause.kind] ?? html(cause.kind)}${by}${at}: <code>${html(cause.evidence)}</code>`;
}

function resolved(drift: RunDrift): string {
  if (!drift.resolved) return "open";
  const days = (Date.parse(drift.resolved) - Date.parse(drift.firstSeen)) / 86_400_000;
  return `${when(drift.resolved)} (${days < 1 ? "within a day" : `after ${plural(Math.floor(days), "day")}`})`;
}

function pull(drift: RunDrift, options: PageOptions): string {
  if (!drift.pull) return "";
  const label = `#${drift.pull.number} (${html(drift.pull.kind)})`;
  return options.repositoryUrl
    ? `<a href="${html(`${options.repositoryUrl}/pull/${drift.pull.number}`)}">${label}</a>`
    : label;
}
