// Loading the manifest tree: fleet.yaml, groups/, nodes/ and remediations/ beside known_hosts.
// Reading files is read.ts, turning one into a layer is layer.ts, merging layers is merge-layers.ts.
import { lstat, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { ManifestError, ManifestErrors } from "../errors.js";
import { locateIssue, toLayer, type Layer } from "./layer.js";
import { LayerMerger, mergeLayers } from "./merge-layers.js";
import { listYaml, ManifestReader, notRegular } from "./read.js";
import {
  FLEET_SETTINGS,
  FleetSpec,
  GroupSpec,
  NodeName,
  NodeSpec,
  type SshSettings,
} from "./schema.js";
import { nearest } from "./suggest.js";
import { waiverProblems } from "../drift/waivers.js";
import { Ticket } from "./tickets.js";
import { pathKey } from "../spec-path.js";

export interface LoadedNode {
  name: string;
  host: string;
  /** The node's own file. */
  file: string;
  /** fleet.yaml, then the groups in order, then the node file. */
  layers: Layer[];
  groups: string[];
  /** The effective declared state: layers merged. */
  spec: NodeSpec;
  ssh: SshSettings;
}

export interface Fleet {
  /** Directory the manifests were read from. */
  dir: string;
  settings: Pick<FleetSpec, (typeof FLEET_SETTINGS)[number]>;
  nodes: LoadedNode[];
  /** Remediation tickets under remediations/, with the file each came from. */
  tickets: { ticket: Ticket; file: string }[];
  /** The pinned host keys (`known_hosts` beside the manifests), when the tree keeps them. */
  knownHosts?: string;
}

export interface LoadOptions {
  /**
   * How file names are shown (and how a PR names them): defaults to the directory relative to cwd.
   */
  displayPrefix?: string;
  /**
   * Load only these nodes (names): other node files are not read; fleet.yaml, groups and tickets
   * still are.
   */
  only?: (name: string) => boolean;
}

const baseName = (file: string) => path.basename(file).replace(/\.ya?ml$/, "");

/** A node's declared host (its name when it declares none). */
const hostOf = (layer: Layer, name: string) =>
  typeof layer.value.host === "string" ? layer.value.host : name;

/**
 * The effective spec as a node holds it: without the `groups` and `$schema` that only shape the
 * files. Every layer was validated, and so was their combination (merge-layers.ts).
 */
function nodeSpec(effective: Record<string, unknown>): NodeSpec {
  const { groups: _groups, $schema: _schema, ...spec } = effective;
  return spec;
}

/**
 * Reads and validates the whole manifest tree. Throws ManifestErrors listing every problem found.
 */
export async function loadFleet(dir: string, options: LoadOptions = {}): Promise<Fleet> {
  const abs = path.resolve(dir);
  const dirStat = await stat(abs).catch(() => undefined);
  if (!dirStat?.isDirectory())
    throw new ManifestErrors([
      new ManifestError("manifest directory not found (use --manifests DIR or --repo URL)", {
        file: dir,
      }),
    ]);
  const reader = new ManifestReader(
    abs,
    options.displayPrefix ?? (path.relative(process.cwd(), abs) || "."),
  );

  // A linked folder or known_hosts is refused like a linked file, and not read.
  const linked = new Set<string>();
  for (const entry of ["groups", "nodes", "remediations", "known_hosts"]) {
    if (await reader.refuseLink(path.join(abs, entry))) linked.add(entry);
  }
  const list = (entry: string) =>
    linked.has(entry) ? Promise.resolve([]) : listYaml(path.join(abs, entry));

  const fleetFile = path.join(abs, "fleet.yaml");
  let fleetLayer: Layer | undefined;
  let settings: Fleet["settings"] = {};
  if (await lstat(fleetFile).catch(() => undefined)) {
    const parsed = reader.parse(await reader.read({ abs: fleetFile, link: true }));
    if (parsed) {
      const { layer, settings: s } = toLayer(reader, parsed, FleetSpec);
      fleetLayer = layer;
      settings = s ?? {};
      // A waiver that can waive nothing is a typo that would let drift through unwaived.
      for (const problem of waiverProblems(settings.ignore ?? [])) {
        const origin = layer?.origins.get(pathKey(["ignore", problem.index, problem.field]));
        reader.errors.push(
          new ManifestError(
            problem.message,
            { file: parsed.file, line: origin?.line, col: origin?.col },
            problem.hint,
          ),
        );
      }
    }
  }

  const groupFiles = new Map((await list("groups")).map((f) => [baseName(f.abs), f]));
  const groupCache = new Map<string, { layer?: Layer }>();
  const loadGroup = async (name: string) => {
    let group = groupCache.get(name);
    if (!group) {
      const parsed = reader.parse(await reader.read(groupFiles.get(name)!));
      group = parsed ? toLayer(reader, parsed, GroupSpec) : {};
      groupCache.set(name, group);
    }
    return group;
  };

  /** Groups in application order: a group's own groups first; each once. */
  const expandGroups = async (
    names: unknown,
    from: Layer,
    stack: string[],
    out: string[],
  ): Promise<void> => {
    if (!Array.isArray(names)) return;
    for (const [i, name] of names.entries()) {
      if (typeof name !== "string") continue;
      const origin = from.origins.get(pathKey(["groups", i]));
      const loc = { file: from.file, line: origin?.line, col: origin?.col };
      if (!groupFiles.has(name)) {
        const suggestion = nearest(name, [...groupFiles.keys()]);
        reader.errors.push(
          new ManifestError(
            `unknown group "${name}" (no groups/${name}.yaml)`,
            loc,
            suggestion ? `did you mean "${suggestion}"?` : undefined,
          ),
        );
        continue;
      }
      if (stack.includes(name)) {
        reader.errors.push(
          new ManifestError(`group include cycle: ${[...stack, name].join(" -> ")}`, loc),
        );
        continue;
      }
      if (out.includes(name)) continue;
      const group = await loadGroup(name);
      if (!group.layer) continue;
      await expandGroups(group.layer.value.groups, group.layer, [...stack, name], out);
      out.push(name);
    }
  };

  const seen = new Map<string, string>();
  const nodeFiles = (await list("nodes")).map((found) => {
    const name = baseName(found.abs);
    const display = reader.display(found.abs);
    const problem = !NodeName.safeParse(name).success
      ? new ManifestError(
          `node name "${name}" (from the file name) must start with a letter, digit or _ and hold no whitespace, control characters or option syntax`,
          { file: display },
        )
      : seen.has(name)
        ? new ManifestError(`duplicate node "${name}": also declared by ${seen.get(name)}`, {
            file: display,
          })
        : undefined;
    if (!problem) seen.set(name, display);
    return { found, name, problem, read: !problem && (options.only?.(name) ?? true) };
  });

  const merger = new LayerMerger();
  const nodes: LoadedNode[] = [];
  for (const { found, name, problem, read } of nodeFiles) {
    if (problem) reader.errors.push(problem);
    if (!read) continue;
    const parsed = reader.parse(await reader.read(found));
    if (!parsed) continue;
    const { layer } = toLayer(reader, parsed, NodeSpec);
    if (!layer) continue;
    const groups: string[] = [];
    await expandGroups(layer.value.groups, layer, [], groups);
    const base = [
      ...(fleetLayer ? [fleetLayer] : []),
      ...groups.flatMap((g) => groupCache.get(g)?.layer ?? []),
    ];
    const merged = merger.merge(name, base, layer);
    if (merged.errors) {
      reader.errors.push(...merged.errors);
      continue;
    }
    const spec = nodeSpec(merged.effective);
    nodes.push({
      name,
      host: hostOf(layer, name),
      file: layer.file,
      layers: [...base, layer],
      groups,
      spec,
      ssh: spec.ssh ?? {},
    });
  }
  // Groups nobody uses are still validated: a broken group must not wait for its first node.
  for (const name of groupFiles.keys()) await loadGroup(name);

  const tickets: Fleet["tickets"] = [];
  for (const ticketFile of await list("remediations")) {
    const parsed = reader.parse(await reader.read(ticketFile));
    if (!parsed) continue;
    const data = reader.toJS(parsed);
    if (data === undefined) continue;
    const result = Ticket.safeParse(data);
    if (!result.success) {
      for (const issue of result.error.issues)
        reader.errors.push(locateIssue(parsed, new Map(), Ticket, issue));
      continue;
    }
    tickets.push({ ticket: result.data, file: parsed.file });
  }

  const knownHosts = linked.has("known_hosts")
    ? undefined
    : await reader.readText(path.join(abs, "known_hosts"));
  if (reader.errors.length) throw new ManifestErrors(reader.errors);
  return { dir: abs, settings, nodes, tickets, ...(knownHosts !== undefined && { knownHosts }) };
}

/**
 * Reads one node-spec file on its own (the on-node `/etc/quartermaster/node-spec.yaml`): no
 * fleet.yaml, no groups, no tickets. `name` names the node, since the file's name does not.
 */
export async function loadNodeFile(
  file: string,
  name: string,
  options: Pick<LoadOptions, "displayPrefix"> = {},
): Promise<Fleet> {
  // Named on the command line, the file may be a link (config management often makes one).
  const abs = await realpath(path.resolve(file)).catch(() => path.resolve(file));
  const dir = path.dirname(abs);
  const info = await stat(abs).catch(() => undefined);
  if (info?.isDirectory())
    throw new ManifestErrors([
      new ManifestError(
        "is a folder, not a node-spec file (for a manifest tree, use --manifests DIR --nodes NAME)",
        { file },
      ),
    ]);
  if (!info) throw new ManifestErrors([new ManifestError("node-spec file not found", { file })]);
  if (!info.isFile()) throw new ManifestErrors([notRegular(file)]);
  const reader = new ManifestReader(
    dir,
    options.displayPrefix ?? (path.relative(process.cwd(), dir) || "."),
  );
  const parsed = reader.parse(await reader.read({ abs, link: true }));
  const layer = parsed && toLayer(reader, parsed, NodeSpec).layer;
  if (parsed && layer?.value.groups !== undefined) {
    const origin = layer.origins.get(pathKey(["groups"]));
    reader.errors.push(
      new ManifestError(
        "a single node-spec file has no groups/ to draw from: declare the state here",
        { file: parsed.file, line: origin?.line, col: origin?.col },
      ),
    );
  }
  if (reader.errors.length || !layer) throw new ManifestErrors(reader.errors);
  const spec = nodeSpec(mergeLayers([layer]));
  const node: LoadedNode = {
    name,
    host: hostOf(layer, name),
    file: layer.file,
    layers: [layer],
    groups: [],
    spec,
    ssh: spec.ssh ?? {},
  };
  return { dir, settings: {}, nodes: [node], tickets: [] };
}
