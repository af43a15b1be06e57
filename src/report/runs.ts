import * as z from "zod";
import { boundedCause, Cause } from "../domains/cause.js";
import { audited } from "./unaudited.js";
import { NODE_STATUSES, type NodeStatus, type Report } from "./schema.js";
import { isObject, stateJson } from "./history.js";

// The history of runs kept on the state branch beside audit-history.json: per run its time,
// revision and counts, per node its status and drift fingerprints (as changes from the run before,
// so a quiet fleet costs a line per run), and per fingerprint its story (first and last seen,
// cause, the pull request that carried it, when it was resolved). Append-only and bounded.

export const RUNS_VERSION = 1;
/** Runs kept at most, and for at most this many days before the newest. */
export const MAX_RUNS = 400;
export const MAX_RUN_DAYS = 90;
const DAY_MS = 86_400_000;
/** A cause's evidence is host text: a line kept, not a log. */
const MAX_EVIDENCE_CHARS = 300;
/**
 * The most characters the history is written with, whatever the hosts do (100,000 nodes write about
 * 170 MiB): under what a reader takes whole (MAX_TEXT_BYTES). Past it, the least useful entries go.
 */
export const MAX_RUNS_CHARS = 224 * 1024 * 1024;

const Time = z.iso.datetime({ offset: true });
const Status = z.enum(NODE_STATUSES);
/** A node in one run: its status, then the fingerprints of its drift. */
const NodeEntry = z.tuple([Status]).rest(z.string());
type NodeEntry = z.infer<typeof NodeEntry>;

const Count = z.number().int().nonnegative();
const Counts = z.object({
  clean: Count,
  drift: Count,
  unreachable: Count,
  error: Count,
  maintenance: Count,
}) satisfies z.ZodType<Record<NodeStatus, number>>;

const Run = z.object({
  at: Time,
  revision: z.string().nullable(),
  counts: Counts,
  /** Domains this run audited, when not all (`--category`). */
  categories: z.array(z.string()).optional(),
  /** The first kept run: every node. Any later run: the nodes that changed (null: left the fleet). */
  nodes: z.record(z.string(), NodeEntry.nullable()),
});
export type Run = z.infer<typeof Run>;

const Pull = z.object({ number: z.number().int().positive(), kind: z.string() });

const Drift = z.object({
  node: z.string(),
  domain: z.string(),
  key: z.string(),
  severity: z.string(),
  firstSeen: Time,
  lastSeen: Time,
  /** The first run that audited the node's domain and no longer found it. */
  resolved: Time.optional(),
  /** The first run that found it acknowledged (a merged ticket, a waiver). */
  acknowledged: Time.optional(),
  /** How many times it came back after being resolved. */
  returns: z.number().int().positive().optional(),
  cause: Cause.optional(),
  pull: Pull.optional(),
  owners: z.array(z.string()).optional(),
});
export type RunDrift = z.infer<typeof Drift>;

export interface RunHistory {
  /** Oldest first; the first carries every node. */
  runs: Run[];
  /** By fingerprint. */
  drift: Map<string, RunDrift>;
}

export const emptyRuns = (): RunHistory => ({ runs: [], drift: new Map() });

/**
 * The run history in `text`, or why it is not one. A malformed run or drift entry costs only that
 * entry; names are read into Maps (the state branch is writable by anyone with push access).
 */
export function parseRuns(text: string): RunHistory | string {
  const json = stateJson(text, RUNS_VERSION, "run history");
  if (typeof json === "string") return json;
  const history = emptyRuns();
  if (Array.isArray(json.runs))
    for (const entry of json.runs) {
      const run = Run.safeParse(entry);
      if (run.success) history.runs.push({ ...run.data, nodes: mapToRecord(run.data.nodes) });
    }
  history.runs.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  if (isObject(json.drift))
    for (const [fingerprint, entry] of Object.entries(json.drift)) {
      const drift = Drift.safeParse(entry);
      if (drift.success) history.drift.set(fingerprint, drift.data);
    }
  return history;
}

/** A parsed record rebuilt without a prototype: a node named `__proto__` is just a name. */
function mapToRecord<T>(record: Record<string, T>): Record<string, T> {
  const out = Object.create(null) as Record<string, T>;
  for (const [key, value] of Object.entries(record)) out[key] = value;
  return out;
}

const byKey = <T>([a]: [string, T], [b]: [string, T]) => (a < b ? -1 : a > b ? 1 : 0);

