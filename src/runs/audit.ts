// An audit run: the fleet loaded and selected, how each node is reached, the settings and drift
// rules the fleet's files give; the audit whole in memory, or the run for a spooled audit.
import { stat } from "node:fs/promises";
import path from "node:path";
import { auditFleet, shardOf, spoolFleet, type FleetRun, type Shard } from "../audit/fleet.js";
import { defaultAuditSettings, type AuditSettings, type CauseRequest } from "../audit/node.js";
import { splitPrints } from "../audit/cause/rollout.js";
import { annotateNode, lastAuditOf, type AuditHistory } from "../report/history.js";
import { durationMs } from "../report/unaudited.js";
import type { DomainName } from "../domains/registry.js";
import type { DriftContext } from "../drift/drift.js";
import type { Fleet, LoadedNode } from "../manifest/load.js";
import { manifestDirty, manifestRevision, revisionTime } from "../manifest/revision.js";
import type { NodeResult, Report } from "../report/schema.js";
import { localTransport } from "../transport/local.js";
import { throttlingNotices } from "./throttling.js";
import { sharedSshSessions, type SharedSshSessions } from "../transport/session-gate.js";
import { CertificateCheck } from "../transport/ssh-certificate.js";
import {
  DEFAULT_CONNECT_TIMEOUT_SECONDS,
  sshTransport,
  type SshOptions,
} from "../transport/ssh.js";
import type { Transport } from "../transport/transport.js";
import { loadManifests, localNode, selectNodes, type ManifestSource } from "./fleet.js";
import { judgeSpooled, unauditedJudge, type JudgedBy, type JudgedReport } from "./unaudited.js";

export const DEFAULT_CONCURRENCY = 32;
export const DEFAULT_TIMEOUT_SECONDS = 60;

/** What an audit run needs to know: which nodes, how to reach them, which domains. */
export interface AuditOptions {
  source: ManifestSource;
  nodes: readonly string[] | undefined;
  categories: DomainName[] | undefined;
  local: boolean;
  concurrency: number;
  /** Seconds; absent, each node's ssh.timeout, else DEFAULT_TIMEOUT_SECONDS. */
  timeout: number | undefined;
  sshConfig: string | undefined;
  shard: Shard | undefined;
  /** Told once per run of what fails every node it touches (an expired certificate). */
  notice?: (line: string) => void;
  /**
   * Told what the run has to say as it goes: a jump host's nodes connecting one by one, a jump host
   * whose nodes' connections needed retries (with the setting to change).
   */
  say?: (text: string) => void;
}

/** The fleet's `audit` settings (caps, maintenance marker) over the defaults. */
export function fleetAuditSettings(
  fleet: Fleet,
  overrides: Partial<AuditSettings> = {},
): AuditSettings {
  const audit = fleet.settings.audit ?? {};
  return defaultAuditSettings({
    ...(audit.max_file_bytes && { maxFileBytes: audit.max_file_bytes }),
    ...(audit.max_output_bytes && { maxOutputBytes: audit.max_output_bytes }),
    ...(audit.maintenance_marker && { maintenanceMarker: audit.maintenance_marker }),
    ...overrides,
  });
}

/** The fleet's policy, waivers and open tickets: what turns findings into drift items. */
export function fleetDriftRules(fleet: Fleet): Omit<DriftContext, "now"> {
  return {
    policy: fleet.settings.policy ?? {},
    waivers: fleet.settings.ignore ?? [],
    tickets: fleet.tickets.map((t) => t.ticket),
    ...(fleet.settings.audit?.interval && {
      auditInterval: durationMs(fleet.settings.audit.interval),
    }),
  };
}

/**
 * How this run reaches nodes over ssh: `--ssh-config` (a file, checked with the flags), and
 * `known_hosts` beside the manifests when the repository keeps one (else the user's own, through
 * ssh's usual lookup).
 */
export async function fleetSshOptions(
  fleet: Fleet,
  configFile: string | undefined,
  notice: (line: string) => void = () => {},
): Promise<SshOptions> {
  const knownHosts = path.join(fleet.dir, "known_hosts");
  const knownHostsFile = (await stat(knownHosts).catch(() => undefined))?.isFile()
    ? knownHosts
    : undefined;
  return {
    ...(configFile !== undefined && { configFile: path.resolve(configFile) }),
    ...(knownHostsFile && { knownHostsFile }),
    connectTimeoutSeconds: DEFAULT_CONNECT_TIMEOUT_SECONDS,
    certificates: new CertificateCheck(notice),
  };
}

/**
 * How the audit reaches each node; the CLI's own (ssh, or `--local`) unless a caller supplies one.
 */
export interface Reach {
  transportFor?: (node: LoadedNode) => Transport;
}

/**
 * Loads and selects the nodes, and what auditing them takes: over ssh, the jump hosts' shared
 * connections, which the caller closes when the audit ends.
 */
