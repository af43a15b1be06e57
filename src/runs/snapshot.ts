// A snapshot run: each node's live state as a node spec, the declared files and units taken at
// their live state; `adopt` takes its hosts' snapshots the same way.
import { nodeLimit } from "../audit/fleet.js";
import { holdLauncher } from "../transport/launcher.js";
import {
  defaultAuditSettings,
  nodeFailure,
  readSection,
  runProbe,
  type AuditSettings,
} from "../audit/node.js";
import type { Latent } from "../domains/cause.js";
import {
  DEFAULT_AUDIT_INTERVAL_MS,
  declaredFor,
  within,
  type CompareTime,
} from "../domains/domain.js";
import { latentOnly } from "../domains/latent-words.js";
import { DOMAINS, type AnyDomain, type DomainName } from "../domains/registry.js";
import { DEFAULT_SNAPSHOT_OPTIONS, type SnapshotOptions } from "../domains/snapshot-options.js";
import { ManifestEditError } from "../errors.js";
import type { LoadedNode } from "../manifest/load.js";
import { parseContext } from "../probe/script.js";
import { acceptFinding } from "../propose/accept.js";
import { willBecome } from "../report/formats/common.js";
import { isPlainMap, pathKey, pathOfKey, type SpecPath } from "../spec-path.js";
import { visible } from "../text/escape.js";
import { stringifyPortable } from "../text/yaml-scalar.js";
import { localTransport } from "../transport/local.js";
import { sharedSshSessions, type SharedSshSessions } from "../transport/session-gate.js";
import { sshTransport, type SshOptions } from "../transport/ssh.js";
import type { Transport } from "../transport/transport.js";
import { fleetAuditSettings, fleetDriftRules, fleetSshOptions } from "./audit.js";
import { loadManifests, localNode, selectNodes, type ManifestSource } from "./fleet.js";

/** Which nodes a snapshot takes, how it reaches them, and how it declares what it finds. */
export interface SnapshotRunOptions {
  source: ManifestSource;
  /** Node names or globs (`--node`); with `local`, the one node this machine is. */
  nodes: readonly string[] | undefined;
  local: boolean;
  categories: DomainName[] | undefined;
  sshConfig: string | undefined;
  /** Seconds; absent, each node's ssh.timeout. */
  timeout: number | undefined;
  concurrency: number;
  packages: SnapshotOptions["packages"];
  ephemeralAsRange: boolean;
  /** Told when a jump host's nodes connect one by one after all, and why. */
  say?: (text: string) => void;
}

/** One node's snapshot as node-spec text, or why it was not taken. */
export interface SnapshotOutcome {
  text?: string;
  failure?: string;
}

export interface SnapshotRequest extends Partial<SnapshotOptions> {
  /** The node's effective spec: its files and units are taken at their live state. */
  declared?: Record<string, unknown>;
  /**
   * How often scheduled audits run (`audit.interval`), in milliseconds, when the fleet says: what
   * a value must still hold at (a certificate's validity left) to be declared without a latent note.
   */
  auditInterval?: number;
}

/**
 * The declaration with every finding's live state accepted; what cannot be written stays declared,
 * with the reason.
 */
function acceptAll(
  domain: AnyDomain,
  declared: unknown,
  live: unknown,
  unknown: string[],
  when: CompareTime,
): unknown {
  let state = declared;
  for (const finding of domain.compare(declared, live, when)) {
    // It holds now: nothing to accept (its note comes from latentIn).
    if (latentOnly(finding)) continue;
    try {
      state = acceptFinding(domain, state, finding, when.now);
    } catch (error) {
      if (!(error instanceof ManifestEditError)) throw error;
      unknown.push(`${domain.name}: ${error.message}; kept as declared`);
    }
  }
  return state;
}

/** What the snapshot may declare of `accepted`: all of it, unless the domain keeps less. */
const keptOf = (domain: AnyDomain, accepted: unknown, live: unknown): unknown =>
  domain.snapshotKeeps ? domain.snapshotKeeps(accepted, live) : accepted;

/** What the next reboot or restart changes in a declared value, by the value's `pathKey`. */
export type LatentValues = Map<string, Latent>;

/**
 * Where a finding's path is in the snapshot's YAML: an item of a list declared per item (a
 * certificate by path, a unit by name) by its index in the list.
 */
