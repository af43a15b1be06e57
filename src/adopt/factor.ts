// Factoring a fleet's snapshots into layers: a value every node shares goes to fleet.yaml, a value
// most members of a group share to the group's file, the rest to each node's file. Pure: data in,
// layers out. Layers hold keyed lists (files, units) as maps by key, as the loader's layers do.
//
// A value is lifted into a layer only where every node that layer reaches declares that path, so
// no node has to delete what a layer declared, only replace it with its own value (a file or unit
// merges field by field, so its own sets to null the fields it lacks): the merge of a node's
// layers is its snapshot by construction, and `mergedSpecOf` lets callers check it.
import { keyedItems, keyedMapsAsLists, SPEC_LIST_SHAPES } from "../manifest/lists.js";
import { mergeLayers } from "../manifest/merge-layers.js";
import type { Layer } from "../manifest/layer.js";
import {
  childKey,
  isPlainMap,
  pathKey,
  replaceAt,
  valueAt,
  type PlainMap,
  type SpecPath,
} from "../spec-path.js";

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
  /** The path key, as `pathKey` writes it. */
  key: string;
  path: string[];
  value: unknown;
  /** Canonical text of the value: equal values, equal texts. */
  text: string;
}

/**
 * A place in a spec, shared by every spec walked with the same root: its path is built once, and
 * the values found there are interned by canonical text, so equal values are one Leaf and compare
 * by identity. Ten thousand nodes' shared packages are one set of Leafs, not one per node.
 */
interface Slot {
  key: string;
  path: string[];
  /** Whether this is a keyed list held as a map: its items are leaves, not walked. */
  keyed: boolean;
  children: Map<string, Slot>;
  byText: Map<string, Leaf>;
  /** String values seen here, to their Leaf: no canonical text to build for a value seen before. */
  strings: Map<string, Leaf>;
}

const KEYED = new Set(SPEC_LIST_SHAPES.keyedLists.map((k) => pathKey(k.path)));

const newSlot = (key: string, path: string[]): Slot => ({
  key,
  path,
  keyed: KEYED.has(key),
  children: new Map(),
  byText: new Map(),
  strings: new Map(),
});

