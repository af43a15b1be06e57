import { createHash } from "../crypto.js";
import pLimit, { type LimitFunction } from "p-limit";
import type { DriftContext } from "../drift/drift.js";
import type { LoadedNode } from "../manifest/load.js";
import type { NodeResult, Report } from "../report/schema.js";
import { MAX_SHARDS, SCHEMA_VERSION } from "../report/version.js";
import { collectReport, EntrySpool, type SpooledReport } from "../report/spool.js";
import { holdLauncher } from "../transport/launcher.js";
import type { SessionGates } from "../transport/session-gate.js";
import type { Transport } from "../transport/transport.js";
import { wholeNumber } from "../whole-number.js";
import { auditNode, type AuditSettings, type CauseRequest } from "./node.js";

export interface Shard {
  index: number;
  count: number;
}

/** Parses `k/n` (1-based), each a whole number (wholeNumber). */
export function parseShard(text: string): Shard | undefined {
  const parts = text.split("/");
  if (parts.length !== 2) return undefined;
  const [index, count] = parts.map((part) => wholeNumber(part, 1));
  if (index === undefined || count === undefined) return undefined;
  return index <= count && count <= MAX_SHARDS ? { index, count } : undefined;
}

/** A node's shard depends on its name only, so adding a node never moves the others. */
export function shardOf(name: string, count: number): number {
  return (createHash("sha256").update(name).digest().readUInt32BE(0) % count) + 1;
}

// `keyOf` may start a process (ssh -G): a few at a time, ahead of the audits they gate.
const GATE_LOOKUPS = 4;

// Nodes handed to the limits at once: far more than any concurrency, so no slot waits for one,
// and few enough that a 100,000-node fleet does not hold a waiting task (and its promises) per
// node.
const ADMITTED = 1024;

export interface FleetRun {
  nodes: readonly LoadedNode[];
  transportFor: (node: LoadedNode) => Transport;
  settings: AuditSettings;
  drift: DriftContext;
  concurrency: number;
  /** Per-jump-host limits within `concurrency` (ssh); none: only `concurrency` applies. */
  sessions?: SessionGates;
  manifestRevision: string | null;
  /**
   * Whether the manifests differ from that commit. Asked when the first node's result is in, not
   * before the first sessions: it reads the repository's index, HEAD's trees and the work tree.
   */
  manifestDirty?: () => Promise<boolean>;
  shard?: Shard;
  /** What the audit history knows of each node's last successful audit. */
  causeRequest?: (node: LoadedNode) => CauseRequest;
  /** Called as each node finishes, in completion order. */
  onResult?: (result: NodeResult) => void;
}

/**
 * Audits every node with bounded concurrency; one node's failure never stops the others. Each
 * node's entry goes to the spool as it arrives, so memory does not grow with the fleet.
 */
export async function spoolFleet(run: FleetRun): Promise<SpooledReport> {
  // The clock the findings are judged at (a certificate's days left): what the report says.
  const startedAt = run.drift.now.toISOString();
  const spool = new EntrySpool();
  let dirty: Promise<boolean> | undefined;
  // Like the check itself, a repository it cannot read counts as clean.
  const manifestDirty = () =>
    (dirty ??= run.manifestDirty?.().catch(() => false) ?? Promise.resolve(false));
  // Every node's session is a job of the process launcher: it is kept between them.
  const release = holdLauncher();
  try {
    const limit = nodeLimit(run.concurrency, run.sessions);
    await eachAdmitted(run.nodes, (node) =>
      limit(node, async () => {
        const cause = run.causeRequest?.(node) ?? {};
        const result = await auditNode(
          node,
          run.transportFor(node),
          run.settings,
          run.drift,
          cause,
        );
        void manifestDirty();
        run.onResult?.(result);
        spool.add(result);
      }),
    );
    const head: Report = {
      schemaVersion: SCHEMA_VERSION,
      startedAt,
      finishedAt: new Date().toISOString(),
      manifestRevision: run.manifestRevision,
      ...((await manifestDirty()) && { manifestDirty: true as const }),
      nodes: [],
      summary: spool.counts.summary,
      ...(run.shard && { shard: run.shard }),
    };
    return { head, spool };
  } catch (error) {
    spool.close();
    throw error;
  } finally {
    release();
  }
}

/** `task` for each node in order, ADMITTED of them started and not yet finished at a time. */
async function eachAdmitted(
  nodes: readonly LoadedNode[],
  task: (node: LoadedNode) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < nodes.length) await task(nodes[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(ADMITTED, nodes.length) }, worker));
}

/**
 * Runs one task per node: at most `concurrency` at once, and at most its gate's limit through one
 * sshd (`audit`, `snapshot` and `adopt` alike). A node waiting for its jump host holds none of the
 * fleet's slots.
 */
export function nodeLimit(
  concurrency: number,
  sessions: SessionGates | undefined,
): <T>(node: LoadedNode, task: () => Promise<T>) => Promise<T> {
  const limit = pLimit(Math.max(1, concurrency));
  const throughGate = sessionGates(sessions);
  return (node, task) => throughGate(node, () => limit(task));
}

interface OpenGate {
  limit: LimitFunction;
  /** Sessions running or waiting in it. */
  users: number;
}

/**
 * `run` through its node's gate: one limit per distinct key, that of the first node of the key to
 * arrive, read again as each session starts and ends (it falls when a jump host's shared
 * connection ends). A gate is held only while sessions run or wait in it (a p-limit costs over a
 * kilobyte, and every node reached directly is a key of its own: 136 MB at 100,000 nodes); its
 * first node is kept, one reference per key.
 */
function sessionGates(
  sessions: SessionGates | undefined,
): <T>(node: LoadedNode, run: () => Promise<T>) => Promise<T> {
  if (!sessions) return (_node, run) => run();
  const firstOf = new Map<string, LoadedNode>();
  const open = new Map<string, OpenGate>();
  const lookup = pLimit(GATE_LOOKUPS);
  return async (node, run) => {
    const key = await lookup(() => sessions.keyOf(node));
    let first = firstOf.get(key);
    if (!first) firstOf.set(key, (first = node));
    const most = () => Math.max(1, sessions.limitOf(first, key));
    const follow = (limit: LimitFunction) => {
      if (limit.concurrency !== most()) limit.concurrency = most();
    };
    let gate = open.get(key);
    if (!gate) open.set(key, (gate = { limit: pLimit(most()), users: 0 }));
    else follow(gate.limit);
    gate.users++;
    try {
      return await gate.limit(run);
    } finally {
      follow(gate.limit);
      if (--gate.users === 0) open.delete(key);
    }
  };
}

/** The same audit, its report whole in memory: for a fleet small enough to show at once. */
export async function auditFleet(run: FleetRun): Promise<Report> {
  const spooled = await spoolFleet(run);
  try {
    return collectReport(spooled);
  } finally {
    spooled.spool.close();
  }
}
