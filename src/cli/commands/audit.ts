import { stat } from "node:fs/promises";
import path from "node:path";
import v8 from "node:v8";
import { auditFleet, parseShard, shardOf, spoolFleet, type FleetRun } from "../../audit/fleet.js";
import { defaultAuditSettings, type AuditSettings } from "../../audit/node.js";
import type { DomainName } from "../../domains/domain.js";
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
import { annotated, judgeBudget, UNAUDITED_OPTIONS, unauditedJudge } from "../unaudited.js";
import {
  loadManifests,
  localNode,
  MANIFEST_OPTIONS,
  OUTPUT_OPTIONS,
  parse,
  parseCategories,
  parseWholeNumber,
  SELECT_OPTIONS,
  selectNodes,
} from "../options.js";
import { checkOut, formatName, writeReportStream } from "../output.js";
import { Progress } from "../progress.js";

export const AUDIT_OPTIONS = {
  ...MANIFEST_OPTIONS,
  ...SELECT_OPTIONS,
  ...OUTPUT_OPTIONS,
  concurrency: { type: "string" },
  timeout: { type: "string" },
  "ssh-config": { type: "string" },
  shard: { type: "string" },
} as const;

export const DEFAULT_CONCURRENCY = 32;

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

type AuditValues = ReturnType<typeof parse<typeof AUDIT_OPTIONS>>["values"];

/**
 * How the audit reaches each node; the CLI's own (ssh, or `--local`) unless a caller supplies one.
 */
export interface Reach {
  transportFor?: (node: LoadedNode) => Transport;
}

/** Loads and selects the nodes, and what auditing them takes. */
async function fleetRun(
  values: AuditValues,
  onResult: ((total: number) => (r: NodeResult) => void) | undefined,
  reach: Reach,
): Promise<{ fleet: Fleet; run: FleetRun; categories: DomainName[] | undefined }> {
  const fleet = await loadManifests(values);
  const categories = parseCategories(values.category);
  const shard = values.shard === undefined ? undefined : parseShard(values.shard);
  if (values.shard !== undefined && !shard)
    throw new UsageError(
      `--shard takes k/n with 1 <= k <= n <= ${MAX_SHARDS}, not "${values.shard}"`,
    );
  if (shard && values.local)
    throw new UsageError("--shard splits a fleet; it does not go with --local");
  let nodes: LoadedNode[] = values.local
    ? [localNode(fleet, values.nodes)]
    : selectNodes(fleet, values.nodes);
  if (shard) nodes = nodes.filter((n) => shardOf(n.name, shard.count) === shard.index);
  const timeoutSeconds = parseWholeNumber("timeout", values.timeout, 60);
  const settings = fleetAuditSettings(fleet, {
    timeoutMs: timeoutSeconds * 1000,
    ...(categories && { categories }),
  });
  const ssh = await fleetSshOptions(fleet, values["ssh-config"]);
  // --timeout wins; otherwise a node's own ssh.timeout, then the default.
  const nodeTimeoutMs = (node: LoadedNode) =>
    values.timeout === undefined && node.ssh.timeout ? node.ssh.timeout * 1000 : undefined;
  const transportFor = (node: LoadedNode): Transport =>
    reach.transportFor?.(node) ??
    (values.local
      ? localTransport(node.name)
      : sshTransport(node, { ...ssh, timeoutMs: nodeTimeoutMs(node) }));
  const run: FleetRun = {
    nodes,
    transportFor,
    settings,
    drift: { ...fleetDriftRules(fleet), now: new Date() },
    concurrency: parseWholeNumber("concurrency", values.concurrency, DEFAULT_CONCURRENCY),
    // Sessions through one jump host (or one sshd) stay under its MaxStartups.
    ...(!values.local &&
      !reach.transportFor && {
        sessions: sshSessionGates(ssh),
      }),
    manifestRevision: await manifestRevision(fleet.dir),
    manifestDirty: await manifestDirty(fleet.dir),
    shard,
    onResult: onResult?.(nodes.length),
  };
  return { fleet, run, categories };
}

/** Loads, selects, audits, the report whole in memory: shared by `diff` and `review`. */
export async function runAudit(values: AuditValues): Promise<{ fleet: Fleet; report: Report }> {
  const { fleet, run, categories } = await fleetRun(values, undefined, {});
  const report = await auditFleet(run);
  if (categories) report.categories = categories;
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
  // --strict is audit's own: diff and snapshot share the other options but not this exit policy.
  const { values } = parse("audit", argv, {
    ...AUDIT_OPTIONS,
    ...UNAUDITED_OPTIONS,
    strict: { type: "boolean" },
  } as const);
  // A wrong --format or an unusable --out fails before anything is audited.
  formatName(values.format);
  await checkOut(values.out);
  let progress: Progress | undefined;
  const { run, categories, fleet } = await fleetRun(
    values,
    (total) => {
      if (total < 2) return () => {};
      progress = new Progress(total);
      return (result) => progress!.update(result);
    },
    reach,
  );
  // Entries go to a spool as nodes finish, and from it to the report: never all in memory.
  const judge = await unauditedJudge(values, fleet.settings.audit);
  const { head, spool } = await spoolFleet(run);
  try {
    progress?.finish();
    if (categories) head.categories = categories;
    const budget = await judgeBudget(judge, head.startedAt, spool.entries());
    if (budget) head.unauditedBudget = budget;
    const annotate = annotated(judge, head.startedAt);
    await writeReportStream(head, () => mapEntries(spool.entries(), annotate), values);
    return auditOutcome(spool.counts, values.strict === true, budget);
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
