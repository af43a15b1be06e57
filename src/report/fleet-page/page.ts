import type { Report } from "../schema.js";
import { appendRun, type RunDrift, type RunHistory } from "../runs.js";
import { plural } from "../formats/common.js";
import {
  fleetFigures,
  repeatDrifters,
  type FleetFigures,
  type NodeEvent,
  type NodeStory,
} from "./figures.js";
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
.dot{display:inline-block;width:.8em;height:.8em;border-radius:50%;margin-right:.3em}`;

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
    `<p id="summary" data-nodes="${summary.nodes}">Run of ${html(report.startedAt)}, manifest revision <code>${html(report.manifestRevision ?? "unknown")}</code>: ${plural(summary.nodes, "node")}, ${summary.clean} clean, ${summary.drifted} drift, ${summary.unreachable} unreachable, ${summary.errors} error, ${summary.maintenance} maintenance; ${plural(withRun.runs.length, "run")} in the history.</p>`,
    `<h2>Fleet status over time</h2>`,
    statusChart(figures.runs),
    ...openDrift(figures),
    ...ownersTable(figures),
    ...repeats(figures),
    `<h2>Nodes (${figures.nodes.length})</h2>`,
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

function nodeSection(story: NodeStory, options: PageOptions): string {
  const drift = story.events.filter((e) => e.type === "drift-seen").length;
  const quiet = story.events.length === 1;
  const head = `<summary><span class="dot" style="background:${STATUS_COLOR[story.status]}"></span><code>${html(story.name)}</code>: ${story.status}${quiet ? ` in every run` : `, ${plural(drift, "drift")}, ${plural(story.events.length, "event")}`}</summary>`;
  const events = quiet
    ? ""
    : `<ol class="timeline">${story.events.map((e) => `<li data-event="${e.type}" data-at="${html(e.at)}"${"fingerprint" in e ? ` data-fingerprint="${html(e.fingerprint)}"` : ""}>${html(e.at)}: ${eventText(e, options)}</li>`).join("")}</ol>`;
  return `<details class="node" id="${anchor(story.name)}" data-node="${html(story.name)}" data-status="${story.status}"${quiet ? "" : " open"}>${head}${events}</details>`;
}

function eventText(event: NodeEvent, options: PageOptions): string {
  if (event.type === "status") return `status <b>${event.status}</b>`;
  const { drift } = event;
  const what = `${html(drift.domain)} <code>${html(drift.key)}</code>`;
  switch (event.type) {
    case "drift-seen":
      return `drift first seen: ${what} (${html(drift.severity)}), last seen ${html(drift.lastSeen)}${drift.returns ? `, came back ${plural(drift.returns, "time")}` : ""}${pull(drift, options)}`;
    case "cause": {
      const cause = drift.cause!;
      return `${CAUSE_EVENT[cause.kind] ?? "cause"} (${html(cause.kind)}${cause.by ? ` by ${html(cause.by)}` : ""}): ${html(cause.evidence)}, behind ${what}`;
    }
    case "acknowledged":
      return `acknowledged (a merged ticket or a waiver): ${what}`;
    case "drift-resolved": {
      const days = (Date.parse(drift.resolved!) - Date.parse(drift.firstSeen)) / 86_400_000;
      return `drift resolved: ${what}, ${days < 1 ? "within a day" : `after ${Math.floor(days)} days`}${pull(drift, options)}`;
    }
  }
}

function pull(drift: RunDrift, options: PageOptions): string {
  if (!drift.pull) return "";
  const label = `${html(drift.pull.kind)} pull request #${drift.pull.number}`;
  return options.repositoryUrl
    ? `; <a href="${html(`${options.repositoryUrl}/pull/${drift.pull.number}`)}">${label}</a>`
    : `; ${label}`;
}
