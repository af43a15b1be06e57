// Loading the manifest tree: fleet.yaml, groups/, nodes/ and remediations/ beside known_hosts.
// Reading files is read.ts, turning one into a layer is layer.ts, merging layers is merge-layers.ts.
import { lstat, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { ManifestError, ManifestErrors } from "../errors.js";
import { compactLayer, emptyLayer, isEmptyMap, locateIssue, toLayer, type Layer } from "./layer.js";
import { LayerMerger, mergeLayers } from "./merge-layers.js";
import { listYaml, ManifestReader, notRegular, type FileText, type FoundFile } from "./read.js";
import {
  FLEET_SETTINGS,
  FleetSpec,
  GroupSpec,
  NodeName,
  NodeSpec,
  type SshSettings,
} from "./schema.js";
import { nearest } from "./suggest.js";
import { waiverProblems } from "./waiver-problems.js";
import { Ticket } from "./tickets.js";
import { MANIFEST_PARSE } from "./zod-shape.js";
import { pathKey } from "../spec-path.js";

export interface LoadedNode {
  name: string;
  host: string;
  /** The node's own file. */
  file: string;
  /** fleet.yaml, then the groups in order, then the node file. */
  layers: readonly Layer[];
  groups: readonly string[];
  /** The effective declared state: layers merged. */
  spec: NodeSpec;
  ssh: Readonly<SshSettings>;
}

// Held by every node that has no groups, or no ssh settings: most of a large fleet's.
const NO_GROUPS: readonly string[] = Object.freeze([]);
const NO_SSH: Readonly<SshSettings> = Object.freeze({});

export interface Fleet {
  /** Directory the manifests were read from. */
  dir: string;
  settings: Pick<FleetSpec, (typeof FLEET_SETTINGS)[number]>;
  nodes: LoadedNode[];
  /** Remediation tickets under remediations/, with the file each came from. */
  tickets: { ticket: Ticket; file: string }[];
  /** The pinned host keys (`known_hosts` beside the manifests), when the tree keeps them. */
  knownHosts?: string;
  /** The ssh_config beside the manifests (`ssh_config`), which the workflows can pass to ssh. */
  sshConfig?: string;
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
  const { abs, reader, linked, list } = await openTree(dir, options);
  const fleet = await readFleetFile(reader, path.join(abs, "fleet.yaml"));
  const groups = new Groups(reader, await list("groups"));
  const nodes = await readNodes(reader, fleet.layer, groups, await list("nodes"), options);
  // Groups nobody uses are still validated: a broken group must not wait for its first node.
  for (const name of groups.files.keys()) await groups.load(name);
  const tickets = await readTickets(reader, await list("remediations"));
  const beside = (file: string) =>
    linked.has(file) ? undefined : reader.readText(path.join(abs, file));
  const knownHosts = await beside("known_hosts");
  const sshConfig = await beside("ssh_config");
  if (reader.errors.length) throw new ManifestErrors(reader.errors);
  return {
    dir: abs,
    settings: fleet.settings,
    nodes,
    tickets,
    ...(knownHosts !== undefined && { knownHosts }),
    ...(sshConfig !== undefined && { sshConfig }),
  };
}

/**
 * The tree's directory, its reader, and its folders' YAML files: a linked folder, known_hosts or
 * ssh_config is refused like a linked file, and not read.
 */
async function openTree(dir: string, options: LoadOptions) {
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
  const linked = new Set<string>();
  for (const entry of ["groups", "nodes", "remediations", "known_hosts", "ssh_config"]) {
    if (await reader.refuseLink(path.join(abs, entry))) linked.add(entry);
  }
  const list = (entry: string) =>
    linked.has(entry) ? Promise.resolve([]) : listYaml(path.join(abs, entry));
  return { abs, reader, linked, list };
}

/** fleet.yaml, when there is one: its layer and the fleet-wide settings, waivers checked. */
async function readFleetFile(
  reader: ManifestReader,
  fleetFile: string,
): Promise<{ layer?: Layer; settings: Fleet["settings"] }> {
  if (!(await lstat(fleetFile).catch(() => undefined))) return { settings: {} };
  const parsed = reader.parse(await reader.read({ abs: fleetFile, link: true }));
  if (!parsed) return { settings: {} };
  const { layer, settings: s } = toLayer(reader, parsed, FleetSpec);
  const settings: Fleet["settings"] = s ?? {};
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
  return { ...(layer && { layer }), settings };
}

/** groups/: each file read and validated once, when first used. */
class Groups {
  readonly files: Map<string, FoundFile>;
  private readonly cache = new Map<string, { layer?: Layer }>();

  constructor(
    private readonly reader: ManifestReader,
    found: FoundFile[],
  ) {
    this.files = new Map(found.map((f) => [baseName(f.abs), f]));
  }

  async load(name: string): Promise<{ layer?: Layer }> {
    let group = this.cache.get(name);
    if (!group) {
      const parsed = this.reader.parse(await this.reader.read(this.files.get(name)!));
      group = parsed ? toLayer(this.reader, parsed, GroupSpec) : {};
      this.cache.set(name, group);
    }
    return group;
  }

  /** The layer of a group already loaded (none when it did not validate). */
  layer(name: string): Layer | undefined {
    return this.cache.get(name)?.layer;
  }

  /** Groups in application order: a group's own groups first; each once. */
  async expand(names: unknown, from: Layer, stack: string[], out: string[]): Promise<void> {
    if (!Array.isArray(names)) return;
    for (const [i, name] of names.entries()) {
      if (typeof name !== "string") continue;
      const origin = from.origins.get(pathKey(["groups", i]));
      const loc = { file: from.file, line: origin?.line, col: origin?.col };
      if (!this.files.has(name)) {
        const suggestion = nearest(name, [...this.files.keys()]);
        this.reader.errors.push(
          new ManifestError(
            `unknown group "${name}" (no groups/${name}.yaml)`,
            loc,
            suggestion ? `did you mean "${suggestion}"?` : undefined,
          ),
        );
        continue;
      }
      if (stack.includes(name)) {
        this.reader.errors.push(
          new ManifestError(`group include cycle: ${[...stack, name].join(" -> ")}`, loc),
        );
        continue;
      }
      if (out.includes(name)) continue;
      const group = await this.load(name);
      if (!group.layer) continue;
      await this.expand(group.layer.value.groups, group.layer, [...stack, name], out);
      out.push(name);
    }
  }
}

/**
 * The node files with the name each gives its node, the problem with that name (unsafe, or a
 * duplicate), and whether to read it (`options.only`).
 */
function nodeFileList(reader: ManifestReader, found: FoundFile[], options: LoadOptions) {
  const seen = new Map<string, string>();
  return found.map((file) => {
    const name = baseName(file.abs);
    const display = reader.display(file.abs);
    // No `@` either: a node name is shown as plain text in places, where GitHub would mention a user.
    const problem =
      !NodeName.safeParse(name).success || name.includes("@")
        ? new ManifestError(
            `node name "${name}" (from the file name) must start with a letter, digit or _ and hold no whitespace, control characters, option syntax or @`,
            { file: display },
          )
        : seen.has(name)
          ? new ManifestError(`duplicate node "${name}": also declared by ${seen.get(name)}`, {
              file: display,
            })
          : undefined;
    if (!problem) seen.set(name, display);
    return { file, name, problem, read: !problem && (options.only?.(name) ?? true) };
  });
}

/** A node file's layer, compacted; undefined (errors recorded) when it does not validate. */
function nodeLayer(reader: ManifestReader, text: FileText): Layer | undefined {
  const parsed = reader.parse(text);
  const own = parsed && toLayer(reader, parsed, NodeSpec).layer;
  return own && compactLayer(own);
}

/** Each node file read, validated and merged over fleet.yaml and its groups. */
async function readNodes(
  reader: ManifestReader,
  fleetLayer: Layer | undefined,
  groups: Groups,
  found: FoundFile[],
  options: LoadOptions,
): Promise<LoadedNode[]> {
  const merger = new LayerMerger();
  // Nodes whose files change nothing share one effective spec: and so one NodeSpec of it.
  const specs = new WeakMap<object, NodeSpec>();
  const nodes: LoadedNode[] = [];
  for (const { file, name, problem, read } of nodeFileList(reader, found, options)) {
    if (problem) reader.errors.push(problem);
    if (!read) continue;
    const text = await reader.read(file);
    const layer = isEmptyMap(text.text) ? emptyLayer(text.file) : nodeLayer(reader, text);
    if (!layer) continue;
    const names: string[] = [];
    await groups.expand(layer.value.groups, layer, [], names);
    const base = [
      ...(fleetLayer ? [fleetLayer] : []),
      ...names.flatMap((g) => groups.layer(g) ?? []),
    ];
    const merged = merger.merge(name, base, layer);
    if (merged.errors) {
      reader.errors.push(...merged.errors);
      continue;
    }
    let spec = specs.get(merged.effective);
    if (!spec) specs.set(merged.effective, (spec = nodeSpec(merged.effective)));
    nodes.push({
      name,
      host: hostOf(layer, name),
      file: layer.file,
      // Sized to fit: a spread leaves room to grow, a few times the size of two layers.
      layers: base.concat(layer),
      groups: names.length ? names : NO_GROUPS,
      spec,
      ssh: spec.ssh ?? NO_SSH,
    });
  }
  return nodes;
}

/** remediations/: the tickets, each validated. */
async function readTickets(reader: ManifestReader, found: FoundFile[]): Promise<Fleet["tickets"]> {
  const tickets: Fleet["tickets"] = [];
  for (const ticketFile of found) {
    const parsed = reader.parse(await reader.read(ticketFile));
    if (!parsed) continue;
    const data = reader.toJS(parsed);
    if (data === undefined) continue;
    const result = Ticket.safeParse(data, MANIFEST_PARSE);
    if (!result.success) {
      for (const issue of result.error.issues)
        reader.errors.push(locateIssue(parsed, new Map(), Ticket, issue));
      continue;
    }
    tickets.push({ ticket: result.data, file: parsed.file });
  }
  for (const problem of ticketClashes(tickets)) reader.errors.push(problem);
  return tickets;
}

/**
 * Tickets that share an id, or a file name: a resolve moves a ticket to remediations/resolved/ by
 * its file name, so a second one of that name would overwrite the first's record.
 */
function ticketClashes(tickets: Fleet["tickets"]): ManifestError[] {
  const problems: ManifestError[] = [];
  const ids = new Map<string, string>();
  const names = new Map<string, string>();
  for (const { ticket, file } of tickets) {
    const sameId = ids.get(ticket.id);
    const sameName = names.get(path.basename(file));
    if (sameId !== undefined)
      problems.push(new ManifestError(`ticket id "${ticket.id}" is also ${sameId}'s`, { file }));
    else if (sameName !== undefined)
      problems.push(
        new ManifestError(
          `ticket file name is also ${sameName}'s: resolving one would overwrite the other's record in remediations/resolved/`,
          { file },
        ),
      );
    ids.set(ticket.id, file);
    names.set(path.basename(file), file);
  }
  return problems;
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
    groups: NO_GROUPS,
    spec,
    ssh: spec.ssh ?? NO_SSH,
  };
  return { dir, settings: {}, nodes: [node], tickets: [] };
}
