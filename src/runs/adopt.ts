// Adoption: an inventory in, a layered manifest tree out. Reads the inventory (pure readers),
// takes each host's trusted key and snapshot in parallel, factors the snapshots into fleet, group
// and node layers (pure), checks through the real loader that every node's layers merge back to
// its snapshot, and only then writes the files that do not exist yet.
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expandAsked } from "../adopt/globs.js";
import { jumpHostKeys, trustedKeys, type JumpKeys } from "../adopt/host-keys.js";
import {
  planAdoption,
  readAdjacentVars,
  readInventorySources,
  type HostToAdopt,
} from "../adopt/inventory/index.js";
import { MAX_INVENTORY_BYTES, readInventoryTree } from "../adopt/inventory/sources.js";
import { nodeLimit } from "../audit/fleet.js";
import { holdLauncher } from "../transport/launcher.js";
import { nodeFailure } from "../audit/node.js";
import { DOMAINS, type AnyDomain } from "../domains/registry.js";
import type { SnapshotOptions } from "../domains/snapshot-options.js";
import { InputFileError, UsageError } from "../errors.js";
import { loadFleet, type LoadedNode } from "../manifest/load.js";
import { NodeSpec } from "../manifest/schema.js";
import type { NodeResult } from "../report/schema.js";
import { sharedSshSessions } from "../transport/session-gate.js";
import {
  DEFAULT_CONNECT_TIMEOUT_SECONDS,
  sshTransport,
  type JumpChannels,
  type SshOptions,
} from "../transport/ssh.js";
import { valueAt, type PlainMap } from "../spec-path.js";
import { DEFAULT_TIMEOUT_SECONDS, fleetAuditSettings } from "./audit.js";
import { snapshotSpec, type LatentValues } from "./snapshot.js";
import { stageLayers, writeTree } from "./adopt-tree.js";
import { appendToFile, checkedExtension, notYetDeclared, treeFiles } from "./adopt-extend.js";

/** What to adopt, into which tree, how hosts are reached and how their state is declared. */
export interface AdoptOptions {
  inventory: string;
  /** The manifest tree written into. */
  manifests: string;
  sshConfig: string | undefined;
  knownHosts: string | undefined;
  concurrency: number;
  /** Seconds per host. */
  timeout: number | undefined;
  packages: SnapshotOptions["packages"];
  /** Packages declared at their live version whatever `packages` says. */
  pin?: ReadonlySet<string>;
  /** Config files (paths) and systemd units (names) to declare on every host, at their live state. */
  declare?: { files: readonly string[]; units: readonly string[] };
  ephemeralAsRange: boolean;
  /** A line for the operator, as adoption goes. */
  say: (line: string) => void;
  /** A progress display for this many hosts, if one is shown. */
  progress?: (total: number) => { update(result: NodeResult): void; finish(): void } | undefined;
}

/** What adoption did: the files written (relative to the tree) and the hosts it left out, why. */
export interface Adoption {
  written: string[];
  adopted: string[];
  inventoryHosts: number;
  alreadyDeclared: number;
  leftOut: string[];
  /** Values declared live that the next reboot or restart changes, each commented in the tree. */
  latent: number;
  /** Files already in the tree that took `--files` or `--units` their nodes did not declare yet. */
  extended: string[];
}

async function readInput(flag: string, file: string | undefined): Promise<string | undefined> {
  if (file === undefined) return undefined;
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) throw new UsageError(`--${flag}: no such file: ${file}`);
  if (info.size > MAX_INVENTORY_BYTES)
    throw new InputFileError(file, `larger than ${MAX_INVENTORY_BYTES} bytes`);
  return readFile(file, "utf8");
}

/** The node a host becomes, as the ssh transport takes it: `ssh` as its layers merge it. */
const asNode = (host: HostToAdopt, ssh: LoadedNode["ssh"] = host.ssh): LoadedNode => ({
  name: host.name,
  host: host.host ?? host.name,
  file: `nodes/${host.name}.yaml`,
  layers: [],
  groups: host.groups,
  spec: {},
  ssh,
});