/** The history's lines as it is written: one run a line, one drift a line, keys sorted. */
function historyLines(history: RunHistory) {
  const runs = history.runs.map((run) =>
    JSON.stringify({ ...run, nodes: Object.fromEntries(Object.entries(run.nodes).sort(byKey)) }),
  );
  const driftChars = new Map<string, number>();
  const drift = [...history.drift].sort(byKey).map(([fingerprint, entry]) => {
    const line = `${JSON.stringify(fingerprint)}:${JSON.stringify(entry)}`;
    driftChars.set(fingerprint, line.length + 2);
    return line;
  });
  const chars =
    runs.reduce((sum, line) => sum + line.length + 2, 0) +
    [...driftChars.values()].reduce((sum, n) => sum + n, 0);
  return { runs, drift, driftChars, chars };
}

/**
 * The history as the state branch keeps it: the diff between two runs is their new lines. One over
 * `maxChars` is written trimmed to nine tenths of it (so not again on every run), never refused.
 */
export function serializeRuns(history: RunHistory, maxChars = MAX_RUNS_CHARS): string {
  let lines = historyLines(history);
  if (lines.chars > maxChars)
    lines = historyLines(
      trimmed(history, lines.chars - Math.floor(maxChars * 0.9), lines.runs, lines.driftChars),
    );
  const list = (items: string[], open: string, close: string) =>
    items.length ? `${open}\n${items.join(",\n")}\n${close}` : `${open}${close}`;
  return `{"version":${RUNS_VERSION},\n"runs":${list(lines.runs, "[", "]")},\n"drift":${list(lines.drift, "{", "}")}}\n`;
}

/** Each run's nodes in full, oldest first: the changes replayed over the first run. */
export function* replayRuns(
  runs: readonly Run[],
): Generator<{ run: Run; nodes: ReadonlyMap<string, NodeEntry> }> {
  const nodes = new Map<string, NodeEntry>();
  for (const run of runs) {
    for (const [name, entry] of Object.entries(run.nodes))
      if (entry === null) nodes.delete(name);
      else nodes.set(name, entry);
    yield { run, nodes };
  }
}

/** The nodes as the newest run left them. */
function lastNodes(runs: readonly Run[]): Map<string, NodeEntry> {
  let last = new Map<string, NodeEntry>();
  for (const { nodes } of replayRuns(runs)) last = nodes as Map<string, NodeEntry>;
  return new Map(last);
}

const sameEntry = (a: NodeEntry | undefined, b: NodeEntry) =>
  a !== undefined && a.length === b.length && a.every((v, i) => v === b[i]);

/** What the run knew beyond its report: the pull requests carrying drift, the nodes' owners. */
export interface RunContext {
  /** A pull request by the nodes and domain its marker names. */
  pulls?: readonly { number: number; kind: string; nodes: readonly string[]; domain?: string }[];
  owners?: ReadonlyMap<string, readonly string[]>;
}

/**
 * The history with `report`'s run appended (a run of the same start replaces it: propose run
 * twice on one report counts once), then bounded to MAX_RUNS and MAX_RUN_DAYS.
 */