const rootSlot = () => newSlot("[]", []);

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
  for (const { path, key } of SPEC_LIST_SHAPES.keyedLists) {
    const list = valueAt(out, path);
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

/** The Leaf at `slot` holding `value`: the one every spec holding an equal value there shares. */
function leafAt(slot: Slot, value: unknown): Leaf {
  const known = typeof value === "string" ? slot.strings.get(value) : undefined;
  if (known) return known;
  const text = canonical(value);
  let leaf = slot.byText.get(text);
  if (!leaf) slot.byText.set(text, (leaf = { key: slot.key, path: slot.path, value, text }));
  if (typeof value === "string") slot.strings.set(value, leaf);
  return leaf;
}

/**
 * The values of a spec that layers replace whole, in the spec's order: scalars, lists, a keyed
 * list's items, and empty maps; maps merge key by key, so their keys are walked. One Leaf per path.
 */
function leavesOf(spec: PlainMap, root: Slot = rootSlot()): Leaf[] {
  const leaves: Leaf[] = [];
  const walk = (value: unknown, slot: Slot, keyedParent: boolean) => {
    if (isPlainMap(value) && !keyedParent) {
      const entries = Object.entries(value);
      // The spec itself is never a leaf: an empty spec declares nothing.
      if (entries.length || slot === root) {
        for (const [k, v] of entries) {
          let child = slot.children.get(k);
          if (!child)
            slot.children.set(k, (child = newSlot(childKey(slot.key, k), [...slot.path, k])));
          walk(v, child, slot.keyed);
        }
        return;
      }
    }
    leaves.push(leafAt(slot, value));
  };
  walk(asMaps(spec), root, false);
  return leaves;
}

const byKey = (leaves: readonly Leaf[]) => new Map(leaves.map((l) => [l.key, l]));

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

/**
 * `leaf` as a later layer writes it over `under`, the value the layers below give its path. A keyed
 * item (a file, a unit) merges field by field, so each field `under` has and `leaf` lacks is
 * written as `null`: a host's root-only file, declared by mode and owner, over a group's contents.
 */
function over(leaf: Leaf, under: Leaf | undefined): Leaf {
  if (!under || !isPlainMap(leaf.value) || !isPlainMap(under.value)) return leaf;
  const own = leaf.value;
  const below = under.value;
  const dropped = Object.keys(below).filter((k) => below[k] !== null && !Object.hasOwn(own, k));
  if (!dropped.length) return leaf;
  const value: PlainMap = { ...own };
  for (const k of dropped) setOwn(value, k, null);
  return { ...leaf, value, text: canonical(value) };
}

/** A group's ancestors, outermost first, then the group: the order the loader applies them. */
export function expandGroups(
  names: readonly string[],
  parents: ReadonlyMap<string, readonly string[]>,
): string[] {
  const out = new Set<string>();
  const visit = (name: string, stack: readonly string[]) => {
    if (out.has(name) || stack.includes(name)) return;
    for (const parent of parents.get(name) ?? []) visit(parent, [...stack, name]);
    out.add(name);
  };
  for (const name of names) visit(name, []);
  return [...out];
}

/**
 * The leaves of `holders[0]` that every one of `holders` holds, in its order. Leaves are
 * interned, so each holder's are counted once: linear in the leaves, whatever the holders' count.
 */
function sharedLeaves(holders: readonly { leaves: readonly Leaf[] }[]): Leaf[] {
  const counts = new Map<Leaf, number>();
  for (const holder of holders)
    for (const leaf of holder.leaves) counts.set(leaf, (counts.get(leaf) ?? 0) + 1);
  return holders[0]!.leaves.filter((leaf) => counts.get(leaf) === holders.length);
}

/**
 * A group's values: at each path every member declares, the value more than half of them hold
 * (two at least), in the order members first hold them. A member holding another value there
 * overrides it in its own file (a list replaced whole: the web node with one more port); a path
 * some member lacks is lifted only when all hold it, so no member has to delete a value.
 */
function majorityLeaves(members: readonly { leaves: readonly Leaf[] }[]): Leaf[] {
  const byKey = new Map<string, Map<Leaf, number>>();
  for (const member of members)
    for (const leaf of member.leaves) {
      let counts = byKey.get(leaf.key);
      if (!counts) byKey.set(leaf.key, (counts = new Map()));
      counts.set(leaf, (counts.get(leaf) ?? 0) + 1);
    }
  const out: Leaf[] = [];
  for (const counts of byKey.values()) {
    let holders = 0;
    let best: [Leaf, number] | undefined;
    for (const entry of counts) {
      holders += entry[1];
      if (!best || entry[1] > best[1]) best = entry;
    }
    if (holders === members.length && best![1] >= 2 && best![1] * 2 > members.length)
      out.push(best![0]);
  }
  return out;
}

/** `later` merged onto `base` as the loader merges a later layer's map: deeply, `null` deleting. */
function mergedMap(base: PlainMap, later: PlainMap): PlainMap {
  const out: PlainMap = { ...base };
  for (const [k, v] of Object.entries(later)) {
    const under = Object.hasOwn(out, k) ? out[k] : undefined;
    if (v === null) delete out[k];
    else setOwn(out, k, isPlainMap(v) && isPlainMap(under) ? mergedMap(under, v) : v);
  }
  return out;
}

/**
 * The value a node's groups give a path, as written (see `over`): the last of them (in merge
 * order) declaring it; a keyed item, which merges field by field, merged over those before it.
 */
function inheritedLeaf(
  groups: readonly string[],
  declaredBy: ReadonlyMap<string, ReadonlyMap<string, Leaf>>,
  key: string,
): Leaf | undefined {
  let found: Leaf | undefined;
  for (const group of groups) {
    const leaf = declaredBy.get(group)?.get(key);
    if (!leaf) continue;
    if (found && isPlainMap(found.value) && isPlainMap(leaf.value)) {
      const value = mergedMap(found.value, leaf.value);
      found = { ...leaf, value, text: canonical(value) };
    } else found = leaf;
  }
  return found;
}

interface Holders {
  members: string[];
  leaves: Leaf[];
  /** The members, one a line: the set's identity and sort key. */
  set: string;
}

/**
 * Where there are no groups: every set of two or more nodes that hold exactly the same values
 * beyond the fleet's becomes one group, `shared-1`, `shared-2`… (largest sets first), when
 * declaring those values once saves lines (values × (members − 1) ≥ members).
 */
function valueGroups(
  nodes: readonly { name: string; leaves: readonly Leaf[] }[],
  fleetKeys: ReadonlySet<string>,
): Map<string, Holders> {
  const holders = new Map<string, Holders>();
  const byLeaf = new Map<Leaf, string[]>();
  for (const node of nodes)
    for (const leaf of node.leaves) {
      if (fleetKeys.has(leaf.key)) continue;
      const list = byLeaf.get(leaf);
      if (list) list.push(node.name);
      else byLeaf.set(leaf, [node.name]);
    }
  for (const [leaf, members] of byLeaf) {
    if (members.length < 2 || members.length === nodes.length) continue;
    const set = members.join("\n");
    let entry = holders.get(set);
    if (!entry) holders.set(set, (entry = { members, leaves: [], set }));
    entry.leaves.push(leaf);
  }
  const kept = [...holders.values()]
    .filter((h) => h.leaves.length * (h.members.length - 1) >= h.members.length)
    .sort((a, b) => b.members.length - a.members.length || (a.set < b.set ? -1 : 1));
  return new Map(kept.map((h, i) => [`shared-${i + 1}`, h]));
}

/** Factors the nodes' snapshots into fleet, group and node layers. */
export function factorFleet(input: FactorInput): Factored {
  const root = rootSlot();
  const nodes = input.nodes.map((n) => ({ ...n, leaves: leavesOf(n.spec, root) }));
  const fleet: PlainMap = {};
  const fleetKeys = new Set<string>();
  // One node alone shares nothing with a fleet: its values are its own.
  if (nodes.length >= 2 && input.fleet !== false)
    for (const leaf of sharedLeaves(nodes)) {
      setLeaf(fleet, leaf);
      fleetKeys.add(leaf.key);
    }
  // What is left of each node once the fleet's values are taken out.
  const rest = nodes.map((n) => n.leaves.filter((leaf) => !fleetKeys.has(leaf.key)));

  const groups = new Map<string, FactoredLayer>();
  const declaredBy = new Map<string, Map<string, Leaf>>();
  const nodeGroups = new Map(nodes.map((n) => [n.name, [...n.groups]]));
  const parents = new Map(input.groups);
  if (input.byValue && nodes.every((n) => n.groups.length === 0)) {
    for (const [name, { members, leaves }] of valueGroups(nodes, fleetKeys)) {
      const spec: PlainMap = {};
      for (const leaf of leaves) setLeaf(spec, leaf);
      groups.set(name, { groups: [], spec });
      declaredBy.set(name, new Map(leaves.map((l) => [l.key, l])));
      parents.set(name, []);
      for (const member of members) nodeGroups.get(member)!.push(name);
    }
  } else {
    // Parents first, so a value a parent declares is not declared again by its children.
    const order = expandGroups([...input.groups.keys()], input.groups);
    const membersOf = new Map<string, { leaves: Leaf[] }[]>();
    for (const [i, node] of nodes.entries())
      for (const group of expandGroups(node.groups, input.groups)) {
        const members = membersOf.get(group);
        const member = { leaves: rest[i]! };
        if (members) members.push(member);
        else membersOf.set(group, [member]);
      }
    // What every member of a group holds (a group of two or more): a value some child group holds
    // on all its members goes to that child, not to a parent whose other members would override it.
    const unanimous = new Map<string, Set<Leaf>>();
    for (const [group, members] of membersOf)
      if (members.length >= 2) unanimous.set(group, new Set(sharedLeaves(members)));
    const childrenOf = new Map<string, string[]>();
    for (const [child, parents] of input.groups)
      for (const parent of parents)
        childrenOf.set(parent, [...(childrenOf.get(parent) ?? []), child]);
    for (const name of order) {
      const members = membersOf.get(name) ?? [];
      const spec: PlainMap = {};
      const keys = new Map<string, Leaf>();
      const inherited = expandGroups(input.groups.get(name) ?? [], input.groups);
      const own = unanimous.get(name);
      const heldByChild = (leaf: Leaf) =>
        (childrenOf.get(name) ?? []).some((c) => unanimous.get(c)?.has(leaf));
      // A group of one is that node's role, but nothing says which of its values are the role's.
      if (members.length >= 2)
        for (const leaf of majorityLeaves(members)) {
          const under = inheritedLeaf(inherited, declaredBy, leaf.key);
          if (under?.text === leaf.text) continue;
          if (!own?.has(leaf) && heldByChild(leaf)) continue;
          const written = over(leaf, under);
          setLeaf(spec, written);
          keys.set(leaf.key, written);
        }
      groups.set(name, { groups: [...(input.groups.get(name) ?? [])], spec });
      declaredBy.set(name, keys);
    }
  }

  const out = new Map<string, FactoredLayer>();
  for (const [i, node] of nodes.entries()) {
    const own = nodeGroups.get(node.name)!;
    const reached = expandGroups(own, parents);
    const spec: PlainMap = {};
    for (const leaf of rest[i]!) {
      const under = inheritedLeaf(reached, declaredBy, leaf.key);
      if (under?.text !== leaf.text) setLeaf(spec, over(leaf, under));
    }
    out.set(node.name, { groups: own, spec });
  }
  return { fleet, groups, nodes: out };
}

/** A layer of `value` as the loader reads one: each `null` taken out as the path it deletes. */
function layer(file: string, value: PlainMap): Layer {
  const deletions: SpecPath[] = [];
  // Maps with no null inside are kept as they are: a merged base is not copied per node.
  const strip = (map: PlainMap, at: string[]): PlainMap => {
    let out: PlainMap | undefined;
    for (const [k, v] of Object.entries(map)) {
      const kept = v === null ? undefined : isPlainMap(v) ? strip(v, [...at, k]) : v;
      if (kept === v) continue;
      out ??= { ...map };
      if (v === null) {
        deletions.push([...at, k]);
        delete out[k];
      } else setOwn(out, k, kept);
    }
    return out ?? map;
  };
  return { file, value: strip(value, []), deletions, origins: new Map() };
}

// Per factored tree (never changed once made): its group parents, and the merge of fleet.yaml
// and each list of groups nodes build on (keyed lists as maps), done once for all those nodes.
const BASES = new WeakMap<
  Factored,
  { parents: Map<string, string[]>; merged: Map<string, PlainMap> }
>();

/** A node's effective spec from the factored layers, merged as the loader merges them. */
export function mergedSpecOf(factored: Factored, node: string): PlainMap {
  const own = factored.nodes.get(node)!;
  let bases = BASES.get(factored);
  if (!bases)
    BASES.set(
      factored,
      (bases = {
        parents: new Map([...factored.groups].map(([name, g]) => [name, g.groups])),
        merged: new Map(),
      }),
    );
  const groups = expandGroups(own.groups, bases.parents);
  const id = JSON.stringify(groups);
  let base = bases.merged.get(id);
  if (!base) {
    base = asMaps(
      mergeLayers([
        layer("fleet.yaml", factored.fleet),
        ...groups.map((g) => layer(`groups/${g}.yaml`, factored.groups.get(g)?.spec ?? {})),
      ]),
    );
    bases.merged.set(id, base);
  }
  return mergeLayers([layer("base", base), layer(`nodes/${node}.yaml`, own.spec)]);
}

/** `spec` with `added` merged over it as a later layer merges: keyed lists by key. */
export const mergedOver = (spec: PlainMap, added: PlainMap): PlainMap =>
  mergeLayers([layer("spec", asMaps(spec)), layer("added", asMaps(added))]);

/** Whether two specs declare the same: keyed lists compared by key, empty maps as nothing. */
export const sameSpec = (a: PlainMap, b: PlainMap): boolean => sameValue(asMaps(a), asMaps(b));

/** Whether a value declares nothing: an empty map, or maps holding only such. */
const empty = (value: unknown): boolean => isPlainMap(value) && Object.values(value).every(empty);

/** A map's entries that declare something. */
const declared = (map: PlainMap) => Object.entries(map).filter(([, v]) => !empty(v));

/**
 * Whether two values have the same canonical text once empty maps are left out, without building
 * it: maps by key whatever their order, a value both share by identity at once.
 */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (isPlainMap(a) && isPlainMap(b)) {
    const [inA, inB] = [declared(a), declared(b)];
    if (inA.length !== inB.length) return false;
    // Keys mostly come in the same order: paired by position, looked up only where they are not.
    let byKey: Map<string, unknown> | undefined;
    return inA.every(([k, v], i) => {
      const [kb, w] = inB[i]!;
      if (k === kb) return sameValue(v, w);
      byKey ??= new Map(inB);
      return byKey.has(k) && sameValue(v, byKey.get(k));
    });
  }
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => canonical(v) === canonical(b[i]));
  if (typeof a === "string" && typeof b === "string") return false;
  return canonical(isPlainMap(a) ? pruned(a) : a) === canonical(isPlainMap(b) ? pruned(b) : b);
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
export const asFileSpec = (spec: PlainMap): PlainMap => keyedMapsAsLists(spec, SPEC_LIST_SHAPES);

/**
 * What a node's own file must say so that `base` (its existing layers merged) becomes `spec`:
 * each value that differs, and `null` for each value `base` declares and `spec` does not.
 */
export function overridesOver(base: PlainMap, spec: PlainMap): PlainMap {
  const want = byKey(leavesOf(spec));
  const have = byKey(leavesOf(base));
  const out: PlainMap = {};
  for (const [key, leaf] of want) {
    const under = have.get(key);
    if (under?.text !== leaf.text) setLeaf(out, over(leaf, under));
  }
  // An empty map `base` declares where `spec` declares keys inside it is no value to delete.
  const within = new Set(
    [...want.values()].flatMap((l) => l.path.map((_, i) => pathKey(l.path.slice(0, i)))),
  );
  for (const [key, leaf] of have)
    if (!want.has(key) && !within.has(key)) setLeaf(out, { ...leaf, value: null, text: "null" });
  return out;
}