/** Adopts the inventory's hosts into the tree; what was written, and which hosts were left out. */
export async function runAdopt(config: AdoptOptions): Promise<Adoption> {
  const { say } = config;
  const timeoutMs = (config.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
  const sshFiles = await readSshFiles(config);
  const inventoryTree = await readInventoryTree(config.inventory);
  const adjacent = readAdjacentVars(inventoryTree, config.inventory);
  const plan = planAdoption(config.inventory, readInventorySources(inventoryTree), adjacent);
  const tree = path.resolve(config.manifests);

  for (const [name, count] of plan.ignored)
    say(
      `ignored inventory variable ${name} (${count} host${count === 1 ? "" : "s"}): no manifest key`,
    );
  for (const [name, why] of plan.becomeUnsupported) say(`host ${name}: ${why}`);
  for (const [name, count] of plan.templated)
    say(
      `left out inventory variable ${name} (${count} host${count === 1 ? "" : "s"}): its value is a template ({{ … }}) Quartermaster does not evaluate`,
    );

  for (const [name, count] of plan.vaulted)
    say(
      `left out inventory variable ${name} (${count} host${count === 1 ? "" : "s"}): vault-encrypted, never decrypted; not needed to connect`,
    );
  for (const file of adjacent.vaultFiles)
    say(
      `left out ${file}: vault-encrypted as a whole, never decrypted; none of its variables is read`,
    );
  const named = plan.hosts.filter((h) => h.ssh.identity_file !== undefined).length;
  if (named)
    say(
      `identity files: put them in the runner's ssh config or the workflow's SSH key secret (${named} host${named === 1 ? "" : "s"} name one; no path of this machine is written into the tree)`,
    );

  const { existing, fixedBase, existingGroups } = await readExistingTree(tree, plan.groups);
  const declared = new Set(existing?.nodes.map((n) => n.name));
  const hosts = plan.hosts.filter((h) => !declared.has(h.name));
  // In an existing tree, a new node's snapshot takes the files and units its groups declare.
  const stage = await mkdtemp(path.join(os.tmpdir(), "quartermaster-adopt-"));
  const staged = await stageLayers(
    stage,
    { tree, fixedBase, parents: plan.groups, existingGroups },
    hosts,
  ).finally(() => rm(stage, { recursive: true, force: true }));
  const settings = existing
    ? fleetAuditSettings(existing, { timeoutMs })
    : fleetAuditSettings({ dir: tree, settings: {}, nodes: [], tickets: [] }, { timeoutMs });
  const { keys, snapshots, latent, failed, leftOnPurpose, unread } = await snapshotHosts(hosts, {
    config,
    sshFiles,
    staged,
    settings,
  });
  sayLeftOnPurpose(leftOnPurpose, say);
  sayUnread(unread, say);
  const leftOut = [...failed].map(([name, reason]) => `${name}: ${reason}; not adopted`);

  for (const [name, reason] of plan.unreadable) leftOut.push(`${name}: ${reason}; not adopted`);
  const candidates = hosts.filter((h) => snapshots.has(h.name));
  const result = candidates.length
    ? await writeTree({
        tree,
        fixedBase,
        existingGroups,
        hosts: candidates,
        snapshots,
        latent,
        parents: plan.groups,
        keys,
        leftOut,
      })
    : { written: [], adopted: [] };
  const extended = existing
    ? await extendDeclared(plan.hosts, existing.nodes, tree, { config, sshFiles, settings })
    : { written: [], said: new Map<string, Said>() };
  // One line per host already declared: what it took, why it could not, or that it is as it was.
  const byName = new Map(existing?.nodes.map((n) => [n.name, n]));
  const where = existing && treeFiles(tree, existing.nodes);
  for (const host of plan.hosts) {
    const node = byName.get(host.name);
    if (!node) continue;
    const said = extended.said.get(host.name);
    if (said?.failed) leftOut.push(said.line);
    else say(said?.line ?? `${host.name}: already declared (${where!.node(node)}), left as it is`);
  }
  return {
    extended: extended.written,
    written: result.written,
    adopted: result.adopted,
    inventoryHosts: plan.hosts.length + plan.unreadable.size,
    alreadyDeclared: plan.hosts.length - hosts.length,
    leftOut: leftOut.sort(),
    latent: result.adopted.reduce((sum, name) => sum + (latent.get(name)?.size ?? 0), 0),
  };
}

/** What adopt says of a host the tree already declares, and whether that is a failure. */
interface Said {
  line: string;
  failed?: true;
}

/**
 * The hosts the tree already declares, when `--files` or `--units` name some they do not declare
 * yet: each one's live state of those, factored into the tree's layers (`planExtension`), checked
 * in a copy of the tree loaded as audit loads it, then appended. The files written, and a line for
 * each host that took something or could not be snapshot.
 */
async function extendDeclared(
  planned: readonly HostToAdopt[],
  nodes: readonly LoadedNode[],
  tree: string,
  job: Pick<SnapshotJob, "config" | "sshFiles" | "settings">,
): Promise<{ written: string[]; said: Map<string, Said> }> {
  const said = new Map<string, Said>();
  const asked = job.config.declare;
  if (!asked || (!asked.files.length && !asked.units.length)) return { written: [], said };
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const where = treeFiles(tree, nodes);
  const askedSpec = withAsked(undefined, asked)!;
  const hosts = planned.filter((h) => {
    const node = byName.get(h.name);
    return node && Object.keys(notYetDeclared(node, askedSpec)).length;
  });
  const taken = await snapshotHosts(hosts, {
    ...job,
    staged: { base: new Map(), ssh: new Map(hosts.map((h) => [h.name, byName.get(h.name)!.ssh])) },
    domains: DOMAINS.filter((d) => valueAt(askedSpec, d.specPath) !== undefined),
  });
  sayUnread(taken.unread, job.config.say);
  for (const [name, reason] of taken.failed)
    said.set(name, {
      line: `${name}: already declared (${where.node(byName.get(name)!)}); --files and --units not added: ${reason}`,
      failed: true,
    });
  const added = new Map<string, PlainMap>();
  for (const [name, snapshot] of taken.snapshots) {
    const more = notYetDeclared(byName.get(name)!, snapshot);
    if (Object.keys(more).length) added.set(name, more);
  }
  if (!added.size) return { written: [], said };
  const extension = await checkedExtension(tree, nodes, added);
  for (const [rel, spec] of extension.files) await appendToFile(tree, rel, spec);
  for (const [name, files] of extension.byNode)
    said.set(name, {
      line: `${name}: already declared (${where.node(byName.get(name)!)}); the files and units it did not declare added, in ${files.join(", ")}`,
    });
  return { written: [...extension.files.keys()], said };
}

/**
 * Once for the fleet: how many packages the snapshots left to their dependencies, and each reason
 * a host could not tell which were chosen (all of its packages are then declared).
 */
function sayLeftOnPurpose(left: Snapshots["leftOnPurpose"], say: (line: string) => void): void {
  const counted = left.filter((l) => l.unknown === undefined);
  const total = counted.reduce((sum, l) => sum + l.count, 0);
  const plural = (n: number, word: string) =>
    `${n.toLocaleString("en")} ${word}${n === 1 ? "" : "s"}`;
  if (counted.length)
    say(
      `packages: declared those the package manager marks as installed on purpose; ${plural(total, "package")} installed as dependencies left to them on ${plural(counted.length, "host")} (--packages all declares every one)`,
    );
  const unknown = new Map<string, string[]>();
  for (const l of left)
    if (l.unknown !== undefined)
      unknown.set(l.unknown, [...(unknown.get(l.unknown) ?? []), l.host]);
  for (const [reason, named] of unknown)
    say(`packages: every installed package declared on ${hostList(named)}: ${reason}`);
}

/** The most reasons `sayUnread` names one by one; the rest it counts. */
const MAX_UNREAD_LINES = 20;

/**
 * Once for the run: each part of the hosts' live state left undeclared because the host could not
 * show it (sshd's settings without root), with the hosts and the host's reason, which says the fix.
 */
function sayUnread(unread: Snapshots["unread"], say: (line: string) => void): void {
  const reasons = [...unread].sort(([, a], [, b]) => b.length - a.length);
  for (const [reason, hosts] of reasons.slice(0, MAX_UNREAD_LINES))
    say(`not declared on ${hostList([...hosts].sort())}, which could not show it: ${reason}`);
  const rest = reasons.slice(MAX_UNREAD_LINES);
  if (rest.length)
    say(
      `not declared on ${hostList([...new Set(rest.flatMap(([, hosts]) => hosts))].sort())}: ${rest.length} more parts their hosts could not show`,
    );
}

/** Hosts in a line: `web-01, web-02, web-03 and 3 more hosts`. */
function hostList(hosts: readonly string[]): string {
  const named = hosts.slice(0, 3).join(", ");
  return hosts.length > 3 ? `${named} and ${hosts.length - 3} more hosts` : named;
}

/** The --ssh-config and --known-hosts files, checked as files and resolved. */
async function readSshFiles(config: AdoptOptions) {
  await readInput("ssh-config", config.sshConfig);
  await readInput("known-hosts", config.knownHosts);
  return {
    configFile: config.sshConfig && path.resolve(config.sshConfig),
    knownHostsFile: config.knownHosts && path.resolve(config.knownHosts),
  };
}

/**
 * An existing tree, read as audit reads it (nothing in it changes): its nodes, whether it already
 * has layers new nodes are fitted over, and which of the inventory's groups it already declares.
 */
async function readExistingTree(tree: string, groups: ReadonlyMap<string, readonly string[]>) {
  const treeInfo = await stat(tree).catch(() => undefined);
  if (treeInfo && !treeInfo.isDirectory())
    throw new UsageError(`--manifests ${tree} is not a folder`);
  const existing = treeInfo ? await loadFleet(tree) : undefined;
  const existingFleet =
    treeInfo && (await stat(path.join(tree, "fleet.yaml")).catch(() => undefined));
  const existingGroups = new Set<string>();
  if (treeInfo)
    for (const g of groups.keys())
      if (await stat(path.join(tree, "groups", `${g}.yaml`)).catch(() => undefined))
        existingGroups.add(g);
  const fixedBase =
    existing !== undefined &&
    (existing.nodes.length > 0 || !!existingFleet || existingGroups.size > 0);
  return { existing, fixedBase, existingGroups };
}

interface SnapshotJob {
  config: Pick<
    AdoptOptions,
    "concurrency" | "packages" | "pin" | "ephemeralAsRange" | "progress" | "declare" | "say"
  >;
  sshFiles: Awaited<ReturnType<typeof readSshFiles>>;
  staged: Pick<Awaited<ReturnType<typeof stageLayers>>, "base" | "ssh">;
  settings: ReturnType<typeof fleetAuditSettings>;
  /** The domains snapshot (default: every one). */
  domains?: readonly AnyDomain[];
}

/** What the hosts' snapshots gave: trusted keys and specs by host, and why each other host failed. */
interface Snapshots {
  keys: Map<string, string[]>;
  snapshots: Map<string, PlainMap>;
  latent: Map<string, LatentValues>;
  /** Why each host that could not be snapshot failed. */
  failed: Map<string, string>;
  /** Each jump host's trusted keys, looked up once for all the hosts behind it. */
  jumpKeys: Map<string, Promise<JumpKeys>>;
  /** Whether each jump host answers, asked once, when a host behind it could not be snapshot. */
  jumpReached: Map<string, Promise<string | undefined>>;
  /** What each host's snapshot left out on purpose (packages installed only as dependencies). */
  leftOnPurpose: { host: string; domain: string; count: number; unknown?: string }[];
  /** Hosts by each reason a part of their live state could not be read, so was not declared. */
  unread: Map<string, string[]>;
}

/**
 * What a host's snapshot is asked about: what its existing layers declare, and each file and unit
 * of `--files` and `--units` they do not, by path or name alone (its live state is then taken).
 */
function withAsked(
  base: PlainMap | undefined,
  asked: AdoptOptions["declare"],
): PlainMap | undefined {
  if (!asked || (!asked.files.length && !asked.units.length)) return base;
  const listOf = (value: unknown) => (Array.isArray(value) ? (value as PlainMap[]) : []);
  const files = listOf(base?.files);
  const systemd = (base?.systemd ?? {}) as PlainMap;
  const units = listOf(systemd.units);
  const paths = new Set(files.map((f) => f.path));
  const names = new Set(units.map((u) => u.name));
  return {
    ...base,
    ...(asked.files.length && {
      files: [...files, ...asked.files.filter((p) => !paths.has(p)).map((path) => ({ path }))],
    }),
    ...(asked.units.length && {
      systemd: {
        ...systemd,
        units: [...units, ...asked.units.filter((n) => !names.has(n)).map((name) => ({ name }))],
      },
    }),
  };
}

/** Takes each host's trusted keys and snapshot, hosts in parallel, with a progress line on a TTY. */
async function snapshotHosts(hosts: readonly HostToAdopt[], job: SnapshotJob): Promise<Snapshots> {
  const { configFile, knownHostsFile } = job.sshFiles;
  const sshOptions = {
    ...(configFile && { configFile }),
    ...(knownHostsFile && { knownHostsFile }),
    connectTimeoutSeconds: DEFAULT_CONNECT_TIMEOUT_SECONDS,
  };
  // As audit reaches them: one connection per jump host, its sessions limited.
  const sessions = sharedSshSessions(sshOptions, 1, job.config.say);
  const limit = nodeLimit(job.config.concurrency, sessions);
  // Every host's sessions are jobs of the process launcher: it is kept between them.
  const release = holdLauncher();
  const progress = job.config.progress?.(hosts.length);
  const taken: Snapshots = {
    keys: new Map(),
    snapshots: new Map(),
    latent: new Map(),
    failed: new Map(),
    jumpKeys: new Map(),
    jumpReached: new Map(),
    leftOnPurpose: [],
    unread: new Map(),
  };
  await Promise.all(
    hosts.map((host) => {
      // An existing tree's fleet.yaml and groups may say how to reach it (a proxy_jump).
      const node = asNode(host, job.staged.ssh.get(host.name));
      return limit(node, async () => {
        const reason = await snapshotHost(host, node, sshOptions, sessions.channels, job, taken);
        if (reason) taken.failed.set(host.name, reason);
        progress?.update({
          name: host.name,
          host: node.host,
          status: reason ? "error" : "clean",
          durationMs: 0,
          drift: [],
        });
      });
    }),
  ).finally(() => {
    release();
    return sessions.close();
  });
  progress?.finish();
  return taken;
}

/** Keeps one host's trusted keys and snapshot in `taken`, or returns why the host is not adopted. */
async function snapshotHost(
  host: HostToAdopt,
  node: LoadedNode,
  sshOptions: SshOptions,
  channels: JumpChannels,
  job: SnapshotJob,
  taken: Snapshots,
): Promise<string | undefined> {
  const { configFile, knownHostsFile } = job.sshFiles;
  const found = await trustedKeys(node.host, node.ssh, { configFile, knownHostsFile });
  const where = (lookup: { files: string[] }) => lookup.files.join(", ") || "any known_hosts file";
  const fix =
    "verify its key (from your provisioning, not from the network) and add it to one of them or to --known-hosts FILE";
  if (!found.lines.length)
    return `no trusted host key for ${found.lookup.name} in ${where(found.lookup)}: ${fix}`;
  // The jump hosts' keys too: the first audit of the tree checks them against its known_hosts.
  const jumps = await jumpHostKeys(
    found.lookup.proxyJump,
    { configFile, knownHostsFile },
    taken.jumpKeys,
  );
  const keyless = jumps.find((j) => !j.lines.length);
  if (keyless)
    return `no trusted host key for its jump host ${keyless.jump.spec} (${keyless.lookup.name}) in ${where(keyless.lookup)}: ${fix}`;
  taken.keys.set(host.name, [...found.lines, ...jumps.flatMap((j) => j.lines)]);
  try {
    const transport = sshTransport(node, { ...sshOptions, channels });
    const asked = job.config.declare;
    const globbed = asked && (await expandAsked(transport, asked, job.settings.timeoutMs));
    for (const note of globbed?.notes ?? []) job.config.say(`${host.name}: ${note}`);
    const snapshot = await snapshotSpec(transport, job.domains ?? DOMAINS, job.settings, {
      packages: job.config.packages,
      ...(job.config.pin && { pinned: job.config.pin }),
      ephemeralAsRange: job.config.ephemeralAsRange,
      declared: withAsked(
        job.staged.base.get(host.name),
        globbed && { files: globbed.files, units: globbed.units },
      ),
    });
    const valid = NodeSpec.safeParse(snapshot.spec);
    if (!valid.success) {
      const issue = valid.error.issues[0]!;
      // zod says only "Invalid key in record" for a bad key: the key's own issue says why.
      const inner = "issues" in issue ? issue.issues[0]?.message : undefined;
      return `its live state cannot be declared (${issue.path.map(String).join(".")}: ${inner ?? issue.message})`;
    }
    taken.snapshots.set(host.name, snapshot.spec);
    taken.latent.set(host.name, snapshot.latent);
    for (const left of snapshot.leftOut) taken.leftOnPurpose.push({ host: host.name, ...left });
    for (const reason of snapshot.unknown)
      taken.unread.set(reason, [...(taken.unread.get(reason) ?? []), host.name]);
    return undefined;
  } catch (error) {
    const failure = nodeFailure(host.name, error).message.replace(/[;,] node not audited/, "");
    const first = jumps[0];
    const unreachable = first && (await jumpUnreachable(first, sshOptions, job, taken));
    return unreachable
      ? `its jump host ${first.jump.spec} cannot be reached (${unreachable})`
      : failure;
  }
}

/**
 * Why the first jump host on a failed host's way does not answer, or undefined when it does:
 * asked with one session of its own (once per jump host), so a host left out because of its jump
 * host says so.
 */
function jumpUnreachable(
  first: JumpKeys,
  sshOptions: SshOptions,
  job: SnapshotJob,
  taken: Snapshots,
): Promise<string | undefined> {
  let reached = taken.jumpReached.get(first.jump.spec);
  if (!reached) {
    const { jump } = first;
    const node: LoadedNode = {
      ...asNode({ name: jump.host, line: 0, ssh: {}, groups: [] }),
      ssh: { ...(jump.user && { user: jump.user }), ...(jump.port && { port: jump.port }) },
    };
    reached = sshTransport(node, sshOptions)
      .run("exit 0\n", { timeoutMs: job.settings.timeoutMs, maxOutputBytes: 4096 })
      .then(
        () => undefined,
        (error: unknown) =>
          nodeFailure(jump.host, error).message.replace(/[;,] node not audited/, ""),
      );
    taken.jumpReached.set(first.jump.spec, reached);
  }
  return reached;
}