export function appendRun(
  before: RunHistory,
  report: Pick<Report, "startedAt" | "manifestRevision" | "categories" | "nodes">,
  context: RunContext = {},
): RunHistory {
  const at = report.startedAt;
  const earlier = before.runs.filter((r) => Date.parse(r.at) < Date.parse(at));
  const previous = lastNodes(earlier);
  const counts = Object.fromEntries(NODE_STATUSES.map((s) => [s, 0])) as Record<NodeStatus, number>;
  const changes = Object.create(null) as Record<string, NodeEntry | null>;
  const seen = new Set<string>();
  const drift = new Map([...before.drift].map(([fp, entry]) => [fp, { ...entry }]));
  const pulls = new Map<string, { number: number; kind: string }>();
  for (const pull of context.pulls ?? [])
    for (const node of pull.nodes)
      pulls.set(`${node}\u0000${pull.domain ?? ""}`, { number: pull.number, kind: pull.kind });
  for (const node of report.nodes) {
    seen.add(node.name);
    counts[node.status]++;
    const entry: NodeEntry = [node.status, ...node.drift.map((d) => d.fingerprint).sort()];
    if (!earlier.length || !sameEntry(previous.get(node.name), entry)) changes[node.name] = entry;
    for (const item of node.drift) {
      const known = drift.get(item.fingerprint);
      const pull = pulls.get(`${node.name}\u0000${item.domain}`) ?? pulls.get(`${node.name}\u0000`);
      const owners = context.owners?.get(node.name);
      const cause = item.cause ?? known?.cause;
      const acknowledged = known?.acknowledged ?? (item.acknowledged ? at : undefined);
      drift.set(item.fingerprint, {
        node: node.name,
        domain: item.domain,
        key: item.key,
        severity: item.severity,
        firstSeen: known?.firstSeen ?? item.firstSeen ?? at,
        lastSeen: at,
        ...(known?.resolved === undefined
          ? known?.returns && { returns: known.returns }
          : { returns: (known.returns ?? 0) + 1 }),
        ...(acknowledged && { acknowledged }),
        ...(cause && {
          cause: { ...boundedCause(cause), evidence: cause.evidence.slice(0, MAX_EVIDENCE_CHARS) },
        }),
        ...((pull ?? known?.pull) && { pull: pull ?? known!.pull! }),
        ...((owners ?? known?.owners)?.length && { owners: [...(owners ?? known!.owners!)] }),
      });
    }
  }
  // Resolved where this run looked and did not find it: the node audited, the domain audited.
  const looked = new Map(report.nodes.filter(audited).map((n) => [n.name, n]));
  const categories = report.categories as readonly string[] | undefined;
  for (const [fingerprint, entry] of drift) {
    if (entry.resolved !== undefined || entry.lastSeen === at) continue;
    if (looked.has(entry.node) && (!categories || categories.includes(entry.domain)))
      drift.set(fingerprint, { ...entry, resolved: at });
  }
  if (earlier.length) for (const name of previous.keys()) if (!seen.has(name)) changes[name] = null;
  const run: Run = {
    at,
    revision: report.manifestRevision,
    counts,
    ...(report.categories && { categories: [...report.categories] }),
    nodes: changes,
  };
  return bound({ runs: [...earlier, run], drift });
}

/**
 * The history without about `excess` characters of its serialized lines (`runLines`, and each
 * drift entry's `driftChars`): resolved drift first, oldest first; then the oldest runs; then the
 * drift seen longest ago.
 */
function trimmed(
  history: RunHistory,
  excess: number,
  runLines: readonly string[],
  driftChars: ReadonlyMap<string, number>,
): RunHistory {
  const drift = new Map(history.drift);
  let left = excess;
  const byAge = (resolved: boolean) =>
    [...drift]
      .filter(([, d]) => (d.resolved !== undefined) === resolved)
      .sort(([, a], [, b]) => Date.parse(a.lastSeen) - Date.parse(b.lastSeen));
  for (const [fingerprint] of byAge(true)) {
    if (left <= 0) break;
    drift.delete(fingerprint);
    left -= driftChars.get(fingerprint) ?? 0;
  }
  let runs = history.runs;
  if (left > 0 && runs.length > 1) {
    let drop = 0;
    while (left > 0 && drop < runs.length - 1) left -= runLines[drop++]!.length;
    ({ runs } = bound({ runs, drift }, drop));
  }
  for (const [fingerprint] of byAge(false)) {
    if (left <= 0) break;
    drift.delete(fingerprint);
    left -= driftChars.get(fingerprint) ?? 0;
  }
  return { runs, drift };
}

/**
 * At most MAX_RUNS runs within MAX_RUN_DAYS of the newest, and at least `atLeast` of the oldest gone;
 * the oldest folded into the next.
 */
function bound(history: RunHistory, atLeast = 0): RunHistory {
  const newest = history.runs.at(-1);
  if (!newest) return history;
  const from = Date.parse(newest.at) - MAX_RUN_DAYS * DAY_MS;
  const drop = Math.max(
    atLeast,
    history.runs.length - MAX_RUNS,
    history.runs.findIndex((r) => Date.parse(r.at) >= from),
  );
  if (drop <= 0) return history;
  const kept = history.runs.slice(drop);
  const first = lastNodes(history.runs.slice(0, drop + 1));
  kept[0] = { ...kept[0]!, nodes: Object.assign(Object.create(null), Object.fromEntries(first)) };
  // Drift the kept runs never saw, and that no longer holds, goes with the runs that saw it.
  const oldest = Date.parse(kept[0].at);
  const drift = new Map(
    [...history.drift].filter(
      ([, d]) => d.resolved === undefined || Date.parse(d.lastSeen) >= oldest,
    ),
  );
  return { runs: kept, drift };
}
