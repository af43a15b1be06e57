import { stat } from "node:fs/promises";
import path from "node:path";
import v8 from "node:v8";
import {
  auditFleet,
  parseShard,
  shardOf,
  spoolFleet,
  type FleetRun,
  type Shard,
} from "../../audit/fleet.js";
import { defaultAuditSettings, type AuditSettings } from "../../audit/node.js";
import type { DomainName } from "../../domains/registry.js";
import type { DriftContext } from "../../drift/drift.js";
import { UsageError } from "../../errors.js";
import type { Fleet, LoadedNode } from "../../manifest/load.js";
import { manifestDirty, manifestRevision } from "../../manifest/revision.js";
import { MAX_SHARDS, ReportTally, type NodeResult, type Report } from "../../report/schema.js";
import { localTransport } from "../../transport/local.js";
import { sshSessionGates } from "../../transport/session-gate.js";
import {
  DEFAULT_CONNECT_TIMEOUT_SECONDS,
  sshTransport,
  type SshOptions,
} from "../../transport/ssh.js";
import type { Transport } from "../../transport/transport.js";
import { exitCode } from "../exit.js";
import { switchFlag, checkedFlag, parseFlags, type Config } from "../flags.js";
import {
  annotated,
  checkUnauditedFlags,
  judgeBudget,
  UNAUDITED_FLAGS,
  unauditedJudge,
} from "../unaudited.js";
import {
  CONCURRENCY_FLAG,
  DEFAULT_TIMEOUT_SECONDS,
  loadManifests,
  localNode,
  MANIFEST_FLAGS,
  SELECT_FLAGS,
  selectNodes,
  SSH_CONFIG_FLAG,
  TIMEOUT_FLAG,
  type ManifestConfig,
} from "../options.js";
import { checkOut, OUTPUT_FLAGS, writeReportStream } from "../output.js";
import { Progress } from "../progress.js";

/** `k/n`: one shard of the fleet (parseShard). */
const SHARD_FLAG = checkedFlag(
  "K/N",
  "audit only shard K of N (for a matrix of jobs; join with merge-reports)",
  (given) => {
    const shard = parseShard(given);
    if (!shard)
      throw new UsageError(`--shard takes k/n with 1 <= k <= n <= ${MAX_SHARDS}, not "${given}"`);
    return shard;
  },
);

/** The flags of an audit run and its report, shared by `diff`. */
export const AUDIT_FLAGS = {
  ...MANIFEST_FLAGS,
  ...SELECT_FLAGS,
  ...OUTPUT_FLAGS,
  concurrency: CONCURRENCY_FLAG,
  timeout: TIMEOUT_FLAG,
  "ssh-config": SSH_CONFIG_FLAG,
  shard: SHARD_FLAG,
};

const AUDIT_COMMAND_FLAGS = {
  ...AUDIT_FLAGS,
  ...UNAUDITED_FLAGS,
  // audit's own: diff and snapshot share the other flags but not this exit policy.
  strict: switchFlag(
    "exit with bit 4 when a declared item could not be read (unknown), as for a node not audited",
  ),
};

type AuditConfig = Config<typeof AUDIT_COMMAND_FLAGS>;

/** What an audit run needs to know: which nodes, how to reach them, which domains. */
export interface AuditRunConfig extends ManifestConfig {
  nodes: readonly string[] | undefined;
  category: DomainName[] | undefined;
  local: boolean;
  concurrency: number;
  /** Seconds; absent, each node's ssh.timeout, else DEFAULT_TIMEOUT_SECONDS. */
  timeout: number | undefined;
  "ssh-config": string | undefined;
  shard: Shard | undefined;
}

/** The checks between flags of an audit run, before anything is read. */
export function checkAuditRun(config: AuditRunConfig): void {
  if (config.shard && config.local)
    throw new UsageError("--shard splits a fleet; it does not go with --local");
}

/** `audit`'s argv as its config: every flag read and checked, nothing read or opened yet. */
function auditConfig(argv: string[]): AuditConfig {
  const { config } = parseFlags("audit", argv, AUDIT_COMMAND_FLAGS);
  checkAuditRun(config);
  checkUnauditedFlags(config);
  return config;
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
  };
}

/**
 * How this run reaches nodes over ssh: `--ssh-config`, and `known_hosts` beside the manifests
 * when the repository keeps one (else the user's own, through ssh's usual lookup).
 */
export async function fleetSshOptions(
  fleet: Fleet,
  configFile: string | undefined,
): Promise<SshOptions> {
  if (configFile !== undefined && !(await stat(configFile).catch(() => undefined))?.isFile()) {
    throw new UsageError(`--ssh-config: no such file: ${configFile}`);
  }
  const knownHosts = path.join(fleet.dir, "known_hosts");
  const knownHostsFile = (await stat(knownHosts).catch(() => undefined))?.isFile()
    ? knownHosts
    : undefined;
  return {
    ...(configFile !== undefined && { configFile: path.resolve(configFile) }),
    ...(knownHostsFile && { knownHostsFile }),
    connectTimeoutSeconds: DEFAULT_CONNECT_TIMEOUT_SECONDS,
  };
}

