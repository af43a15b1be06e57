import { constants } from "node:fs";
import { lstat, open, readdir, readlink, realpath, stat } from "node:fs/promises";
import path from "node:path";
import {
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  type Document,
  type Node as YamlNode,
} from "yaml";
import type { z } from "zod";
import type { AnyDomain, SpecPath } from "../domains/domain.js";
import { DOMAINS } from "../domains/registry.js";
import { ManifestError, ManifestErrors } from "../errors.js";
import {
  FLEET_SETTINGS,
  FleetSpec,
  GroupSpec,
  NodeName,
  NodeSpec,
  type SshSettings,
} from "./schema.js";
import { nearest } from "./suggest.js";
import { Ticket } from "./tickets.js";
import { keysAt } from "./zod-shape.js";

export const MAX_MANIFEST_BYTES = 1024 * 1024;
/** Alias expansions allowed per file: enough for sharing a block, far from a billion laughs. */
const MAX_ALIAS_COUNT = 100;

/** Where a value was declared: the file (as the repository names it), line, column and YAML path. */
export interface Origin {
  file: string;
  line: number;
  col: number;
  yamlPath: (string | number)[];
  /** The value was written in the sysctl.conf-style `- key = value` list form. */
  form?: "list";
}

/** One manifest file's contribution to a node: validated values, `null` deletions and origins. */
export interface Layer {
  file: string;
  value: Record<string, unknown>;
  deletions: SpecPath[];
  origins: Map<string, Origin>;
}

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

export const pathKey = (p: SpecPath): string => JSON.stringify(p);

/** The origin of the declared value at `path`: the last layer that set it, else its nearest container. */
export function sourceOf(node: LoadedNode, specPath: SpecPath): Origin {
  for (let len = specPath.length; len > 0; len--) {
    const key = pathKey(specPath.slice(0, len));
    for (let i = node.layers.length - 1; i >= 0; i--) {
      const origin = node.layers[i]!.origins.get(key);
      if (origin) return origin;
    }
  }
  return { file: node.file, line: 1, col: 1, yamlPath: [] };
}

const domainAtPath = new Map<string, AnyDomain>(DOMAINS.map((d) => [pathKey(d.specPath), d]));

interface ParsedFile {
  file: string;
  doc: Document;
  lines: LineCounter;
}

class FileReader {
  readonly errors: ManifestError[] = [];
  constructor(
    private readonly dir: string,
    private readonly displayPrefix: string,
  ) {}

  display(abs: string): string {
    return path.join(this.displayPrefix, path.relative(this.dir, abs));
  }

  /**
   * A symbolic link in the tree is refused, never followed: one leaving the tree would read any file
   * on the machine, and one inside it could not be edited by a pull request like a file can.
   * Returns whether `abs` is a link (and records the error).
   */
  async refuseLink(abs: string): Promise<boolean> {
    if (!(await lstat(abs).catch(() => undefined))?.isSymbolicLink()) return false;
    const file = this.display(abs);
    const target = await readlink(abs).catch(() => "?");
    const resolved = await realpath(abs).catch(() => path.resolve(path.dirname(abs), target));
    const root = await realpath(this.dir).catch(() => this.dir);
    const inside = resolved === root || resolved.startsWith(`${root}${path.sep}`);
    const shown = this.display(path.join(this.dir, path.relative(root, resolved)));
    this.errors.push(
      inside
        ? new ManifestError(
            `is a symbolic link (to ${shown}); links in the manifest tree are not followed`,
            { file },
            "copy the file, or share the values through a group",
          )
        : new ManifestError(
            `is a symbolic link leaving the manifest tree (to ${target}); not read`,
            { file },
          ),
    );
    return true;
  }

