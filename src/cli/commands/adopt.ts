// `quartermaster adopt`: an inventory in, a layered manifest tree out. Reads the inventory (pure
// readers), takes each host's trusted key and snapshot in parallel, factors the snapshots into
// fleet, group and node layers (pure), checks through the real loader that every node's layers
// merge back to its snapshot, and only then writes the files that do not exist yet.
import { io } from "../io.js";
import { cp, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {
  asFileSpec,
  expandGroups,
  factorFleet,
  overridesOver,
  sameSpec,
  type Factored,
  type NodeSnapshot,
} from "../../adopt/factor.js";
import { trustedKeys } from "../../adopt/host-keys.js";
import { planAdoption, readInventory, type HostToAdopt } from "../../adopt/inventory/index.js";
import { schemaComment, schemasFor } from "../../adopt/schema-ref.js";
import { nodeLimit } from "../../audit/fleet.js";
import { nodeFailure } from "../../audit/node.js";
import { DOMAINS } from "../../domains/registry.js";
import { InputFileError, ManifestErrors, UsageError } from "../../errors.js";
import { loadFleet, type LoadedNode } from "../../manifest/load.js";
import { NodeSpec } from "../../manifest/schema.js";
import { visible } from "../../text/escape.js";
import { stringifyPortable } from "../../text/yaml-scalar.js";
import { sshSessionGates } from "../../transport/session-gate.js";
import {
  DEFAULT_CONNECT_TIMEOUT_SECONDS,
  sshTransport,
  type SshOptions,
} from "../../transport/ssh.js";
import { ExitBit } from "../exit.js";
import { checkedFlag, parseFlags, saying, textFlag } from "../flags.js";
import {
  CONCURRENCY_FLAG,
  DEFAULT_MANIFESTS,
  DEFAULT_TIMEOUT_SECONDS,
  NO_EPHEMERAL_RANGE_FLAG,
  PACKAGES_FLAG,
  SSH_CONFIG_FLAG,
  TIMEOUT_FLAG,
} from "../options.js";
import { Progress } from "../progress.js";
import { fleetAuditSettings } from "./audit.js";
import { snapshotSpec } from "./snapshot.js";
import type { PlainMap } from "../../spec-path.js";

const say = (line: string) => io().stderr.write(`${visible(line)}\n`);
// Big enough for a 100,000-host inventory; a file past it is not an inventory.
const MAX_INVENTORY_BYTES = 64 * 1024 * 1024;

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

/** The spec without what only shapes the file or reaches the host. */
function declaredPart(spec: PlainMap): PlainMap {
  const { host: _h, groups: _g, ssh: _s, $schema: _d, ...rest } = spec;
  return rest;
}

/** A file's text: the `$schema` comment, then the YAML. */
function fileText(tree: string, schemas: string | undefined, rel: string, value: PlainMap): string {
  const kind = rel === "fleet.yaml" ? "fleet" : rel.startsWith("groups/") ? "group" : "node-spec";
  return `${schemaComment(schemas, path.join(tree, rel), kind)}${stringifyPortable(value)}`;
}

async function writeAll(dir: string, files: ReadonlyMap<string, string>, exclusive: boolean) {
  for (const [rel, text] of files) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    // Exclusive in the real tree: a file that appeared meanwhile is never overwritten.
    await writeFile(path.join(dir, rel), text, { flag: exclusive ? "wx" : "w" });
  }
}

const ADOPT_FLAGS = {
  inventory: textFlag(
    "FILE",
    "the hosts to adopt: an Ansible inventory (INI, YAML or ansible-inventory --list JSON), an ssh_config or one host a line",
  ),
  manifests: textFlag(
    "DIR",
    "the manifest tree to write into (default: fleet-manifests); existing files are never changed",
  ),
  "ssh-config": SSH_CONFIG_FLAG,
  "known-hosts": textFlag(
    "FILE",
    "take host keys from FILE only (default: the known_hosts files ssh uses for each host)",
  ),
  concurrency: saying(
    CONCURRENCY_FLAG,
    "hosts snapshot at once (default: 32); through one jump host, at most its ssh.max_sessions (default: 8)",
  ),
  timeout: saying(TIMEOUT_FLAG, "per-host time limit, connection and snapshot (default: 60)"),
  packages: PACKAGES_FLAG,
  pin: checkedFlag(
    "PACKAGE,…",
    "declare these packages at their live version, the rest as --packages says",
    (given) => new Set(given.split(",").filter(Boolean)),
  ),
  "no-ephemeral-range": NO_EPHEMERAL_RANGE_FLAG,
};

/** `adopt`'s argv as its config: every flag read and checked, nothing read or opened yet. */
function adoptConfig(argv: string[]) {
  const { config } = parseFlags("adopt", argv, ADOPT_FLAGS);
  const { inventory } = config;
  if (inventory === undefined) throw new UsageError("adopt needs --inventory FILE");
  return { ...config, inventory };
}

