import { append } from "../collections.js";
import type { JsonValue } from "../domains/domain.js";
import { DOMAINS, type AnyDomain } from "../domains/registry.js";
import { declaredIn, type DeclaredChange, type JsonMap } from "../manifest/edit/changes.js";
import type { Layer } from "../manifest/layer.js";
import type { SpecListShapes } from "../manifest/lists.js";
import type { LoadedNode } from "../manifest/load.js";
import { isPlainMap, isPrefix, pathKey, valueAt, type SpecPath } from "../spec-path.js";
import { editedFiles, type Dependants } from "./accept-edits.js";

// Overrides never pile up: accepts that each wrote a node override of a shared value leave, over
// runs, most takers of the shared file carrying the same override. One PR then lifts the value into
// the shared file, removes those overrides and writes the old value into the files of the takers
// that did not carry it, so no node's effective declared state changes.

/** A node file declaring a value that a shared file below it declares otherwise. */
interface Override {
  node: LoadedNode;
  value: JsonValue;
}

/** One value a shared file declares, lifted to the value most of its takers override it with. */
export interface Lift {
  /** The shared file (a group or fleet.yaml). */
  file: string;
  domain: AnyDomain;
  path: SpecPath;
  /** What the shared file declares now, and what it is to declare. */
  from: JsonValue;
  to: JsonValue;
  /** Nodes whose override of `to` is removed. */
  carriers: LoadedNode[];
  /** Nodes taking `from` from the shared file, which keep it in their own files. */
  keepers: LoadedNode[];
  /** Every node that takes the value from the shared file or overrides it in its own. */
  takers: number;
}

const isScalar = (value: unknown): value is string | number | boolean =>
  typeof value === "string" || typeof value === "number" || typeof value === "boolean";

/** Each scalar a declaration holds, by its path: the declaration itself, or each entry of its map. */
function scalarsIn(domain: AnyDomain, declared: unknown): [SpecPath, JsonValue][] {
  if (isScalar(declared)) return [[domain.specPath, declared]];
  if (!isPlainMap(declared) || domain.listKey || domain.itemsAreASet) return [];
  return Object.entries(declared).flatMap(([key, value]) =>
    isScalar(value) ? [[[...domain.specPath, key], value] as [SpecPath, JsonValue]] : [],
  );
}

/** The last of `layers` declaring the value at `key`: where a node would take it from. */
function lastDeclaring(layers: readonly Layer[], key: string): Layer | undefined {
  for (let i = layers.length - 1; i >= 0; i--) if (layers[i]!.origins.has(key)) return layers[i];
  return undefined;
}

/**
 * The values a shared file declares that more than half of the nodes taking them (two at least)
 * override with one same value in their own files, in file and path order. Lifting one leaves
 * fewer overrides than before: the carriers' go, the keepers' come.
 */
export function repeatedOverrides(nodes: readonly LoadedNode[], dependants: Dependants): Lift[] {
  const overridden = new Map<
    string,
    { file: string; domain: AnyDomain; path: SpecPath; from: JsonValue; overrides: Override[] }
  >();
  for (const node of nodes) {
    const own = node.layers.at(-1);
    if (own?.file !== node.file) continue;
    const shared = node.layers.slice(0, -1);
    for (const domain of DOMAINS)
      for (const [at, value] of scalarsIn(domain, valueAt(own.value, domain.specPath))) {
        const key = pathKey(at);
        const below = lastDeclaring(shared, key);
        const from = below && valueAt(below.value, at);
        if (!below || !isScalar(from) || from === value) continue;
        const id = `${below.file}\0${key}`;
        let entry = overridden.get(id);
        if (!entry)
          overridden.set(id, (entry = { file: below.file, domain, path: at, from, overrides: [] }));
        entry.overrides.push({ node, value });
      }
  }
  const lifts: Lift[] = [];
  for (const { file, domain, path, from, overrides } of overridden.values()) {
    const byValue = new Map<string, Override[]>();
    for (const override of overrides) append(byValue, JSON.stringify(override.value), override);
    const most = [...byValue.values()].reduce((a, b) => (b.length > a.length ? b : a));
    const keepers = dependants(file, path);
    const takers = keepers.length + overrides.length;
    if (most.length < 2 || most.length * 2 <= takers) continue;
    lifts.push({
      file,
      domain,
      path,
      from,
      to: most[0]!.value,
      carriers: most.map((o) => o.node),
      keepers: [...keepers],
      takers,
    });
  }
  return lifts.sort((a, b) =>
    a.file !== b.file ? (a.file < b.file ? -1 : 1) : pathKey(a.path) < pathKey(b.path) ? -1 : 1,
  );
}

/**
 * The manifest edits lifting `lifts` (of one shared file): the shared file declares the new value,
 * the carriers' overrides go, the keepers declare the old value, each written as its file wrote it
 * (`60`, not the loader's `"60"`). Throws ManifestEditError when an edit cannot be made.
 */
export function liftEdits(
  lifts: readonly Lift[],
  files: ReadonlyMap<string, string>,
  lists: SpecListShapes,
): Record<string, string> {
  const declared = new Map<string, JsonMap>();
  const written = (file: string, at: SpecPath, loaded: JsonValue): JsonValue => {
    let values = declared.get(file);
    if (!values) declared.set(file, (values = declaredIn(files.get(file) ?? "", lists)));
    const value = valueAt(values, at);
    return isScalar(value) ? value : loaded;
  };
  const edits = new Map<string, DeclaredChange[]>();
  const removed = new Map<string, SpecPath[]>();
  for (const { file, path, from, to, carriers, keepers } of lifts) {
    append(edits, file, { path, value: written(carriers[0]!.file, path, to) });
    for (const node of carriers) append(removed, node.file, path);
    const old = written(file, path, from);
    for (const node of keepers) append(edits, node.file, { path, value: old });
  }
  for (const [file, paths] of removed)
    for (const path of emptiedBy(declared.get(file)!, paths))
      append(edits, file, { path, delete: true });
  return editedFiles(edits, files, lists);
}

/**
 * What to delete from a file to remove `paths`: a map they leave empty goes too (a node file keeps
 * no `sysctl_parameters: {}`), up to the file's top level.
 */
function emptiedBy(declared: JsonMap, paths: readonly SpecPath[]): SpecPath[] {
  const left = new Map<string, Set<string>>();
  const keysAt = (at: SpecPath) => {
    const key = pathKey(at);
    let keys = left.get(key);
    if (!keys) {
      const map = valueAt(declared, at);
      left.set(key, (keys = new Set(isPlainMap(map) ? Object.keys(map) : [])));
    }
    return keys;
  };
  const gone = new Map<string, SpecPath>();
  for (let path of paths) {
    while (path.length > 1) {
      const parent = path.slice(0, -1);
      const keys = keysAt(parent);
      keys.delete(String(path.at(-1)));
      if (keys.size) break;
      gone.delete(pathKey(path));
      path = parent;
    }
    gone.set(pathKey(path), path);
  }
  const all = [...gone.values()];
  return all.filter((path) => !all.some((other) => other !== path && isPrefix(other, path)));
}
