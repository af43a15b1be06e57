import * as z from "zod";
import { boundedCause, Cause } from "../domains/cause.js";
import { audited } from "./unaudited.js";
import type { DriftItem, NodeResult, Report } from "./schema.js";

// What one run leaves for the next: each node's last successful audit (and how many runs it has
// missed since), each drift fingerprint's first sighting and the cause found then. Kept on the
// bot's state branch; a run reads it to say since when a node is dark and a drift exists, and why,
// then writes the next one.

const Time = z.iso.datetime({ offset: true });

const NodeHistory = z.object({
  lastAudited: Time.optional(),
  /** First run of the current stretch without a successful audit (its last audit, if any). */
  unauditedSince: Time.optional(),
  unauditedRuns: z.number().int().nonnegative(),
  /** The manifests' revision at its last audit, when that was a clean commit. */
  revision: z
    .string()
    .regex(/^([0-9a-f]{40}|[0-9a-f]{64})$/)
    .optional(),
  /** Its declared values' prints at its last audit (the report's `declared`): a rollout's base. */
  declared: z
    .string()
    .regex(/^(?:[A-Za-z0-9_-]{8})*$/)
    .optional(),
});
export type NodeHistory = z.infer<typeof NodeHistory>;

const DriftHistory = z.object({
  node: z.string(),
  domain: z.string(),
  firstSeen: Time,
  /**
   * The cause an audit found when it first saw it (`unknown` too, with why): a later audit reads the
   * host only since the node's last audit, which no longer shows what made a drift that persists,
   * and its pull request says the same every run.
   */
  cause: Cause.transform(boundedCause).optional(),
});
export type DriftHistory = z.infer<typeof DriftHistory>;

export interface AuditHistory {
  /** The start of the run that wrote it: the same run read again (a re-run of propose) counts once. */
  run?: string;
  nodes: Map<string, NodeHistory>;
  /** By drift fingerprint. */
  drift: Map<string, DriftHistory>;
}

export const HISTORY_VERSION = 1;

export const emptyHistory = (): AuditHistory => ({ nodes: new Map(), drift: new Map() });

/** A history as read: the entries that could be read, and each left out with why. */
export interface ReadHistory extends AuditHistory {
  dropped: string[];
}

/**
 * The history in `text`, or why it is not one. A malformed entry costs only itself (said in
 * `dropped`); keys are read into maps, never used as object properties: node names come from the
 * state branch, which anyone with write access can push to.
 */
export function parseHistory(text: string): ReadHistory | string {
  const json = stateJson(text, HISTORY_VERSION, "audit history");
  if (typeof json === "string") return json;
  const history: ReadHistory = { ...emptyHistory(), dropped: [] };
  const run = Time.safeParse(json.run);
  if (run.success) history.run = run.data;
  for (const [field, schema, into] of [
    ["nodes", NodeHistory, history.nodes],
    ["drift", DriftHistory, history.drift],
  ] as const) {
    const entries = json[field];
    if (entries === undefined) continue;
    if (!isObject(entries)) return `"${field}" is not an object`;
    for (const [key, value] of Object.entries(entries)) {
      const parsed = schema.safeParse(value);
      if (parsed.success) (into as Map<string, unknown>).set(key, parsed.data);
      else history.dropped.push(`"${field}" entry ${JSON.stringify(key)} is malformed`);
    }
  }
  return history;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A state-branch file's JSON object at `version`, or why it is not one (`kind` names the file). */
export function stateJson(
  text: string,
  version: number,
  kind: string,
): Record<string, unknown> | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    return `not JSON (${error.message})`;
  }
  if (!isObject(json) || json.version !== version)
    return `not a Quartermaster ${kind} (version ${version})`;
  return json;
}

/**
 * The history as the state branch keeps it: one entry per line (small, and a readable diff between
 * runs), keys sorted, so an unchanged history is the same text.
 */