function yamlPath(domain: AnyDomain, value: unknown, path: SpecPath): SpecPath {
  const [item, ...rest] = within(domain, path);
  const key = domain.listKey;
  if (key === undefined || !Array.isArray(value) || item === undefined) return path;
  const index = value.findIndex((each) => isPlainMap(each) && each[key] === item);
  return index < 0 ? path : [...domain.specPath, index, ...rest];
}

/** The latent findings on a snapshot's own value: what it declares that will not hold. */
function latentIn(
  domain: AnyDomain,
  value: unknown,
  live: unknown,
  into: LatentValues,
  when: CompareTime,
): void {
  const declared = domain.schema.safeParse(value);
  if (!declared.success) return;
  for (const finding of domain.compare(declared.data, live, when))
    if (finding.latent) into.set(pathKey(yamlPath(domain, value, finding.path)), finding.latent);
}

/**
 * Live state as a node spec: each domain's snapshot at its spec path, and for a node's declared
 * files and units, the declaration with its live state accepted. Unknown domains are left out;
 * `latent` has each declared value the next reboot or restart changes.
 */
export async function snapshotSpec(
  transport: Transport,
  domains: readonly AnyDomain[],
  settings: AuditSettings = defaultAuditSettings(),
  request: SnapshotRequest = {},
): Promise<{
  spec: Record<string, unknown>;
  unknown: string[];
  latent: LatentValues;
  /** What each domain left out on purpose under the options (`Domain.snapshotLeftOut`). */
  leftOut: { domain: string; count: number; unknown?: string }[];
}> {
  const { declared: nodeSpec, auditInterval, ...chosen } = request;
  const options = { ...DEFAULT_SNAPSHOT_OPTIONS, ...chosen };
  const taken = domains.filter((d) => !d.skipsSnapshot?.(options));
  const declaredOf = (domain: AnyDomain) => {
    if (!domain.snapshotsDeclared || !nodeSpec) return undefined;
    const declared = declaredFor(domain, nodeSpec);
    return declared !== undefined && domain.snapshotAsks ? domain.snapshotAsks(declared) : declared;
  };
  const probe = await runProbe(
    transport,
    taken.map((domain) => ({ domain, declared: declaredOf(domain) })),
    settings,
  );
  const parse = parseContext(probe.nonce);
  const now = Date.now();
  const when = { now, nextAudit: now + (auditInterval ?? DEFAULT_AUDIT_INTERVAL_MS) };
  const spec: Record<string, unknown> = {};
  const unknown: string[] = [];
  const latent: LatentValues = new Map();
  const leftOut: { domain: string; count: number; unknown?: string }[] = [];
  for (const domain of taken) {
    const read = readSection(probe, domain, parse);
    if ("unknown" in read) {
      unknown.push(`${domain.name}: ${read.unknown}`);
      continue;
    }
    for (const reason of read.partly) unknown.push(`${domain.name}: ${reason}`);
    const declared = declaredOf(domain);
    const value =
      declared === undefined
        ? domain.snapshot(read.live, options)
        : keptOf(domain, acceptAll(domain, declared, read.live, unknown, when), read.live);
    const left = declared === undefined ? domain.snapshotLeftOut?.(read.live, options) : undefined;
    if (left) leftOut.push({ domain: domain.name, ...left });
    if (value === undefined) continue;
    latentIn(domain, value, read.live, latent, when);
    let level = spec;
    for (const part of domain.specPath.slice(0, -1))
      level = (level[part] ??= {}) as Record<string, unknown>;
    level[domain.specPath.at(-1)!] = value;
  }
  return { spec, unknown, latent, leftOut };
}

// The README has the snapshot written to fleet-manifests/nodes/<host>.yaml: the schema is two
// folders up.
const SCHEMA_HEADER = "# yaml-language-server: $schema=../../schemas/node-spec.schema.json";

/** Each latent value's comment at its path: "will become 1 at reboot: FILE:LINE". */
export function latentComments(latent: LatentValues): { path: SpecPath; text: string }[] {
  return [...latent].map(([key, value]) => ({ path: pathOfKey(key), text: willBecome(value) }));
}

/**
 * The snapshot as a node-spec file: a comment header (host text escaped, one line each), then the
 * spec, each value the next reboot or restart changes with a comment saying so.
 */