/**
 * How the audit reaches each node; the CLI's own (ssh, or `--local`) unless a caller supplies one.
 */
export interface Reach {
  transportFor?: (node: LoadedNode) => Transport;
}

/** Loads and selects the nodes, and what auditing them takes. */
async function fleetRun(
  config: AuditRunConfig,
  onResult: ((total: number) => (r: NodeResult) => void) | undefined,
  reach: Reach,
): Promise<{ fleet: Fleet; run: FleetRun }> {
  const fleet = await loadManifests(config);
  const { shard, category: categories } = config;
  let nodes: LoadedNode[] = config.local
    ? [localNode(fleet, config.nodes)]
    : selectNodes(fleet, config.nodes);
  if (shard) nodes = nodes.filter((n) => shardOf(n.name, shard.count) === shard.index);
  const settings = fleetAuditSettings(fleet, {
    timeoutMs: (config.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000,
    ...(categories && { categories }),
  });
  const ssh = await fleetSshOptions(fleet, config["ssh-config"]);
  // --timeout wins; otherwise a node's own ssh.timeout, then the default.
  const nodeTimeoutMs = (node: LoadedNode) =>
    config.timeout === undefined && node.ssh.timeout ? node.ssh.timeout * 1000 : undefined;
  const transportFor = (node: LoadedNode): Transport =>
    reach.transportFor?.(node) ??
    (config.local
      ? localTransport(node.name)
      : sshTransport(node, { ...ssh, timeoutMs: nodeTimeoutMs(node) }));
  const run: FleetRun = {
    nodes,
    transportFor,
    settings,
    drift: { ...fleetDriftRules(fleet), now: new Date() },
    concurrency: config.concurrency,
    // Sessions through one jump host (or one sshd) stay under its MaxStartups, all shards together.
    ...(!config.local &&
      !reach.transportFor && {
        sessions: sshSessionGates(ssh, shard?.count),
      }),
    manifestRevision: await manifestRevision(fleet.dir),
    manifestDirty: await manifestDirty(fleet.dir),
    shard,
    onResult: onResult?.(nodes.length),
  };
  return { fleet, run };
}

/** Loads, selects, audits, the report whole in memory: shared by `diff` and `review`. */
export async function runAudit(config: AuditRunConfig): Promise<{ fleet: Fleet; report: Report }> {
  const { fleet, run } = await fleetRun(config, undefined, {});
  const report = await auditFleet(run);
  if (config.category) report.categories = config.category;
  return { fleet, report };
}

function auditOutcome(
  tally: ReportTally,
  strict: boolean,
  budget?: Report["unauditedBudget"],
): number {
  const { driftFound, unauditedNodes, unknownItems } = tally;
  const overUnauditedBudget = budget?.over !== undefined;
  return exitCode({ driftFound, unauditedNodes, unknownItems, strict, overUnauditedBudget });
}

export function auditExitCode(report: Report, strict = false): number {
  return auditOutcome(ReportTally.of(report.nodes), strict, report.unauditedBudget);
}

/**
 * A fleet audit keeps little alive (the manifests; entries wait in the spool) but makes much
 * short-lived garbage per node, and V8 lets the heap grow to about four times what survived its
 * last full collection before collecting again: at 10,000 nodes that slack was most of the peak.
 * Growing by half instead keeps the peak near the live data, for a few more full collections.
 */
export function boundHeapGrowth(): void {
  v8.setFlagsFromString("--heap-growing-percent=50");
}

export async function auditCommand(argv: string[], reach: Reach = {}): Promise<number> {
  boundHeapGrowth();
  const config = auditConfig(argv);
  // An unusable --out fails before anything is audited.
  await checkOut(config.out);
  let progress: Progress | undefined;
  const { run, fleet } = await fleetRun(
    config,
    (total) => {
      if (total < 2) return () => {};
      progress = new Progress(total);
      return (result) => progress!.update(result);
    },
    reach,
  );
  // Entries go to a spool as nodes finish, and from it to the report: never all in memory.
  const judge = await unauditedJudge(config, fleet.settings.audit);
  const { head, spool } = await spoolFleet(run);
  try {
    progress?.finish();
    if (config.category) head.categories = config.category;
    const budget = await judgeBudget(judge, head.startedAt, spool.entries());
    if (budget) head.unauditedBudget = budget;
    const annotate = annotated(judge, head.startedAt);
    await writeReportStream(head, () => mapEntries(spool.entries(), annotate), config);
    return auditOutcome(spool.counts, config.strict, budget);
  } finally {
    await spool.close();
  }
}

async function* mapEntries(
  entries: AsyncIterable<NodeResult>,
  map: (node: NodeResult) => NodeResult,
): AsyncGenerator<NodeResult> {
  for await (const entry of entries) yield map(entry);
}
