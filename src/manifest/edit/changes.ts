// What an edit of a manifest file must achieve: the declared changes (which leaves to set or
// remove), and the file's declaration in canonical form, the yardstick every edit is checked
// against.
import { isDeepStrictEqual } from "node:util";
import type { JsonValue } from "../../domains/domain.js";
import { ManifestEditError } from "../../errors.js";
import { isListFormAt, keyedItems, listsAsMaps, type SpecListShapes } from "../lists.js";
import { parseYaml } from "../yaml.js";
import { isPlainMap, mapAt, replaceAt, valueAt, type SpecPath } from "../../spec-path.js";

/**
 * One leaf of a declaration to set or remove, at a canonical spec path (keyed items by key,
 * list-form sysctls by name).
 */
export type DeclaredChange =
  { path: SpecPath; value: JsonValue } | { path: SpecPath; delete: true };

export type JsonMap = { [key: string]: JsonValue };

/** A map read from YAML or JSON. */
export const isJsonMap = (v: unknown): v is JsonMap => isPlainMap(v);

/** A value read from YAML or JSON. */
export const isJsonValue = (v: unknown): v is JsonValue =>
  v === null ||
  typeof v === "string" ||
  typeof v === "number" ||
  typeof v === "boolean" ||
  Array.isArray(v) ||
  isJsonMap(v);

/**
 * The fewest changes turning one file's declaration of a domain (`before`, at `basePath`) into
 * `after`. Maps differ per key, keyed lists per item then per field; other lists are replaced
 * whole, as layering does.
 */
export function declaredChanges(
  before: unknown,
  after: unknown,
  basePath: SpecPath,
  listKey?: string,
): DeclaredChange[] {
  if (after === undefined) return before === undefined ? [] : [{ path: basePath, delete: true }];
  if (listKey !== undefined) {
    const was = keyedItems(before ?? [], listKey);
    const now = keyedItems(after, listKey);
    if (was && now) return mapChanges(was, now, basePath);
  }
  if (isJsonMap(before) && isJsonMap(after)) return mapChanges(before, after, basePath);
  if (isDeepStrictEqual(before, after)) return [];
  if (!isJsonValue(after)) throw new ManifestEditError("not a value YAML can hold", basePath);
  return [{ path: basePath, value: after }];
}

function mapChanges(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  basePath: SpecPath,
): DeclaredChange[] {
  const changes: DeclaredChange[] = [];
  // Own keys only: a key named `constructor` or `__proto__` is a key like any other.
  for (const [key, value] of Object.entries(after)) {
    const was = Object.hasOwn(before, key) ? before[key] : undefined;
    for (const change of declaredChanges(was, value, [...basePath, key])) changes.push(change);
  }
  for (const key of Object.keys(before))
    if (!Object.hasOwn(after, key)) changes.push({ path: [...basePath, key], delete: true });
  return changes;
}

/**
 * The file's declared values with keyed lists and list-form maps turned into maps, as the loader
 * sees them.
 */
export function declaredIn(text: string, lists: SpecListShapes): JsonMap {
  return declaredOf(parseYaml(text), lists);
}

/** `declaredIn` of a file already parsed. */
function declaredOf(doc: ReturnType<typeof parseYaml>, lists: SpecListShapes): JsonMap {
  if (doc.errors.length)
    throw new ManifestEditError(`not valid YAML: ${doc.errors[0]!.message.split("\n")[0]}`);
  const raw: unknown = doc.toJS({ maxAliasCount: 100 });
  if (raw === null || raw === undefined) return {};
  if (!isJsonMap(raw)) throw new ManifestEditError("a manifest file must be a YAML map of keys");
  return listsAsMaps(raw, lists) as JsonMap;
}

/** What `declaredIn` must say after the changes: the yardstick every edit is checked against. */
export function intended(
  text: string,
  changes: readonly DeclaredChange[],
  lists: SpecListShapes,
): JsonMap {
  // One parse for both reads: this runs for every file an accept edits.
  const doc = parseYaml(text);
  let model = declaredOf(doc, lists);
  const written: unknown = doc.toJS();
  for (const change of changes) {
    const listForm =
      isListFormAt(lists, change.path.slice(0, -1)) &&
      Array.isArray(valueAt(written, change.path.slice(0, -1)));
    const value =
      "delete" in change
        ? undefined
        : listForm
          ? String(change.value)
          : structuredClone(change.value);
    model = replaceAt(model, change.path, value) as JsonMap;
  }
  model = listsAsMaps(model, lists) as JsonMap;
  // A keyed item written into the file always names itself, even when the change left its key out.
  for (const { path, key } of lists.keyedLists) {
    for (const [name, item] of Object.entries(mapAt(model, path) ?? {}))
      if (isJsonMap(item) && !(key in item))
        model = replaceAt(model, [...path, name], { [key]: name, ...item }) as JsonMap;
  }
  return model;
}