type AdoptConfig = ReturnType<typeof adoptConfig>;

export async function adoptCommand(argv: string[]): Promise<number> {
  const config = adoptConfig(argv);
  const timeoutMs = (config.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
  const sshFiles = await readSshFiles(config);
  const text = (await readInput("inventory", config.inventory))!;
  const plan = planAdoption(config.inventory, readInventory(config.inventory, text));
  const tree = path.resolve(config.manifests ?? DEFAULT_MANIFESTS);

  for (const [name, count] of plan.ignored)
    say(
      `ignored inventory variable ${name} (${count} host${count === 1 ? "" : "s"}): no manifest key`,
    );
  for (const [name, count] of plan.templated)
    say(
      `left out inventory variable ${name} (${count} host${count === 1 ? "" : "s"}): its value is a template ({{ … }}) Quartermaster does not evaluate`,
    );

  const { existing, fixedBase, existingGroups } = await readExistingTree(tree, plan.groups);
  const hosts = undeclaredHosts(plan.hosts, existing);
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
  const { keys, snapshots, leftOut } = await snapshotHosts(hosts, {
    config,
    sshFiles,
    staged,
    settings,
  });

  const candidates = hosts.filter((h) => snapshots.has(h.name));
  const result = candidates.length
    ? await writeTree({
        tree,
        fixedBase,
        existingGroups,
        hosts: candidates,
        snapshots,
        parents: plan.groups,
        keys,
        leftOut,
      })
    : { written: [], adopted: [] };
  for (const line of leftOut.sort()) say(line);
  for (const rel of result.written)
    io().stdout.write(`wrote ${path.join(config.manifests ?? DEFAULT_MANIFESTS, rel)}\n`);
  const already = plan.hosts.length - hosts.length;
  say(
    `${result.adopted.length} of ${plan.hosts.length} hosts adopted${already ? `, ${already} already declared` : ""}, ${leftOut.length} left out`,
  );
  return leftOut.length ? ExitBit.unaudited : 0;
}

/** The --ssh-config and --known-hosts files, checked as files and resolved. */
async function readSshFiles(config: AdoptConfig) {
  await readInput("ssh-config", config["ssh-config"]);
  await readInput("known-hosts", config["known-hosts"]);
  return {
    configFile: config["ssh-config"] && path.resolve(config["ssh-config"]),
    knownHostsFile: config["known-hosts"] && path.resolve(config["known-hosts"]),
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

/** The hosts the tree does not declare yet; each one it does is said and left as it is. */
function undeclaredHosts(
  planned: readonly HostToAdopt[],
  existing: { nodes: readonly LoadedNode[] } | undefined,
): HostToAdopt[] {
  const declared = new Set(existing?.nodes.map((n) => n.name));
  const hosts: HostToAdopt[] = [];
  for (const host of planned) {
    if (declared.has(host.name))
      say(`${host.name}: already declared (nodes/${host.name}.yaml), left as it is`);
    else hosts.push(host);
  }
  return hosts;
}

interface SnapshotJob {
  config: Pick<AdoptConfig, "concurrency" | "packages" | "pin" | "no-ephemeral-range">;
  sshFiles: Awaited<ReturnType<typeof readSshFiles>>;
  staged: Pick<Awaited<ReturnType<typeof stageLayers>>, "base" | "ssh">;
  settings: ReturnType<typeof fleetAuditSettings>;
}

/** What the hosts' snapshots gave: trusted keys and specs by host, and why each other host failed. */
interface Snapshots {
  keys: Map<string, string[]>;
  snapshots: Map<string, PlainMap>;
  leftOut: string[];
}

/** Takes each host's trusted keys and snapshot, hosts in parallel, with a progress line on a TTY. */
async function snapshotHosts(hosts: readonly HostToAdopt[], job: SnapshotJob): Promise<Snapshots> {
  const { configFile, knownHostsFile } = job.sshFiles;
  const sshOptions = {
    ...(configFile && { configFile }),
    ...(knownHostsFile && { knownHostsFile }),
    connectTimeoutSeconds: DEFAULT_CONNECT_TIMEOUT_SECONDS,
  };
  // Sessions through one jump host are limited as audit limits them.
  const limit = nodeLimit(job.config.concurrency, sshSessionGates(sshOptions));
  const progress = hosts.length > 1 && io().stderr.isTTY ? new Progress(hosts.length) : undefined;
  const taken: Snapshots = { keys: new Map(), snapshots: new Map(), leftOut: [] };
  await Promise.all(
    hosts.map((host) => {
      // An existing tree's fleet.yaml and groups may say how to reach it (a proxy_jump).
      const node = asNode(host, job.staged.ssh.get(host.name));
      return limit(node, async () => {
        const reason = await snapshotHost(host, node, sshOptions, job, taken);
        if (reason) taken.leftOut.push(`${host.name}: ${reason}; not adopted`);
        progress?.update({
          name: host.name,
          host: node.host,
          status: reason ? "error" : "clean",
          durationMs: 0,
          drift: [],
        });
      });
    }),
  );
  progress?.finish();
  return taken;
}

/** Keeps one host's trusted keys and snapshot in `taken`, or returns why the host is not adopted. */
async function snapshotHost(
  host: HostToAdopt,
  node: LoadedNode,
  sshOptions: SshOptions,
  job: SnapshotJob,
  taken: Snapshots,
): Promise<string | undefined> {
  const { configFile, knownHostsFile } = job.sshFiles;
  const found = await trustedKeys(node.host, node.ssh, { configFile, knownHostsFile });
  if (!found.lines.length)
    return `no trusted host key for ${found.lookup.name} in ${found.lookup.files.join(", ") || "any known_hosts file"}: verify its key (from your provisioning, not from the network) and add it to one of them or to --known-hosts FILE`;
  taken.keys.set(host.name, found.lines);
  try {
    const snapshot = await snapshotSpec(sshTransport(node, sshOptions), DOMAINS, job.settings, {
      packages: job.config.packages,
      ...(job.config.pin && { pinned: job.config.pin }),
      ephemeralAsRange: !job.config["no-ephemeral-range"],
      declared: job.staged.base.get(host.name),
    });
    const valid = NodeSpec.safeParse(snapshot.spec);
    if (!valid.success) {
      const issue = valid.error.issues[0]!;
      // zod says only "Invalid key in record" for a bad key: the key's own issue says why.
      const inner = "issues" in issue ? issue.issues[0]?.message : undefined;
      return `its live state cannot be declared (${issue.path.map(String).join(".")}: ${inner ?? issue.message})`;
    }
    taken.snapshots.set(host.name, snapshot.spec);
    return undefined;
  } catch (error) {
    return nodeFailure(host.name, error).message.replace(/[;,] node not audited/, "");
  }
}

interface TreeJob {
  tree: string;
  /** The tree already has layers: they stay as they are, new nodes override what differs. */
  fixedBase: boolean;
  existingGroups: ReadonlySet<string>;
  hosts: HostToAdopt[];
  snapshots: ReadonlyMap<string, PlainMap>;
  parents: ReadonlyMap<string, readonly string[]>;
  keys: ReadonlyMap<string, string[]>;
  leftOut: string[];
}

/**
 * Factors, writes into a copy of the tree, loads that copy as audit would and checks each node's
 * merged spec against its snapshot; a node that does not merge back is left out, and the rest are
 * factored again. Only then are the new files written into the tree.
 */
async function writeTree(job: TreeJob): Promise<{ written: string[]; adopted: string[] }> {
  const schemas = schemasFor(job.tree);
  const stage = await mkdtemp(path.join(os.tmpdir(), "quartermaster-adopt-"));
  try {
    let hosts = job.hosts;
    for (let round = 0; hosts.length; round++) {
      const { newGroups, base } = await stageLayers(stage, job, hosts);
      const parentsOf = (g: string) => [...(job.parents.get(g) ?? [])];
      const names = new Set(hosts.map((h) => h.name));
      const created = new Set(newGroups);
      const nodes: NodeSnapshot[] = hosts.map((h) => {
        const snapshot = job.snapshots.get(h.name)!;
        return {
          name: h.name,
          groups: h.groups.filter((g) => created.has(g)),
          spec: job.fixedBase ? overridesOver(base.get(h.name) ?? {}, snapshot) : snapshot,
        };
      });
      const factored = factorFleet({
        nodes,
        groups: new Map(newGroups.map((g) => [g, parentsOf(g)])),
        byValue: !job.fixedBase && job.parents.size === 0,
        fleet: !job.fixedBase,
      });
      const files = treeFiles(job, factored, hosts, newGroups, schemas);
      await writeAll(stage, files, false);
      const loaded = await loadFleet(stage, { only: (n) => names.has(n) });
      const specs = new Map(loaded.nodes.map((n) => [n.name, n.spec]));
      const mismatched = new Set(
        hosts.filter((h) => {
          const spec = specs.get(h.name);
          return !spec || !sameSpec(declaredPart(spec), job.snapshots.get(h.name)!);
        }),
      );
      if (mismatched.size && round < 2) {
        for (const h of mismatched)
          job.leftOut.push(`${h.name}: its layers do not merge back to its snapshot; not adopted`);
        hosts = hosts.filter((h) => !mismatched.has(h));
        continue;
      }
      if (mismatched.size) throw new Error("factored layers do not merge back to the snapshots");
      await writeAll(job.tree, files, true);
      const lines = [...new Set(hosts.flatMap((h) => job.keys.get(h.name) ?? []))];
      const knownHosts = path.join(job.tree, "known_hosts");
      const kept = await readFile(knownHosts, "utf8").catch(() => "");
      const keptLines = new Set(kept.split("\n"));
      const added = lines.filter((line) => !keptLines.has(line));
      // Appended: every byte already there stays.
      if (added.length)
        await writeFile(
          knownHosts,
          `${kept && !kept.endsWith("\n") ? "\n" : ""}${added.join("\n")}\n`,
          { flag: "a" },
        );
      return {
        written: [...files.keys(), ...(added.length ? ["known_hosts"] : [])],
        adopted: hosts.map((h) => h.name),
      };
    }
    return { written: [], adopted: [] };
  } catch (error) {
    if (error instanceof ManifestErrors)
      throw new Error(
        `the tree adopt would write does not load: ${error.message.replaceAll(stage, job.tree)}`,
      );
    throw error;
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

/**
 * A copy of the tree at `stage` with an empty file for each new group and node (its groups and
 * ssh only), loaded as audit loads it: each new node's existing layers merged (empty for a new
 * tree), which its own file overrides and which its snapshot takes declared files and units from,
 * and its ssh settings as audit will merge them.
 */
async function stageLayers(
  stage: string,
  job: Pick<TreeJob, "tree" | "fixedBase" | "parents" | "existingGroups">,
  hosts: readonly HostToAdopt[],
): Promise<{
  newGroups: string[];
  base: Map<string, PlainMap>;
  ssh: Map<string, LoadedNode["ssh"]>;
}> {
  await rm(stage, { recursive: true, force: true });
  if (job.fixedBase) await cp(job.tree, stage, { recursive: true });
  else await mkdir(stage, { recursive: true });
  const newGroups = expandGroups(
    hosts.flatMap((h) => h.groups),
    job.parents,
  ).filter((g) => !job.existingGroups.has(g));
  if (!job.fixedBase) return { newGroups, base: new Map(), ssh: new Map() };
  const placeholders = new Map<string, string>([
    ...newGroups.map(
      (g) =>
        [
          `groups/${g}.yaml`,
          stringifyPortable({ groups: [...(job.parents.get(g) ?? [])] }),
        ] as const,
    ),
    ...hosts.map(
      (h) =>
        [
          `nodes/${h.name}.yaml`,
          stringifyPortable({
            groups: h.groups,
            ...(Object.keys(h.ssh).length && { ssh: h.ssh }),
          }),
        ] as const,
    ),
  ]);
  await writeAll(stage, placeholders, false);
  const names = new Set(hosts.map((h) => h.name));
  const loaded = await loadFleet(stage, { only: (n) => names.has(n) });
  return {
    newGroups,
    base: new Map(loaded.nodes.map((n) => [n.name, declaredPart(n.spec)])),
    ssh: new Map(loaded.nodes.map((n) => [n.name, n.ssh])),
  };
}

/** The files adoption adds: fleet.yaml (new trees only), new groups, new nodes. */
function treeFiles(
  job: TreeJob,
  factored: Factored,
  hosts: readonly HostToAdopt[],
  newGroups: readonly string[],
  schemas: string | undefined,
): Map<string, string> {
  const files = new Map<string, string>();
  const text = (rel: string, value: PlainMap) => fileText(job.tree, schemas, rel, value);
  if (!job.fixedBase && Object.keys(factored.fleet).length)
    files.set("fleet.yaml", text("fleet.yaml", asFileSpec(factored.fleet)));
  for (const [name, group] of factored.groups) {
    if (job.existingGroups.has(name)) continue;
    const parents = job.parents.get(name) ?? group.groups;
    files.set(
      `groups/${name}.yaml`,
      text(`groups/${name}.yaml`, {
        ...(parents.length && { groups: [...parents] }),
        ...asFileSpec(group.spec),
      }),
    );
  }
  for (const name of newGroups)
    if (!files.has(`groups/${name}.yaml`)) {
      const parents = [...(job.parents.get(name) ?? [])];
      files.set(
        `groups/${name}.yaml`,
        text(`groups/${name}.yaml`, parents.length ? { groups: parents } : {}),
      );
    }
  for (const host of hosts) {
    const own = factored.nodes.get(host.name)!;
    const groups = [...host.groups, ...own.groups.filter((g) => !host.groups.includes(g))];
    files.set(
      `nodes/${host.name}.yaml`,
      text(`nodes/${host.name}.yaml`, {
        ...(host.host !== undefined && { host: host.host }),
        ...(groups.length && { groups }),
        ...(Object.keys(host.ssh).length && { ssh: host.ssh }),
        ...asFileSpec(own.spec),
      }),
    );
  }
  return files;
}