  /** A file's text, at most MAX_MANIFEST_BYTES, never through a link; undefined (error recorded) when not read. */
  async readText(abs: string): Promise<string | undefined> {
    const file = this.display(abs);
    if (await this.refuseLink(abs)) return undefined;
    const info = await stat(abs).catch(() => undefined);
    if (!info?.isFile()) return undefined;
    const size = info.size;
    if (size > MAX_MANIFEST_BYTES) {
      this.errors.push(
        new ManifestError(
          `file is ${size} bytes, over the ${MAX_MANIFEST_BYTES}-byte cap for a manifest file; not read`,
          { file },
        ),
      );
      return undefined;
    }
    // O_NOFOLLOW: a link swapped in after the check above is still not read.
    const handle = await open(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
    let text: string;
    try {
      // Read at most the cap even if the file grew after stat().
      const buffer = Buffer.alloc(Math.min(size, MAX_MANIFEST_BYTES) + 1);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      if (bytesRead > MAX_MANIFEST_BYTES) {
        this.errors.push(
          new ManifestError(`file grew over the ${MAX_MANIFEST_BYTES}-byte cap while being read`, {
            file,
          }),
        );
        return undefined;
      }
      text = buffer.subarray(0, bytesRead).toString("utf8");
    } finally {
      await handle.close();
    }
    return text;
  }

  async parse(abs: string): Promise<ParsedFile | undefined> {
    const file = this.display(abs);
    const text = await this.readText(abs);
    if (text === undefined) return undefined;
    const lines = new LineCounter();
    let doc: Document;
    try {
      doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: true });
    } catch (error) {
      // Nesting deep enough to exhaust the parser's stack: a resource limit, not a crash.
      this.errors.push(
        new ManifestError(`YAML too deeply nested to read (${(error as Error).message})`, { file }),
      );
      return undefined;
    }
    for (const error of doc.errors) {
      const pos = error.linePos?.[0];
      this.errors.push(
        new ManifestError(`invalid YAML: ${error.message.split("\n")[0]}`, {
          file,
          line: pos?.line,
          col: pos?.col,
        }),
      );
    }
    if (doc.errors.length) return undefined;
    if (doc.contents !== null && !isMap(doc.contents)) {
      this.errors.push(
        new ManifestError(
          "a manifest file must be a YAML map of keys",
          this.at({ file, doc, lines }, doc.contents),
        ),
      );
      return undefined;
    }
    return { file, doc, lines };
  }

  /** The file's data; aliases expanding past a limit (an alias bomb) are an error naming the file. */
  toJS(parsed: ParsedFile): unknown {
    if (!parsed.doc.contents) return {};
    try {
      return parsed.doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (error) {
      const { message } = error as Error;
      const reason = /alias/i.test(message)
        ? `more than ${MAX_ALIAS_COUNT} alias expansions (a YAML alias bomb?)`
        : message;
      this.errors.push(
        new ManifestError(`YAML resource limit: ${reason}; not read`, { file: parsed.file }),
      );
      return undefined;
    }
  }

  at(
    parsed: ParsedFile,
    node: YamlNode | null | undefined,
    keyNode?: unknown,
  ): { file: string; line?: number; col?: number } {
    const target = (keyNode as YamlNode | undefined)?.range ? (keyNode as YamlNode) : node;
    if (!target?.range) return { file: parsed.file };
    const pos = parsed.lines.linePos(target.range[0]);
    return { file: parsed.file, line: pos.line, col: pos.col };
  }
}

/**
 * Turns one parsed file into a layer: origins from the YAML tree, `- key = value` list forms into maps,
 * `null` values into deletions, then zod validation with every issue located at file:line:col.
 */
