// node_exporter textfile collector format: gauges only, no timestamps (the collector rejects
// them), families and series sorted so an unchanged fleet writes an identical file.
import { exposition, formatLabels, type Labels } from "../../text/prometheus.js";
import type { RunnerEscapes } from "../../text/escape.js";
import { NODE_STATUSES } from "../schema.js";
import { compareText } from "./common.js";
import type { Renderer } from "./format.js";

// The exposition escapes only \\, " and newline: a doubled backslash keeps a label value parseable,
// showing the escape itself where the host wrote `##[` (only a label value can hold one).
export const PROMETHEUS_RUNNER_ESCAPES: RunnerEscapes = {
  colon: "\\\\u003a",
  bracket: "\\\\u005b",
};

interface Family {
  name: string;
  type: "gauge";
  help: string;
  samples: Map<string, { labels: Labels; value: number }>;
}

function family(name: string, help: string): Family {
  return { name: `quartermaster_${name}`, type: "gauge", help, samples: new Map() };
}

// Label order is fixed by each call site, so the serialized labels identify a series.
function add(f: Family, labels: Labels, value: number): void {
  const key = formatLabels(labels);
  const existing = f.samples.get(key);
  f.samples.set(key, { labels, value: (existing?.value ?? 0) + value });
}

export const renderPrometheus: Renderer = (report) => {
  const drift = family("drift_items", "Unacknowledged drift items by node, domain and severity.");
  const acknowledged = family(
    "acknowledged_drift_items",
    "Drift items covered by a merged remediation ticket or a waiver, by node, domain and severity.",
  );
  const unknown = family(
    "domain_unknown",
    "1 when the node could not show this domain (reported, never drift).",
  );
  const status = family(
    "node_status",
    "1 for the node's status in the last audit, 0 for the others.",
  );
  const duration = family("node_audit_duration_seconds", "How long auditing the node took.");
  const nodes = family("nodes", "Nodes by status in the last audit.");
  const age = family(
    "drift_age_seconds",
    "Seconds since each drift item was first seen, by node, domain and key (when the audit knew the history).",
  );
  const unaudited = family(
    "node_unaudited_seconds",
    "Seconds since the node's last successful audit (or first attempt), for nodes not audited in the last run.",
  );
  const last = family(
    "last_audit_timestamp_seconds",
    "When the last audit finished, in seconds since the Unix epoch.",
  );

  const succeeded = family(
    "last_successful_fleet_audit_timestamp_seconds",
    "When the last audit that reached every node finished, in seconds since the Unix epoch (absent after a run that did not: pushed with POST, the Pushgateway keeps the last one).",
  );

  const finished = Date.parse(report.finishedAt);
  for (const s of NODE_STATUSES) add(nodes, { status: s }, 0);
  for (const node of report.nodes) {
    add(nodes, { status: node.status }, 1);
    for (const s of NODE_STATUSES)
      add(status, { node: node.name, status: s }, s === node.status ? 1 : 0);
    add(duration, { node: node.name }, node.durationMs / 1000);
    if (node.unaudited)
      add(unaudited, { node: node.name }, (finished - Date.parse(node.unaudited.since)) / 1000);
    for (const item of node.drift) {
      if (item.firstSeen)
        add(
          age,
          { node: node.name, domain: item.domain, key: item.key },
          (finished - Date.parse(item.firstSeen)) / 1000,
        );
      add(
        item.acknowledged ? acknowledged : drift,
        { node: node.name, domain: item.domain, severity: item.severity },
        1,
      );
    }
    // A domain can be unknown for several reasons; the gauge says whether it is, as its help says.
    for (const domain of new Set((node.unknown ?? []).map((u) => u.domain)))
      add(unknown, { node: node.name, domain }, 1);
  }
  add(last, {}, finished / 1000);
  if (report.nodes.every((n) => n.status !== "unreachable" && n.status !== "error"))
    add(succeeded, {}, finished / 1000);

  // The history's families only when the audit knew the history, the success time only after one.
  const history = [age, unaudited, succeeded].filter((f) => f.samples.size > 0);
  return exposition(
    [drift, acknowledged, unknown, status, duration, nodes, last, ...history]
      .sort((a, b) => compareText(a.name, b.name))
      .map((f) => ({ ...f, samples: f.samples.values() })),
  );
};
