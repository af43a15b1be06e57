// Merging layers into a node's effective declared state (fleet.yaml, then groups, then the node:
// maps merge deeply, a later value wins, `null` deletes), checking that the combination is valid,
// and finding which file declared a value.
//
// Merging never mutates a layer: unchanged values are shared between every node that inherits
// them (a fleet-wide package list is held once, not once per node), and only the maps on the
// path to a change are copied. Effective specs are therefore read-only. Nodes sharing fleet.yaml
// and the same groups share that part of the merge and its validation: it is done once.
import { within } from "../domains/domain.js";
import { DOMAINS } from "../domains/registry.js";
import { ManifestError } from "../errors.js";
import type { Layer, Origin } from "./layer.js";
import { itemKey, keyedMapsAsLists, keyFieldAt, SPEC_LIST_SHAPES } from "./lists.js";
import { NodeSpec } from "./schema.js";
import { MANIFEST_PARSE } from "./zod-shape.js";
import {
  isPlainMap,
  isPrefix,
  pathKey,
  pathOfKey,
  replaceAt,
  showPath,
  valueAt,
  type PlainMap,
  type SpecPath,
} from "../spec-path.js";

/**
 * The origin of the declared value at `path`: the last layer that set it, else its nearest
 * container.
 */
export function sourceOf(
  node: { file: string; layers: readonly Layer[] },
  specPath: SpecPath,
): Origin {
  for (let len = specPath.length; len > 0; len--) {
    const key = pathKey(specPath.slice(0, len));
    for (let i = node.layers.length - 1; i >= 0; i--) {
      const origin = node.layers[i]!.origins.get(key);
      if (origin) return origin;
    }
  }
  return { file: node.file, line: 1, col: 1, yamlPath: [] };
}

function mergeValue(base: unknown, over: unknown): unknown {
  if (!isPlainMap(base) || !isPlainMap(over)) return over;
  const merged = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const next = mergeValue(Object.hasOwn(base, key) ? base[key] : undefined, value);
    // Defined, not assigned: a host's `__proto__` package is a key like any other, not a prototype.
    if (key === "__proto__")
      Object.defineProperty(merged, key, {
        value: next,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else merged[key] = next;
  }
  return merged;
}

/** `layers` merged onto `start`, keyed lists still held as maps. */
function fold(start: PlainMap, layers: readonly Layer[]): PlainMap {
  let merged = start;
  for (const layer of layers) {
    for (const deletion of layer.deletions) merged = replaceAt(merged, deletion, undefined);
    const next = mergeValue(merged, layer.value);
    if (isPlainMap(next)) merged = next;
  }
  return merged;
}

/**
 * fleet.yaml, then groups, then the node: maps merge deeply, a later value wins, `null` deletes.
 */
export function mergeLayers(layers: readonly Layer[]): PlainMap {
  // Keyed lists go back to lists, in declaration order.
  return keyedMapsAsLists(fold({}, layers), SPEC_LIST_SHAPES);
}

/**
 * The parts of a spec that validate on their own: each domain's declaration, and every other
 * top-level key.
 */
const UNITS: SpecPath[] = [
  ...DOMAINS.map((d) => d.specPath),
  ...Object.keys(NodeSpec.shape)
    .filter((key) => !DOMAINS.some((d) => d.specPath[0] === key))
    .map((key) => [key]),
];

/** Merges nodes' layers; nodes built on the same fleet.yaml and groups share that merge. */
export class LayerMerger {
  private readonly bases = new Map<
    string,
    { merged: PlainMap; listed: PlainMap; valid: boolean }
  >();

  /**
   * The node's effective declared state (`base` layers, then its own), or the errors that make the
   * combination invalid.
   */
  merge(
    node: string,
    base: readonly Layer[],
    own: Layer,
  ): { effective: PlainMap; errors?: undefined } | { errors: ManifestError[] } {
    const key = base.map((layer) => layer.file).join("\0");
    let shared = this.bases.get(key);
    if (!shared) {
      const merged = fold({}, base);
      const listed = keyedMapsAsLists(merged, SPEC_LIST_SHAPES);
      shared = { merged, listed, valid: NodeSpec.safeParse(listed, MANIFEST_PARSE).success };
      this.bases.set(key, shared);
    }
    // A node's spec holds only what its own file changes; the rest (lists too) is the shared one.
    const effective =
      own.deletions.length || Object.keys(own.value).length
        ? keyedMapsAsLists(fold(shared.merged, [own]), SPEC_LIST_SHAPES, shared)
        : shared.listed;
    // What the node's own file leaves alone is as valid as it was in the shared part.
    const touched = touchedBy(own, effective);
    if (
      shared.valid &&
      (!Object.keys(touched).length || NodeSpec.safeParse(touched, MANIFEST_PARSE).success)
    )
      return { effective };
    const errors = effectiveErrors(node, [...base, own], effective);
    return errors.length ? { errors } : { effective };
  }
}

/** The parts of `effective` (as whole units) that `layer` sets or deletes anything in. */
function touchedBy(layer: Layer, effective: PlainMap): PlainMap {
  let touched: PlainMap = {};
  for (const unit of UNITS) {
    const set = valueAt(layer.value, unit) !== undefined;
    if (!set && !layer.deletions.some((d) => isPrefix(d, unit) || isPrefix(unit, d))) continue;
    const value = valueAt(effective, unit);
    if (value !== undefined) touched = replaceAt(touched, unit, value);
  }
  return touched;
}

/**
 * Layers each valid on their own can combine into a spec that is not (a group's `sha256` plus a
 * node's `contents`; a module loaded by a group and absent by a node): the effective spec is
 * validated again, each error naming the node and every file:line that declared a part of it.
 */
function effectiveErrors(
  node: string,
  layers: readonly Layer[],
  effective: PlainMap,
): ManifestError[] {
  const result = NodeSpec.safeParse(effective, MANIFEST_PARSE);
  if (result.success) return [];
  return result.error.issues.map((issue) => {
    const issuePath = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
    const prefix = contributorPrefix(effective, issuePath);
    const from = layers.flatMap((layer) => {
      let line = Infinity;
      for (const [key, origin] of layer.origins) {
        const at = pathOfKey(key);
        if (at.length > prefix.length && isPrefix(prefix, at)) line = Math.min(line, origin.line);
      }
      return line < Infinity ? [{ file: layer.file, line }] : [];
    });
    const where = showPath(prefix);
    const located = from.at(-1) ?? { file: layers.at(-1)!.file, line: 1 };
    const combined = from.map((f) => `${f.file}:${f.line}`).join(" and ");
    return new ManifestError(
      `node ${node}: ${where ? `${where}: ` : ""}${issue.message}, once ${combined} are combined`,
      located,
      "a later file changes only the keys it sets: override the conflicting one there, or set it to null",
    );
  });
}

/**
 * The part of the spec an issue is about: its domain, and the item of a keyed list (a file by its
 * path).
 */
function contributorPrefix(
  effective: PlainMap,
  issuePath: (string | number)[],
): (string | number)[] {
  const domain = DOMAINS.find((d) => isPrefix(d.specPath, issuePath));
  if (!domain) return issuePath.filter((p) => typeof p === "string").slice(0, 1);
  const index = within(domain, issuePath)[0];
  const keyField = keyFieldAt(SPEC_LIST_SHAPES, domain.specPath);
  if (keyField === undefined || typeof index !== "number") return [...domain.specPath];
  const list = valueAt(effective, domain.specPath);
  const key = Array.isArray(list) ? itemKey(list[index], keyField) : undefined;
  return [...domain.specPath, String(key ?? index)];
}
