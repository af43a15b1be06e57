import { NODE_STATUSES, type NodeStatus } from "../schema.js";
import { html } from "./html.js";

// Charts as plain SVG strings: inline in the page, nothing to load, drawn the same offline and in
// any browser, and no dependency to keep (a chart library would need a script the page must not run).

export const STATUS_COLOR: Record<NodeStatus, string> = {
  clean: "#2da44e",
  drift: "#d4a72c",
  unreachable: "#cf222e",
  error: "#8250df",
  maintenance: "#8c959f",
};

const WIDTH = 800;
const HEIGHT = 220;
const PAD = { left: 44, right: 8, top: 8, bottom: 36 };

/** One stacked bar per run, counts by status bottom up; each bar titled with its numbers. */
export function statusChart(runs: readonly { at: string; counts: Record<NodeStatus, number> }[]) {
  const max = Math.max(1, ...runs.map((r) => NODE_STATUSES.reduce((n, s) => n + r.counts[s], 0)));
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const step = plotW / Math.max(1, runs.length);
  const barW = Math.max(1, step * 0.8);
  const bars = runs.map((run, i) => {
    let y = PAD.top + plotH;
    const x = PAD.left + i * step;
    const rects = NODE_STATUSES.filter((s) => run.counts[s] > 0).map((s) => {
      const h = (run.counts[s] / max) * plotH;
      y -= h;
      return `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}" fill="${STATUS_COLOR[s]}"/>`;
    });
    const title = NODE_STATUSES.map((s) => `${run.counts[s]} ${s}`).join(", ");
    const data = NODE_STATUSES.map((s) => `data-${s}="${run.counts[s]}"`).join(" ");
    return `<g class="run" data-at="${html(run.at)}" ${data}><title>${html(run.at)}: ${title}</title>${rects.join("")}</g>`;
  });
  const axis = [
    `<text x="${PAD.left - 4}" y="${PAD.top + 10}" text-anchor="end">${max}</text>`,
    `<text x="${PAD.left - 4}" y="${PAD.top + plotH}" text-anchor="end">0</text>`,
    ...(runs.length
      ? [
          `<text x="${PAD.left}" y="${HEIGHT - 20}">${html(runs[0]!.at.slice(0, 10))}</text>`,
          `<text x="${WIDTH - PAD.right}" y="${HEIGHT - 20}" text-anchor="end">${html(runs.at(-1)!.at.slice(0, 10))}</text>`,
        ]
      : []),
    `<line x1="${PAD.left}" y1="${PAD.top + plotH}" x2="${WIDTH - PAD.right}" y2="${PAD.top + plotH}" stroke="#57606a"/>`,
  ];
  const legend = NODE_STATUSES.map(
    (s, i) =>
      `<rect x="${PAD.left + i * 130}" y="${HEIGHT - 12}" width="10" height="10" fill="${STATUS_COLOR[s]}"/><text x="${PAD.left + i * 130 + 14}" y="${HEIGHT - 3}">${s}</text>`,
  );
  return svg("status-chart", "Nodes by status, run by run", [...bars, ...axis, ...legend]);
}

/** Horizontal bars, one per labelled count. */
export function barChart(
  id: string,
  label: string,
  rows: readonly { label: string; count: number }[],
) {
  const max = Math.max(1, ...rows.map((r) => r.count));
  const rowH = 24;
  const labelW = 160;
  const bars = rows.map((row, i) => {
    const w = (row.count / max) * (WIDTH - labelW - 60);
    const y = PAD.top + i * rowH;
    return `<g class="bar" data-label="${html(row.label)}" data-count="${row.count}"><text x="${labelW - 6}" y="${y + 15}" text-anchor="end">${html(row.label)}</text><rect x="${labelW}" y="${y + 3}" width="${w.toFixed(1)}" height="${rowH - 8}" fill="#d4a72c"/><text x="${(labelW + w + 4).toFixed(1)}" y="${y + 15}">${row.count}</text></g>`;
  });
  return svg(id, label, bars, PAD.top * 2 + rows.length * rowH);
}

function svg(id: string, label: string, parts: readonly string[], height = HEIGHT) {
  return `<svg id="${id}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" role="img" aria-label="${html(label)}" font-size="12" font-family="sans-serif">${parts.join("")}</svg>`;
}