export function snapshotText(
  title: string,
  snapshot: { spec: Record<string, unknown>; unknown: string[]; latent: LatentValues },
  takenAt: Date,
): string {
  const header = [
    SCHEMA_HEADER,
    `# Live state of ${visible(title)}, taken ${takenAt.toISOString()} by quartermaster snapshot.`,
    // A reason is host text: one escaped line, so no CR or line separator starts a YAML key.
    ...snapshot.unknown.map((u) => `# not shown by this host: ${visible(u)}`),
  ].join("\n");
  return `${header}\n${stringifyPortable(snapshot.spec, latentComments(snapshot.latent))}`;
}

/** What a node's own file says about reaching it: kept in its snapshot, so the snapshot can replace it. */
export function connectionKeys(node: LoadedNode): Record<string, unknown> {
  const own = node.layers.at(-1)?.value ?? {};
  return Object.fromEntries(
    (["host", "groups", "ssh"] as const).flatMap((key) =>
      own[key] === undefined ? [] : [[key, own[key]]],
    ),
  );
}

interface SnapshotTarget {
  title: string;
  /** The node declared in the manifests (none for a bare `--local`). */
  node?: LoadedNode;
  transport: Transport;
  settings: AuditSettings;
  declared?: Record<string, unknown>;
  kept?: Record<string, unknown>;
}

/** The nodes --node (names and globs) or --local name, and how each is reached. */
async function snapshotTargets(
  values: SnapshotRunOptions,
  timeoutMs: number | undefined,
): Promise<{ targets: SnapshotTarget[]; sessions?: SharedSshSessions; auditInterval?: number }> {
  const overrides = timeoutMs ? { timeoutMs } : {};
  // --local alone is this machine, declared or not (a first snapshot bootstraps its node); a tree
  // named is used.
  if (
    values.local &&
    !values.nodes &&
    values.source.manifests === undefined &&
    values.source.repo === undefined
  )
    return {
      targets: [
        {
          title: "this machine",
          transport: localTransport("localhost"),
          settings: defaultAuditSettings(overrides),
        },
      ],
    };
  const fleet = await loadManifests(values.source);
  const nodes = values.local
    ? [localNode(fleet, values.nodes)]
    : selectNodes(fleet, values.nodes, "--node");
  const settings = fleetAuditSettings(fleet, overrides);
  const ssh: SshOptions | undefined = values.local
    ? undefined
    : await fleetSshOptions(fleet, values.sshConfig);
  // Over ssh, as audit reaches them: one connection per jump host, its sessions limited.
  const sessions = ssh && sharedSshSessions(ssh, 1, values.say);
  const targets = nodes.map((node) => ({
    node,
    title: node.name,
    transport: ssh
      ? sshTransport(node, {
          ...ssh,
          ...(!timeoutMs && node.ssh.timeout && { timeoutMs: node.ssh.timeout * 1000 }),
          ...(sessions && { channels: sessions.channels }),
        })
      : localTransport(node.name),
    settings,
    declared: node.spec,
    kept: connectionKeys(node),
  }));
  const { auditInterval } = fleetDriftRules(fleet);
  return {
    targets,
    ...(sessions && { sessions }),
    ...(auditInterval !== undefined && { auditInterval }),
  };
}

/** Each node's snapshot, in the order the options select them. */
export async function runSnapshot(config: SnapshotRunOptions): Promise<SnapshotOutcome[]> {
  const { categories, packages } = config;
  const domains = DOMAINS.filter((d) => !categories || categories.includes(d.name));
  const timeoutMs = config.timeout === undefined ? undefined : config.timeout * 1000;
  const { targets, sessions, auditInterval } = await snapshotTargets(config, timeoutMs);
  const limit = nodeLimit(config.concurrency, sessions);
  // Every node's session is a job of the process launcher: it is kept between them, as audit keeps it.
  const release = holdLauncher();
  const takenAt = new Date();
  const take = async (target: SnapshotTarget): Promise<SnapshotOutcome> => {
    try {
      const snapshot = await snapshotSpec(target.transport, domains, target.settings, {
        packages,
        ephemeralAsRange: config.ephemeralAsRange,
        declared: target.declared,
        ...(auditInterval !== undefined && { auditInterval }),
      });
      const spec = { ...target.kept, ...snapshot.spec };
      return { text: snapshotText(target.title, { ...snapshot, spec }, takenAt) };
    } catch (error) {
      return { failure: `${target.title}: ${nodeFailure(target.title, error).message}` };
    }
  };
  // A bare --local has one target and no node: this machine, nothing to limit.
  return Promise.all(
    targets.map((target) => (target.node ? limit(target.node, () => take(target)) : take(target))),
  ).finally(() => {
    release();
    return sessions?.close();
  });
}