async function fleetRun(
  config: AuditOptions,
  onResult: ((total: number) => (r: NodeResult) => void) | undefined,
  reach: Reach,
): Promise<{ fleet: Fleet; run: FleetRun; connections?: SharedSshSessions }> {
  const fleet = await loadManifests(config.source);
  const { shard, categories } = config;
  let nodes: LoadedNode[] = config.local
    ? [localNode(fleet, config.nodes)]
    : selectNodes(fleet, config.nodes);
  if (shard) nodes = nodes.filter((n) => shardOf(n.name, shard.count) === shard.index);
  const settings = fleetAuditSettings(fleet, {
    timeoutMs: (config.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000,
    ...(categories && { categories }),
  });
  const ssh = await fleetSshOptions(fleet, config.sshConfig, config.notice);
  // --timeout wins; otherwise a node's own ssh.timeout, then the default.
  const nodeTimeoutMs = (node: LoadedNode) =>
    config.timeout === undefined && node.ssh.timeout ? node.ssh.timeout * 1000 : undefined;
  const overSsh = !config.local && !reach.transportFor;
  // Sessions through one jump host (or one sshd) stay under what it allows, all shards together.
  const sessions = overSsh ? sharedSshSessions(ssh, shard?.count, config.say) : undefined;
  const channels = sessions?.channels;
  const transportFor = (node: LoadedNode): Transport =>
    reach.transportFor?.(node) ??
    (config.local
      ? localTransport(node.name)
      : sshTransport(node, { ...ssh, timeoutMs: nodeTimeoutMs(node), channels }));
  const run: FleetRun = {
    nodes,
    transportFor,
    settings,
    drift: { ...fleetDriftRules(fleet), now: new Date() },
    concurrency: config.concurrency,
    ...(sessions && { sessions }),
    manifestRevision: manifestRevision(fleet.dir),
    manifestDirty: () => manifestDirty(fleet.dir),
    shard,
    onResult: onResult?.(nodes.length),
  };
  return { fleet, run, ...(sessions && { connections: sessions }) };
}

/**
 * Loads, selects, audits, the report whole in memory: shared by `diff` and `review`. With the
 * audit history, each node's causes are read since its last audit and against what it declared
 * then (a pending rollout), and its entry is annotated as a scheduled run's is.
 */
export async function runAudit(
  config: AuditOptions,
  history?: AuditHistory,
): Promise<{ fleet: Fleet; report: Report }> {
  const { fleet, run, connections } = await fleetRun(config, undefined, {});
  if (history) run.causeRequest = await historyRequests(history, fleet, run.manifestRevision);
  const report = await auditFleet(run).finally(() => connections?.close());
  if (config.categories) report.categories = config.categories;
  if (history) report.nodes = report.nodes.map((n) => annotateNode(n, history, report.startedAt));
  return { fleet, report };
}

/** A spooled audit: what it audits, and what its unaudited budget is judged by. */
export interface SpooledAuditOptions extends AuditOptions, JudgedBy {
  /** Told how many nodes were selected; what it answers is told each node's result. */
  onResult?: (total: number) => (result: NodeResult) => void;
}

/**
 * Loads, selects, audits: each node's entry goes to a spool as it finishes, never all in memory;
 * the history (when the source names one) gives each node's cause request and annotates its
 * entry, and the unaudited budget is judged over the spool.
 */
export async function runSpooledAudit(
  options: SpooledAuditOptions,
  reach: Reach = {},
): Promise<JudgedReport> {
  // Nodes whose connection took more than one try: few, kept by name for the notice.
  const tries = new Map<string, number>();
  const onResult = (total: number) => {
    const inner = options.onResult?.(total);
    return (result: NodeResult) => {
      if ((result.tries ?? 1) > 1) tries.set(result.name, result.tries!);
      inner?.(result);
    };
  };
  const { run, fleet, connections } = await fleetRun(options, onResult, reach);
  const judge = await unauditedJudge(options.unaudited, options.warn, fleet.settings.audit);
  if (judge.history)
    run.causeRequest = await historyRequests(judge.history, fleet, run.manifestRevision);
  const spooled = await spoolFleet(run).finally(() => connections?.close());
  if (connections)
    for (const line of await throttlingNotices(run.nodes, tries, connections.jumpHostOf))
      options.say?.(line);
  try {
    if (options.categories) spooled.head.categories = options.categories;
    return await judgeSpooled(judge, spooled);
  } catch (error) {
    spooled.spool.close();
    throw error;
  }
}

/**
 * Each node's cause request from the audit history: since its last audit, and against what that
 * audit declared (a drift back to it is a pending rollout).
 */
async function historyRequests(
  history: AuditHistory,
  fleet: Fleet,
  revision: string | null,
): Promise<(node: LoadedNode) => CauseRequest> {
  // A rollout's time: the commit audited, which carries the change.
  const revisionAt = revision === null ? undefined : await revisionTime(fleet.dir, revision);
  return (node) => {
    const last = lastAuditOf(history, node.name);
    const before = last.declared !== undefined && {
      before: {
        prints: splitPrints(last.declared),
        ...(last.revision !== undefined && { revision: last.revision }),
      },
    };
    return {
      ...(last.at !== undefined && { since: last.at }),
      history: {
        revision,
        ...(revisionAt !== undefined && { revisionAt }),
        ...before,
        seen: (fingerprint) => {
          const seen = history.drift.get(fingerprint);
          return seen?.node === node.name ? seen : undefined;
        },
      },
    };
  };
}
