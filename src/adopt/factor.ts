// Factoring a fleet's snapshots into layers: a value every node shares goes to fleet.yaml, a value
// every member of a group shares to the group's file, the rest to each node's file. Pure: data in,
// layers out. Layers hold keyed lists (files, units) as maps by key, as the loader's layers do.
//
// A value is lifted into a layer only when every node that layer reaches holds it, so no layer
// ever has to delete or override what an earlier one declared: the merge of a node's layers is
// its snapshot by construction, and `mergedSpecOf` lets callers check it.
import {
  childKey,
  isPlainMap,
  keyedItems,
  keyedMapsAsLists,
  mapAt,
  MANIFEST_LISTS,
  pathKey,
  replaceAt,
  type PlainMap,
} from "../manifest/lists.js";
import { mergeLayers } from "../manifest/merge.js";
import type { Layer } from "../manifest/layer.js";

export interface NodeSnapshot {
  name: string;
  /** The node's groups, most specific only. */
  groups: string[];
  /** The declared state its snapshot took (no host, groups or ssh). */
  spec: PlainMap;
}

export interface FactorInput {
  nodes: readonly NodeSnapshot[];
  /** Every group the nodes name: group -> the groups it builds on (its parents), in order. */
  groups: ReadonlyMap<string, readonly string[]>;
  /** With no group named anywhere: group nodes by the values they share (see `valueGroups`). */
  byValue?: boolean;
  /** fleet.yaml may take the values every node shares (not when the tree already has one). */
  fleet?: boolean;
}

export interface FactoredLayer {
  /** The `groups:` of the file: a node's groups, a group's parents. */
  groups: string[];
  spec: PlainMap;
}

export interface Factored {
  fleet: PlainMap;
  groups: Map<string, FactoredLayer>;
  nodes: Map<string, FactoredLayer>;
}

interface Leaf {
  path: string[];
  value: unknown;
  /** Canonical text of the value: equal values, equal texts. */
  text: string;
}

const KEYED = new Set(MANIFEST_LISTS.keyedLists.map((k) => pathKey(k.path)));
// Paths by key, shared by every node holding a value there: ten thousand nodes' package names
// are one set of arrays, not one per node.
const PATHS = new Map<string, string[]>();

