// Adoption's tree: the factored layers written into a staged copy, loaded back as audit loads them
// and checked against each host's snapshot before any file is written into the real tree.
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import {
  asFileSpec,
  expandGroups,
  factorFleet,
  overridesOver,
  sameSpec,
  type Factored,
  type NodeSnapshot,
} from "../adopt/factor.js";
import type { HostToAdopt } from "../adopt/inventory/index.js";
import { schemaComment, schemasFor } from "../adopt/schema-ref.js";
import { ManifestErrors } from "../errors.js";
import { loadFleet, type LoadedNode } from "../manifest/load.js";
import { pathKey, pathOfKey, valueAt, type PlainMap, type SpecPath } from "../spec-path.js";
import { stringifyPortable } from "../text/yaml-scalar.js";
import { latentComments, type LatentValues } from "./snapshot.js";

/** The spec without what only shapes the file or reaches the host. */
function declaredPart(spec: PlainMap): PlainMap {
  const { host: _h, groups: _g, ssh: _s, $schema: _d, ...rest } = spec;
  return rest;
}

/** How a host is reached, as the tree says it: an identity file is the adopting machine's path. */
function reachOf(host: HostToAdopt): PlainMap {
  const { identity_file: _i, ...reach } = host.ssh;
  return reach;
}

/** A new tree's node as factored: its snapshot with how it is reached, so `ssh:` is layered too. */
const withReach = (host: HostToAdopt, snapshot: PlainMap): PlainMap => {
  const reach = reachOf(host);
  return Object.keys(reach).length ? { ssh: reach, ...snapshot } : snapshot;
};

/** A file's text: the `$schema` comment, then the YAML with `comments` beside their values. */
function fileText(
  tree: string,
  schemas: string | undefined,
  rel: string,
  value: PlainMap,
  comments: readonly { path: SpecPath; text: string }[],
): string {
  const kind = rel === "fleet.yaml" ? "fleet" : rel.startsWith("groups/") ? "group" : "node-spec";
  return `${schemaComment(schemas, path.join(tree, rel), kind)}${stringifyPortable(value, comments)}`;
}

/**
 * The latent comments for a file that `hosts` take their values from: each host's where the file
 * holds that host's value; in a file several hosts share, each comment names its hosts.
 */
function latentCommentsIn(
  job: Pick<TreeJob, "latent" | "snapshots">,
  value: PlainMap,
  hosts: readonly string[],
  shared: boolean,
): { path: SpecPath; text: string }[] {
  const byKey = new Map<string, Map<string, string[]>>();
  for (const host of hosts)
    for (const { path: at, text } of latentComments(job.latent.get(host) ?? new Map())) {
      if (!isDeepStrictEqual(valueAt(value, at), valueAt(job.snapshots.get(host), at))) continue;
      const key = pathKey(at);
      const texts = byKey.get(key) ?? new Map<string, string[]>();
      byKey.set(key, texts.set(text, [...(texts.get(text) ?? []), host]));
    }
  return [...byKey].map(([key, texts]) => ({
    path: pathOfKey(key),
    text: [...texts]
      .map(([text, named]) => (shared ? `${named.join(", ")}: ${text}` : text))
      .join("; "),
  }));
}

async function writeAll(dir: string, files: ReadonlyMap<string, string>, exclusive: boolean) {
  for (const [rel, text] of files) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    // Exclusive in the real tree: a file that appeared meanwhile is never overwritten.
    await writeFile(path.join(dir, rel), text, { flag: exclusive ? "wx" : "w" });
  }
}

export interface TreeJob {
  tree: string;
  /** The tree already has layers: they stay as they are, new nodes override what differs. */
  fixedBase: boolean;
  existingGroups: ReadonlySet<string>;
  hosts: HostToAdopt[];
  snapshots: ReadonlyMap<string, PlainMap>;
  /** Each host's values the next reboot or restart changes: commented where they are written. */
  latent: ReadonlyMap<string, LatentValues>;
  parents: ReadonlyMap<string, readonly string[]>;
  keys: ReadonlyMap<string, string[]>;
  leftOut: string[];
}

/**
 * Factors, writes into a copy of the tree, loads that copy as audit would and checks each node's
 * merged spec against its snapshot; a node that does not merge back is left out, and the rest are
 * factored again. Only then are the new files written into the tree.
 */
export async function writeTree(job: TreeJob): Promise<{ written: string[]; adopted: string[] }> {
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
          spec: job.fixedBase
            ? overridesOver(base.get(h.name) ?? {}, snapshot)
            : withReach(h, snapshot),
        };
      });
      const factored = factorFleet({
        nodes,
        groups: new Map(newGroups.map((g) => [g, parentsOf(g)])),
        byValue: !job.fixedBase && job.parents.size === 0,
        fleet: !job.fixedBase,
      });
      const files = treeFiles(job, factored, hosts, schemas);
      await writeAll(stage, files, false);
      const loaded = await loadFleet(stage, { only: (n) => names.has(n) });
      const byName = new Map(loaded.nodes.map((n) => [n.name, n]));
      const mismatched = new Set(
        hosts.filter((h) => {
          const node = byName.get(h.name);
          return (
            !node ||
            !sameSpec(declaredPart(node.spec), job.snapshots.get(h.name)!) ||
            // A new tree layers `ssh:` too: it must merge back to how the host is reached.
            (!job.fixedBase && !sameSpec(node.ssh, reachOf(h)))
          );
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
export async function stageLayers(
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
  schemas: string | undefined,
): Map<string, string> {
  const files = new Map<string, string>();
  const text = (rel: string, value: PlainMap, from: readonly string[] = [], shared = true) =>
    fileText(job.tree, schemas, rel, value, latentCommentsIn(job, value, from, shared));
  const names = hosts.map((h) => h.name);
  const members = (group: string) =>
    hosts.filter((h) => expandGroups(h.groups, job.parents).includes(group)).map((h) => h.name);
  if (!job.fixedBase && Object.keys(factored.fleet).length)
    files.set("fleet.yaml", text("fleet.yaml", asFileSpec(factored.fleet), names));
  const parentsOf = (name: string) =>
    job.parents.get(name) ?? factored.groups.get(name)?.groups ?? [];
  // A new group declaring nothing gets no file: who names it names its parents instead.
  const declaring = (name: string) =>
    job.existingGroups.has(name) || Object.keys(factored.groups.get(name)?.spec ?? {}).length > 0;
  const kept = (names: readonly string[]): string[] => [
    ...new Set(names.flatMap((g) => (declaring(g) ? [g] : kept(parentsOf(g))))),
  ];
  for (const [name, group] of factored.groups) {
    if (job.existingGroups.has(name) || !declaring(name)) continue;
    const parents = kept(parentsOf(name));
    files.set(
      `groups/${name}.yaml`,
      text(
        `groups/${name}.yaml`,
        { ...(parents.length && { groups: parents }), ...asFileSpec(group.spec) },
        members(name),
      ),
    );
  }
  for (const host of hosts) {
    const own = factored.nodes.get(host.name)!;
    const groups = kept([...host.groups, ...own.groups]);
    const reach = reachOf(host);
    files.set(
      `nodes/${host.name}.yaml`,
      text(
        `nodes/${host.name}.yaml`,
        {
          ...(host.host !== undefined && { host: host.host }),
          ...(groups.length && { groups }),
          // A new tree layers `ssh:` with the rest (own.spec); over an existing tree it is the node's.
          ...(job.fixedBase && Object.keys(reach).length && { ssh: reach }),
          ...asFileSpec(own.spec),
        },
        [host.name],
        false,
      ),
    );
  }
  return files;
}
