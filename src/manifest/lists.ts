// The one definition of which manifest lists are maps in disguise, and how each reads as the map it
// means: the sysctl.conf-style `- name = value` lists, and lists declared per item and keyed by a
// field (files by `path`, units by `name`). The loader, the manifest writer, manifest-diff, the
// planner and the JSON Schema generator all take the list shapes from here.
import { parseNameValue } from "../domains/list-form.js";
import { DOMAINS } from "../domains/registry.js";
import {
  isPlainMap,
  mapAt,
  pathKey,
  replaceAt,
  samePath,
  valueAt,
  type PlainMap,
  type SpecPath,
} from "../spec-path.js";

/**
 * The list shapes of a node spec: which of its lists are maps in disguise (the `- name = value`
 * lists, and lists keyed by a field).
 */
export interface SpecListShapes {
  listFormPaths: SpecPath[];
  keyedLists: { path: SpecPath; key: string }[];
}

/** The list shapes as the domains declare them. */
export function specListShapes(): SpecListShapes {
  return {
    listFormPaths: DOMAINS.filter((d) => d.listForm).map((d) => d.specPath),
    keyedLists: DOMAINS.flatMap((d) => (d.listKey ? [{ path: d.specPath, key: d.listKey }] : [])),
  };
}

/** The domains' list shapes, for the loader, manifest-diff and the schema generator. */
export const SPEC_LIST_SHAPES: SpecListShapes = specListShapes();

/** The domains' list shapes by path key, for looking them up while walking a whole file. */
export const LIST_FORM_KEYS: ReadonlySet<string> = new Set(
  SPEC_LIST_SHAPES.listFormPaths.map(pathKey),
);
export const KEY_FIELDS: ReadonlyMap<string, string> = new Map(
  SPEC_LIST_SHAPES.keyedLists.map(({ path, key }) => [pathKey(path), key]),
);

/** One `- name = value` item as [name, value]; undefined when it is not of that form. */
export const readListItem = parseNameValue;

/**
 * What a `- name = value` item must look like, as a JSON Schema pattern (what readListItem
 * accepts).
 */
export const LIST_ITEM_PATTERN = "^\\s*[^=\\s]+\\s*=.*$";

/** Whether the list at `path` may be written in the `- name = value` form. */
export const isListFormAt = (lists: SpecListShapes, path: SpecPath): boolean =>
  lists.listFormPaths.some((p) => samePath(p, path));

/** The field naming each item of the keyed list at `path`, when the list there is keyed. */
export const keyFieldAt = (lists: SpecListShapes, path: SpecPath): string | undefined =>
  lists.keyedLists.find((k) => samePath(k.path, path))?.key;

/**
 * A `- name = value` list as the map it means (items not of that form left out); undefined for any
 * other value.
 */
export function listFormAsMap(list: unknown): Record<string, string> | undefined {
  if (!Array.isArray(list) || !list.every((item) => typeof item === "string")) return undefined;
  return Object.fromEntries(list.map((item) => readListItem(item)).filter((e) => e !== undefined));
}

/** The item's key, when the item is a map naming itself by `key`. */
export const itemKey = (item: unknown, key: string): unknown =>
  isPlainMap(item) ? item[key] : undefined;

/**
 * A keyed list as a map from item key to item, when every item names itself (a map already keyed
 * is taken as it is). `onDuplicate` hears of a key declared twice; the later item wins.
 */
export function keyedItems(
  list: unknown,
  key: string,
  onDuplicate?: (name: string) => void,
): PlainMap | undefined {
  if (isPlainMap(list)) return list;
  if (!Array.isArray(list) || !list.every((item) => itemKey(item, key) !== undefined))
    return undefined;
  const byKey: PlainMap = {};
  for (const item of list) {
    const name = String(itemKey(item, key));
    if (name in byKey) onDuplicate?.(name);
    byKey[name] = item;
  }
  return byKey;
}

/**
 * `model` with every list at `lists`' paths as the map it means: `- name = value` lists, and keyed
 * lists whose items all name themselves (`onDuplicate` hears of a key declared twice; the later
 * item wins). Copies only the maps on the way.
 */
export function listsAsMaps(
  model: PlainMap,
  lists: SpecListShapes,
  onDuplicate?: (path: SpecPath, key: string) => void,
): PlainMap {
  let result = model;
  for (const path of lists.listFormPaths) {
    const map = listFormAsMap(valueAt(result, path));
    if (map) result = replaceAt(result, path, map);
  }
  for (const { path, key } of lists.keyedLists) {
    const list = valueAt(result, path);
    const byKey = Array.isArray(list)
      ? keyedItems(list, key, (name) => onDuplicate?.(path, name))
      : undefined;
    if (byKey) result = replaceAt(result, path, byKey);
  }
  return result;
}

/**
 * Keyed lists held as maps (`listsAsMaps`) back to lists, in declaration order; copies only the
 * maps on the way. A map `model` shares with `from.merged` takes the list `from.listed` made of it.
 */
export function keyedMapsAsLists(
  model: PlainMap,
  lists: SpecListShapes,
  from?: { merged: PlainMap; listed: PlainMap },
): PlainMap {
  let result = model;
  for (const { path } of lists.keyedLists) {
    const byKey = mapAt(result, path);
    if (!byKey) continue;
    const shared = from && mapAt(from.merged, path) === byKey;
    result = replaceAt(result, path, shared ? valueAt(from.listed, path) : Object.values(byKey));
  }
  return result;
}