/** JSON with map keys sorted: the same text for equal values, whatever their key order. */
export function canonical(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isPlainMap(value))
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(",")}}`;
  return JSON.stringify(value) ?? "null";
}

/** A spec with its keyed lists as maps: only the maps on the way to one are copied. */
function asMaps(spec: PlainMap): PlainMap {
  let out = spec;
  for (const { path, key } of MANIFEST_LISTS.keyedLists) {
    const list = mapAt(out, path.slice(0, -1))?.[String(path.at(-1))];
    const byKey = Array.isArray(list) ? keyedItems(list, key) : undefined;
    if (byKey) out = replaceAt(out, path, byKey);
  }
  return out;
}

/** Sets an own property, so a host's `__proto__` package is a key like any other. */
function setOwn(target: PlainMap, key: string, value: unknown): void {
  if (key === "__proto__")
    Object.defineProperty(target, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  else target[key] = value;
}

/**
 * The values of a spec that layers replace whole: scalars, lists, a keyed list's items, and empty
 * maps; maps merge key by key, so their keys are walked.
 */
function leavesOf(spec: PlainMap, interned?: Map<string, Map<string, Leaf>>): Map<string, Leaf> {
  const leaves = new Map<string, Leaf>();
  const walk = (value: unknown, path: readonly string[], key: string, keyedParent: boolean) => {
    // The spec itself is never a leaf: an empty spec declares nothing.
    if (isPlainMap(value) && !keyedParent && (Object.keys(value).length || !path.length)) {
      const keyed = KEYED.has(key);
      for (const [k, v] of Object.entries(value)) {
        const child = childKey(key, k);
        let childPath = PATHS.get(child);
        if (!childPath) PATHS.set(child, (childPath = [...path, k]));
        walk(v, childPath, child, keyed);
      }
      return;
    }
    const text = canonical(value);
    // Nodes holding the same value hold one Leaf: a fleet's shared packages are kept once.
    let byText = interned?.get(key);
    if (interned && !byText) interned.set(key, (byText = new Map()));
    let leaf = byText?.get(text);
    if (!leaf) {
      leaf = { path: path as string[], value, text };
      byText?.set(text, leaf);
    }
    leaves.set(key, leaf);
  };
  walk(asMaps(spec), [], "[]", false);
  return leaves;
}

function setLeaf(target: PlainMap, leaf: Leaf): void {
  let level = target;
  for (const part of leaf.path.slice(0, -1)) {
    const next = Object.hasOwn(level, part) ? level[part] : undefined;
    if (isPlainMap(next)) level = next;
    else {
      const created: PlainMap = {};
      setOwn(level, part, created);
      level = created;
    }
  }
  // A map is a leaf only when empty (or a keyed item): copied, so nothing set later lands in the
  // snapshot it came from.
  setOwn(level, leaf.path.at(-1)!, isPlainMap(leaf.value) ? { ...leaf.value } : leaf.value);
}

/** A group's ancestors, outermost first, then the group: the order the loader applies them. */
export function expandGroups(
  names: readonly string[],
  parents: ReadonlyMap<string, readonly string[]>,
): string[] {
  const out: string[] = [];
  const visit = (name: string, stack: readonly string[]) => {
    if (out.includes(name) || stack.includes(name)) return;
    for (const parent of parents.get(name) ?? []) visit(parent, [...stack, name]);
    out.push(name);
  };
  for (const name of names) visit(name, []);
  return out;
}

/** Whether every node holds the leaf at `key` with the same value as `leaf`. */
const sharedBy = (
  nodes: readonly { leaves: Map<string, Leaf> }[],
  key: string,
  leaf: Leaf,
): boolean => nodes.every((n) => n.leaves.get(key) === leaf);

/**
 * Where there are no groups: every set of two or more nodes that hold exactly the same values
 * beyond the fleet's becomes one group, `shared-1`, `shared-2`… (largest sets first), when
 * declaring those values once saves lines (values × (members − 1) ≥ members).
 */
function valueGroups(
  nodes: readonly { name: string; leaves: Map<string, Leaf> }[],
  fleetKeys: ReadonlySet<string>,
): Map<string, { members: string[]; keys: string[] }> {
  const holders = new Map<string, { members: string[]; keys: string[] }>();
  const byLeaf = new Map<string, string[]>();
  for (const node of nodes)
    for (const [key, leaf] of node.leaves) {
      if (fleetKeys.has(key)) continue;
      const id = `${key}\n${leaf.text}`;
      const list = byLeaf.get(id);
      if (list) list.push(node.name);
      else byLeaf.set(id, [node.name]);
    }
  for (const [id, members] of byLeaf) {
    if (members.length < 2 || members.length === nodes.length) continue;
    const set = members.join("\n");
    const entry = holders.get(set) ?? { members, keys: [] };
    entry.keys.push(id.slice(0, id.indexOf("\n")));
    holders.set(set, entry);
  }
  const kept = [...holders.values()]
    .filter((h) => h.keys.length * (h.members.length - 1) >= h.members.length)
    .sort(
      (a, b) =>
        b.members.length - a.members.length ||
        (a.members.join("\n") < b.members.join("\n") ? -1 : 1),
    );
  return new Map(kept.map((h, i) => [`shared-${i + 1}`, h]));
}

/** Factors the nodes' snapshots into fleet, group and node layers. */
export function factorFleet(input: FactorInput): Factored {
  const interned = new Map<string, Map<string, Leaf>>();
  const nodes = input.nodes.map((n) => ({ ...n, leaves: leavesOf(n.spec, interned) }));
  const fleet: PlainMap = {};
  const fleetKeys = new Set<string>();
  // One node alone shares nothing with a fleet: its values are its own.
  if (nodes.length >= 2 && input.fleet !== false)
    for (const [key, leaf] of nodes[0]!.leaves)
      if (sharedBy(nodes, key, leaf)) {
        setLeaf(fleet, leaf);
        fleetKeys.add(key);
      }

  const groups = new Map<string, FactoredLayer>();
  const declaredBy = new Map<string, Set<string>>();
  const nodeGroups = new Map(nodes.map((n) => [n.name, [...n.groups]]));
  const parents = new Map(input.groups);
  if (input.byValue && nodes.every((n) => n.groups.length === 0)) {
    for (const [name, { members, keys }] of valueGroups(nodes, fleetKeys)) {
      const spec: PlainMap = {};
      const first = nodes.find((n) => n.name === members[0])!;
      for (const key of keys) setLeaf(spec, first.leaves.get(key)!);
      groups.set(name, { groups: [], spec });
      declaredBy.set(name, new Set(keys));
      parents.set(name, []);
      for (const member of members) nodeGroups.get(member)!.push(name);
    }
  } else {
    // Parents first, so a value a parent declares is not declared again by its children.
    const order = expandGroups([...input.groups.keys()], input.groups);
    const lineage = new Map(
      nodes.map((n) => [n.name, new Set(expandGroups(n.groups, input.groups))]),
    );
    for (const name of order) {
      const members = nodes.filter((n) => lineage.get(n.name)!.has(name));
      const spec: PlainMap = {};
      const keys = new Set<string>();
      const inherited = expandGroups(input.groups.get(name) ?? [], input.groups);
      // A group of one is that node's role, but nothing says which of its values are the role's.
      if (members.length >= 2)
        for (const [key, leaf] of members[0]!.leaves) {
          if (fleetKeys.has(key) || inherited.some((p) => declaredBy.get(p)?.has(key))) continue;
          if (sharedBy(members, key, leaf)) {
            setLeaf(spec, leaf);
            keys.add(key);
          }
        }
      groups.set(name, { groups: [...(input.groups.get(name) ?? [])], spec });
      declaredBy.set(name, keys);
    }
  }

  const out = new Map<string, FactoredLayer>();
  for (const node of nodes) {
    const own = nodeGroups.get(node.name)!;
    const reached = expandGroups(own, parents);
    const spec: PlainMap = {};
    for (const [key, leaf] of node.leaves) {
      if (fleetKeys.has(key) || reached.some((g) => declaredBy.get(g)?.has(key))) continue;
      setLeaf(spec, leaf);
    }
    out.set(node.name, { groups: own, spec });
  }
  return { fleet, groups, nodes: out };
}

const layer = (file: string, value: PlainMap): Layer => ({
  file,
  value,
  deletions: [],
  origins: new Map(),
});

/** A node's effective spec from the factored layers, merged as the loader merges them. */
export function mergedSpecOf(factored: Factored, node: string): PlainMap {
  const own = factored.nodes.get(node)!;
  const parents = new Map([...factored.groups].map(([name, g]) => [name, g.groups]));
  return mergeLayers([
    layer("fleet.yaml", factored.fleet),
    ...expandGroups(own.groups, parents).map((g) =>
      layer(`groups/${g}.yaml`, factored.groups.get(g)?.spec ?? {}),
    ),
    layer(`nodes/${node}.yaml`, own.spec),
  ]);
}

/** Whether two specs declare the same: keyed lists compared by key, empty maps as nothing. */
export function sameSpec(a: PlainMap, b: PlainMap): boolean {
  return canonical(pruned(asMaps(a))) === canonical(pruned(asMaps(b)));
}

function pruned(value: PlainMap): PlainMap {
  const out: PlainMap = {};
  for (const [k, v] of Object.entries(value)) {
    const inner = isPlainMap(v) ? pruned(v) : v;
    if (isPlainMap(inner) && !Object.keys(inner).length) continue;
    setOwn(out, k, inner);
  }
  return out;
}

/** A layer's spec as a file writes it: keyed lists back to lists. */
export const asFileSpec = (spec: PlainMap): PlainMap => keyedMapsAsLists(spec, MANIFEST_LISTS);

/**
 * What a node's own file must say so that `base` (its existing layers merged) becomes `spec`:
 * each value that differs, and `null` for each value `base` declares and `spec` does not.
 */
export function overridesOver(base: PlainMap, spec: PlainMap): PlainMap {
  const want = leavesOf(spec);
  const have = leavesOf(base);
  const out: PlainMap = {};
  for (const [key, leaf] of want) if (have.get(key)?.text !== leaf.text) setLeaf(out, leaf);
  // An empty map `base` declares where `spec` declares keys inside it is no value to delete.
  const within = new Set(
    [...want.values()].flatMap((l) => l.path.map((_, i) => pathKey(l.path.slice(0, i)))),
  );
  for (const [key, leaf] of have)
    if (!want.has(key) && !within.has(key))
      setLeaf(out, { path: leaf.path, value: null, text: "null" });
  return out;
}