export function serializeHistory(history: AuditHistory): string {
  const entries = <T>(map: Map<string, T>) =>
    map.size === 0
      ? "{}"
      : `{\n${[...map]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`)
          .join(",\n")}\n}`;
  const run = history.run === undefined ? "" : `"run":${JSON.stringify(history.run)},`;
  return `{"version":${HISTORY_VERSION},${run}\n"nodes":${entries(history.nodes)},\n"drift":${entries(history.drift)}}\n`;
}

/** What the history knows of the node's last successful audit: when, and what it declared. */
export function lastAuditOf(
  history: AuditHistory,
  node: string,
): { at?: number; revision?: string; declared?: string } {
  const entry = history.nodes.get(node);
  if (entry?.lastAudited === undefined) return {};
  return {
    at: Date.parse(entry.lastAudited),
    ...(entry.revision !== undefined && { revision: entry.revision }),
    ...(entry.declared !== undefined && { declared: entry.declared }),
  };
}

/**
 * A node's entry with what history says: since when it is unaudited, and when each drift was
 * first seen. What the entry already says wins (a report annotated once keeps its words).
 */
export function annotateNode(node: NodeResult, history: AuditHistory, now: string): NodeResult {
  const drift = node.drift.map((item): DriftItem =>
    item.firstSeen !== undefined
      ? item
      : { ...item, firstSeen: history.drift.get(item.fingerprint)?.firstSeen ?? now },
  );
  if (audited(node) || node.unaudited) return { ...node, drift };
  const before = history.nodes.get(node.name);
  const since = before?.unauditedSince ?? before?.lastAudited ?? now;
  return {
    ...node,
    drift,
    unaudited: {
      since,
      runs: Math.max(1, (before?.unauditedRuns ?? 0) + (history.run === now ? 0 : 1)),
      ...(before?.lastAudited === undefined && { never: true as const }),
    },
  };
}

/**
 * The history the next run reads, from this run's annotated report. Nodes and drift the run did not
 * look at keep their entries; `fleet`, when known, drops nodes no longer in the manifests.
 */
export function nextHistory(
  before: AuditHistory,
  report: Pick<Report, "startedAt" | "categories" | "nodes" | "manifestRevision" | "manifestDirty">,
  fleet?: ReadonlySet<string>,
): AuditHistory {
  // A dirty tree's revision is not what was declared: the prints stand without one.
  const revision = report.manifestDirty ? null : report.manifestRevision;
  const next: AuditHistory = {
    run: report.startedAt,
    nodes: new Map([...before.nodes].filter(([name]) => !fleet || fleet.has(name))),
    drift: new Map(),
  };
  const looked = new Map(report.nodes.filter(audited).map((n) => [n.name, n]));
  const categories = report.categories as readonly string[] | undefined;
  for (const [fingerprint, entry] of before.drift) {
    // Gone only where this run looked: the node audited, the domain among those audited.
    const seenBy = looked.get(entry.node);
    const lookedAt = seenBy && (!categories || categories.includes(entry.domain));
    if (!lookedAt && (!fleet || fleet.has(entry.node))) next.drift.set(fingerprint, entry);
  }
  for (const node of report.nodes) {
    if (audited(node)) {
      next.nodes.set(node.name, {
        lastAudited: report.startedAt,
        unauditedRuns: 0,
        ...(revision && { revision }),
        ...(node.declared !== undefined && { declared: node.declared }),
      });
    } else if (node.unaudited) {
      const { lastAudited, revision: then, declared } = before.nodes.get(node.name) ?? {};
      next.nodes.set(node.name, {
        ...(lastAudited !== undefined && { lastAudited }),
        ...(then !== undefined && { revision: then }),
        ...(declared !== undefined && { declared }),
        unauditedSince: node.unaudited.since,
        unauditedRuns: node.unaudited.runs,
      });
    }
    for (const item of node.drift)
      next.drift.set(item.fingerprint, {
        node: node.name,
        domain: item.domain,
        firstSeen: item.firstSeen ?? report.startedAt,
        ...(item.cause && { cause: item.cause }),
      });
  }
  return next;
}