function toLayer(
  reader: FileReader,
  parsed: ParsedFile,
  schema: z.ZodType,
): { layer?: Layer; settings?: Record<string, unknown> } {
  const origins = new Map<string, Origin>();
  const errorsBefore = reader.errors.length;
  const raw = reader.toJS(parsed) as Record<string, unknown> | undefined;
  if (raw === undefined) return {};

  const walk = (
    node: unknown,
    yamlPath: (string | number)[],
    canon: (string | number)[],
    keyNode?: unknown,
  ): void => {
    if (!node || typeof node !== "object") return;
    const loc = reader.at(parsed, node as YamlNode, keyNode);
    origins.set(pathKey(canon), {
      file: parsed.file,
      line: loc.line ?? 1,
      col: loc.col ?? 1,
      yamlPath,
    });
    const domain = domainAtPath.get(pathKey(canon));
    if (isMap(node)) {
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        walk(pair.value ?? pair.key, [...yamlPath, key], [...canon, key], pair.key);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => {
        if (domain?.listForm && isScalar(item) && typeof item.value === "string") {
          const entry = domain.listForm(item.value);
          const itemLoc = reader.at(parsed, item);
          if (!entry) {
            reader.errors.push(
              new ManifestError(`"${item.value}" is not of the form "name = value"`, itemLoc),
            );
            return;
          }
          origins.set(pathKey([...canon, entry[0]]), {
            ...itemLoc,
            line: itemLoc.line ?? 1,
            col: itemLoc.col ?? 1,
            yamlPath: [...yamlPath, i],
            form: "list",
          });
          return;
        }
        const itemKey = domain?.listKey && isMap(item) ? item.get(domain.listKey) : undefined;
        walk(item, [...yamlPath, i], [...canon, typeof itemKey === "string" ? itemKey : i]);
      });
    }
  };
  walk(parsed.doc.contents, [], []);

  // The `- net.ipv4.tcp_syncookies = 1` list becomes the map it means.
  for (const domain of DOMAINS) {
    if (!domain.listForm) continue;
    const parent = getAt(raw, domain.specPath.slice(0, -1));
    const last = domain.specPath.at(-1)!;
    const list = parent?.[last];
    if (Array.isArray(list) && list.every((item) => typeof item === "string")) {
      parent![last] = Object.fromEntries(
        list.map((item) => domain.listForm!(item)).filter((e) => e !== undefined),
      );
    }
  }

  const deletions: SpecPath[] = [];
  const stripNulls = (value: unknown, canon: (string | number)[]): void => {
    if (!value || typeof value !== "object") return;
    const domain = domainAtPath.get(pathKey(canon));
    if (Array.isArray(value)) {
      value.forEach((item, i) => {
        const itemKey =
          domain?.listKey && item && typeof item === "object"
            ? (item as Record<string, unknown>)[domain.listKey]
            : undefined;
        stripNulls(item, [...canon, typeof itemKey === "string" ? itemKey : i]);
      });
      return;
    }
    for (const [key, child] of Object.entries(value)) {
      if (child === null) {
        deletions.push([...canon, key]);
        delete (value as Record<string, unknown>)[key];
      } else stripNulls(child, [...canon, key]);
    }
  };
  stripNulls(raw, []);

  const result = schema.safeParse(raw);
  if (!result.success) {
    for (const issue of result.error.issues)
      reader.errors.push(locateIssue(reader, parsed, origins, schema, issue));
    return {};
  }
  if (reader.errors.length > errorsBefore) return {};
  const value = result.data as Record<string, unknown>;
  const settings: Record<string, unknown> = {};
  for (const key of FLEET_SETTINGS) {
    if (key in value) {
      settings[key] = value[key];
      delete value[key];
    }
  }
  if (!keyLists(reader, parsed, value, origins)) return {};
  return { layer: { file: parsed.file, value, deletions, origins }, settings };
}

function locateIssue(
  reader: FileReader,
  parsed: ParsedFile,
  origins: Map<string, Origin>,
  schema: z.ZodType,
  issue: z.core.$ZodIssue,
): ManifestError {
  const issuePath = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
  const dotted = issuePath.join(".");
  if (issue.code === "unrecognized_keys") {
    const container = parsed.doc.getIn(issuePath, true) as YamlNode | undefined;
    const key = issue.keys[0]!;
    const pair = isMap(container)
      ? container.items.find((p) => isScalar(p.key) && String(p.key.value) === key)
      : undefined;
    const valid = keysAt(schema, issuePath);
    const suggestion = nearest(key, valid);
    const where = dotted ? ` in ${dotted}` : "";
    return new ManifestError(
      `unknown key "${key}"${where}`,
      reader.at(parsed, container ?? null, pair?.key),
      suggestion
        ? `did you mean "${suggestion}"?`
        : valid.length
          ? `valid keys: ${valid.join(", ")}`
          : undefined,
    );
  }
  const node = parsed.doc.getIn(issuePath, true) as YamlNode | undefined;
  let loc = node?.range ? reader.at(parsed, node) : undefined;
  for (let len = issuePath.length; !loc && len >= 0; len--) {
    const origin = origins.get(pathKey(issuePath.slice(0, len)));
    if (origin) loc = { file: origin.file, line: origin.line, col: origin.col };
  }
  return new ManifestError(
    dotted ? `${dotted}: ${issue.message}` : issue.message,
    loc ?? { file: parsed.file },
  );
}

