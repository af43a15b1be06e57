// The Prometheus text exposition format (version 0.0.4), written one way for every caller: HELP
// text and label values escaped, NaN and infinities spelled as the format spells them, series
// sorted in code-unit order so unchanged state writes identical text. No timestamps (the
// node_exporter textfile collector rejects them).

export type Labels = Record<string, string>;

export interface MetricFamily {
  /** The full metric name, prefix included. */
  name: string;
  type: "gauge" | "counter";
  help: string;
  /** One sample per label set. */
  samples: Iterable<{ labels: Labels; value: number }>;
}

/** The families as exposition text, in the order given. */
export function exposition(families: readonly MetricFamily[]): string {
  return families.map(formatFamily).join("");
}

/** A label set as the exposition writes it, `{k="v",...}` in the order given: a series' identity. */
export function formatLabels(labels: Labels): string {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`);
  return pairs.length > 0 ? `{${pairs.join(",")}}` : "";
}

function formatFamily(f: MetricFamily): string {
  const lines = [`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`];
  const series = [...f.samples].map((s) => [formatLabels(s.labels), s.value] as const);
  series.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [labels, value] of series) lines.push(`${f.name}${labels} ${formatValue(value)}`);
  return `${lines.join("\n")}\n`;
}

function escapeLabelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`));
}

function escapeHelp(text: string): string {
  return text.replace(/[\\\n]/g, (c) => (c === "\n" ? "\\n" : "\\\\"));
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "+Inf" : "-Inf";
  return String(value);
}