/** Lists declared per item (files by path, units by name) become maps, so layers merge per item. */
function keyLists(
  reader: FileReader,
  parsed: ParsedFile,
  value: Record<string, unknown>,
  origins: Map<string, Origin>,
): boolean {
  let ok = true;
  for (const domain of DOMAINS) {
    if (!domain.listKey) continue;
    const parent = getAt(value, domain.specPath.slice(0, -1));
    const last = domain.specPath.at(-1)!;
    const list = parent?.[last];
    if (!Array.isArray(list)) continue;
    const byKey: Record<string, unknown> = {};
    for (const item of list as Record<string, unknown>[]) {
      const key = String(item[domain.listKey]);
      if (key in byKey) {
        const origin = origins.get(pathKey([...domain.specPath, key]));
        reader.errors.push(
          new ManifestError(
            `${domain.listKey} "${key}" is declared twice in ${domain.specPath.join(".")}`,
            { file: parsed.file, line: origin?.line, col: origin?.col },
          ),
        );
        ok = false;
      }
      byKey[key] = item;
    }
    parent![last] = byKey;
  }
  return ok;
}

function getAt(
  value: Record<string, unknown>,
  specPath: readonly string[],
): Record<string, unknown> | undefined {
  let current: unknown = value;
  for (const part of specPath) {
    if (!current || typeof current !== "object") return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current && typeof current === "object" && !Array.isArray(current)
    ? (current as Record<string, unknown>)
    : undefined;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === "object" && !Array.isArray(v);

// Merging never mutates a layer: unchanged values are shared between every node that inherits
// them (a fleet-wide package list is held once, not once per node), and only the maps on the
// path to a change are copied. Effective specs are therefore read-only.

/** `value` at `specPath` replaced by `update(old)` (removed when it returns undefined), copying only the path. */
function updateAt(
  value: Record<string, unknown>,
  specPath: SpecPath,
  update: (old: unknown) => unknown,
): Record<string, unknown> {
  const [head, ...rest] = specPath;
  const key = String(head);
  const child = rest.length
    ? isPlainObject(value[key])
      ? updateAt(value[key], rest, update)
      : value[key]
    : update(value[key]);
  if (rest.length && child === value[key]) return value;
  const copy = { ...value };
  if (child === undefined) delete copy[key];
  else copy[key] = child;
  return copy;
}

function mergeValue(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over;
  const merged = { ...base };
  for (const [key, value] of Object.entries(over)) merged[key] = mergeValue(base[key], value);
  return merged;
}

/** fleet.yaml, then groups, then the node: maps merge deeply, a later value wins, `null` deletes. */
export function mergeLayers(layers: readonly Layer[]): Record<string, unknown> {
  let merged: Record<string, unknown> = {};
  for (const layer of layers) {
    for (const deletion of layer.deletions) merged = updateAt(merged, deletion, () => undefined);
    merged = mergeValue(merged, layer.value) as Record<string, unknown>;
  }
  // Keyed lists go back to lists, in declaration order.
  for (const domain of DOMAINS) {
    if (
      domain.listKey &&
      isPlainObject(getAt(merged, domain.specPath.slice(0, -1))?.[domain.specPath.at(-1)!])
    ) {
      merged = updateAt(merged, domain.specPath, (byKey) => Object.values(byKey as object));
    }
  }
  return merged;
}

/** The YAML files under `dir`, and every symbolic link (a linked folder would hide files): parse() refuses links by name. */
/**
 * Layers each valid on their own can combine into a spec that is not (a group's `sha256` plus a
 * node's `contents`; a module loaded by a group and absent by a node): the effective spec is
 * validated again, each error naming the node and every file:line that declared a part of it.
 */
function validateEffective(
  reader: FileReader,
  node: string,
  layers: readonly Layer[],
  effective: Record<string, unknown>,
): boolean {
  const result = NodeSpec.safeParse(effective);
  if (result.success) return true;
  for (const issue of result.error.issues) {
    const issuePath = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
    const prefix = contributorPrefix(effective, issuePath);
    const from = layers.flatMap((layer) => {
      const lines = new Set<number>();
      for (const [key, origin] of layer.origins) {
        const at = JSON.parse(key) as (string | number)[];
        if (at.length > prefix.length && prefix.every((part, i) => at[i] === part))
          lines.add(origin.line);
      }
      return lines.size ? [{ file: layer.file, line: Math.min(...lines) }] : [];
    });
    const where = showSpecPath(prefix);
    const located = from.at(-1) ?? { file: layers.at(-1)!.file, line: 1 };
    const combined = from.map((f) => `${f.file}:${f.line}`).join(" and ");
    reader.errors.push(
      new ManifestError(
        `node ${node}: ${where ? `${where}: ` : ""}${issue.message}, once ${combined} are combined`,
        located,
        "a later file changes only the keys it sets: override the conflicting one there, or set it to null",
      ),
    );
  }
  return false;
}

/** The part of the spec an issue is about: its domain, and the item of a keyed list (a file by its path). */
function contributorPrefix(
  effective: Record<string, unknown>,
  issuePath: (string | number)[],
): (string | number)[] {
  const domain = DOMAINS.find((d) => d.specPath.every((part, i) => issuePath[i] === part));
  if (!domain) return issuePath.filter((p) => typeof p === "string").slice(0, 1);
  const index = issuePath[domain.specPath.length];
  if (!domain.listKey || typeof index !== "number") return [...domain.specPath];
  const list = getAt(effective, domain.specPath.slice(0, -1))?.[domain.specPath.at(-1)!] as
    Record<string, unknown>[] | undefined;
  const item = list?.[index];
  return [...domain.specPath, String(item?.[domain.listKey] ?? index)];
}

/** `files[/etc/app.conf]`, `system.kernel_modules`. */
const showSpecPath = (p: readonly (string | number)[]) =>
  p
    .map((part, i) =>
      typeof part === "string" && /^[A-Za-z_]\w*$/.test(part)
        ? `${i ? "." : ""}${part}`
        : `[${part}]`,
    )
    .join("");

async function listYaml(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true, recursive: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  return entries
    .filter((e) => e.isSymbolicLink() || (e.isFile() && /\.ya?ml$/.test(e.name)))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

export interface LoadOptions {
  /** How file names are shown (and how a PR names them): defaults to the directory relative to cwd. */
  displayPrefix?: string;
  /** Load only these nodes (names); the rest of the tree is still validated when `validateAll`. */
  only?: (name: string) => boolean;
}

/** Reads and validates the whole manifest tree. Throws ManifestErrors listing every problem found. */
export async function loadFleet(dir: string, options: LoadOptions = {}): Promise<Fleet> {
  const abs = path.resolve(dir);
  const dirStat = await stat(abs).catch(() => undefined);
  if (!dirStat?.isDirectory())
    throw new ManifestErrors([
      new ManifestError("manifest directory not found (use --manifests DIR or --repo URL)", {
        file: dir,
      }),
    ]);
  const reader = new FileReader(
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
    const parsed = await reader.parse(fleetFile);
    if (parsed) {
      const { layer, settings: s } = toLayer(reader, parsed, FleetSpec);
      fleetLayer = layer;
      settings = s ?? {};
    }
  }

  const groupFiles = new Map(
    (await list("groups")).map((f) => [path.basename(f).replace(/\.ya?ml$/, ""), f]),
  );
  const groupCache = new Map<string, { layer?: Layer; parsed?: ParsedFile }>();
  const loadGroup = async (name: string) => {
    if (!groupCache.has(name)) {
      const parsed = await reader.parse(groupFiles.get(name)!);
      groupCache.set(name, {
        parsed,
        layer: parsed ? toLayer(reader, parsed, GroupSpec).layer : undefined,
      });
    }
    return groupCache.get(name)!;
  };

  /** Groups in application order: a group's own groups first; each once. */
  const expandGroups = async (
    names: unknown,
    from: { parsed: ParsedFile; layer: Layer },
    stack: string[],
    out: string[],
  ): Promise<void> => {
    if (!Array.isArray(names)) return;
    for (const [i, name] of (names as string[]).entries()) {
      const origin = from.layer.origins.get(pathKey(["groups", i]));
      const loc = { file: from.parsed.file, line: origin?.line, col: origin?.col };
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
      if (!group.layer || !group.parsed) continue;
      await expandGroups(
        group.layer.value.groups,
        { parsed: group.parsed, layer: group.layer },
        [...stack, name],
        out,
      );
      out.push(name);
    }
  };

  const nodes: LoadedNode[] = [];
  const seen = new Map<string, string>();
  for (const nodeFile of await list("nodes")) {
    const name = path.basename(nodeFile).replace(/\.ya?ml$/, "");
    const display = reader.display(nodeFile);
    if (!NodeName.safeParse(name).success) {
      reader.errors.push(
        new ManifestError(
          `node name "${name}" (from the file name) must start with a letter, digit or _ and hold no whitespace, control characters or option syntax`,
          { file: display },
        ),
      );
      continue;
    }
    const first = seen.get(name);
    if (first) {
      reader.errors.push(
        new ManifestError(`duplicate node "${name}": also declared by ${first}`, { file: display }),
      );
      continue;
    }
    seen.set(name, display);
    if (options.only && !options.only(name)) continue;
    const parsed = await reader.parse(nodeFile);
    if (!parsed) continue;
    const { layer } = toLayer(reader, parsed, NodeSpec);
    if (!layer) continue;
    const groups: string[] = [];
    await expandGroups(layer.value.groups, { parsed, layer }, [], groups);
    const layers = [
      ...(fleetLayer ? [fleetLayer] : []),
      ...groups.map((g) => groupCache.get(g)!.layer!).filter(Boolean),
      layer,
    ];
    const effective = mergeLayers(layers);
    if (!validateEffective(reader, name, layers, effective)) continue;
    const { groups: _groups, $schema: _schema, ...merged } = effective as NodeSpec;
    nodes.push({
      name,
      host: (layer.value.host as string | undefined) ?? name,
      file: display,
      layers,
      groups,
      spec: merged,
      ssh: merged.ssh ?? {},
    });
  }
  // Groups nobody uses are still validated: a broken group must not wait for its first node.
  for (const name of groupFiles.keys()) await loadGroup(name);

  const tickets: Fleet["tickets"] = [];
  for (const ticketFile of await list("remediations")) {
    const parsed = await reader.parse(ticketFile);
    if (!parsed) continue;
    const data = reader.toJS(parsed);
    if (data === undefined) continue;
    const result = Ticket.safeParse(data);
    if (!result.success) {
      for (const issue of result.error.issues)
        reader.errors.push(locateIssue(reader, parsed, new Map(), Ticket, issue));
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
  if (!(await stat(abs).catch(() => undefined))?.isFile())
    throw new ManifestErrors([new ManifestError("node-spec file not found", { file })]);
  const reader = new FileReader(
    dir,
    options.displayPrefix ?? (path.relative(process.cwd(), dir) || "."),
  );
  const parsed = await reader.parse(abs);
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
  const spec = mergeLayers([layer]) as NodeSpec;
  delete spec.$schema;
  const node: LoadedNode = {
    name,
    host: (layer.value.host as string | undefined) ?? name,
    file: layer.file,
    layers: [layer],
    groups: [],
    spec,
    ssh: spec.ssh ?? {},
  };
  return { dir, settings: {}, nodes: [node], tickets: [] };
}
