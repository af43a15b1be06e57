// The address of a value inside a node spec: map keys from the root, and for a keyed list (files
// by path, units by name) the item's key, e.g. ["system", "sysctl_parameters", "vm.swappiness"] or
// ["files", "/etc/app.conf", "mode"]. How a path is keyed, shown, compared, read and written is
// defined here once, for the manifest loader and writer, the merge of layers, the domains and
// accept PRs. A leaf: it imports nothing.

/** A path into a node spec: map keys, or for keyed lists (files, units) the item's key. */
export type SpecPath = readonly (string | number)[];

export type PlainMap = Record<string, unknown>;

export const isPlainMap = (v: unknown): v is PlainMap =>
  !!v && typeof v === "object" && !Array.isArray(v);

/** A spec path as a Map key: origins, list shapes and changes are all looked up by it. */
export const pathKey = (p: SpecPath): string => JSON.stringify(p);

/** The path a `pathKey` was made from. */
export const pathOfKey = (key: string): SpecPath => JSON.parse(key) as SpecPath;

/**
 * The key of `parent`'s child `part`: `pathKey([...path, part])` from `pathKey(path)`, without the
 * arrays.
 */
export const childKey = (parent: string, part: string | number): string =>
  parent === "[]" ? `[${JSON.stringify(part)}]` : `${parent.slice(0, -1)},${JSON.stringify(part)}]`;

/**
 * A path as users read it (manifest-diff, validation and edit errors):
 * `system.sysctl_parameters[net.ipv4.ip_forward]`, `files[/etc/app.conf].mode`.
 */
export function showPath(path: SpecPath): string {
  return path
    .map((part, i) =>
      /^[A-Za-z_][\w-]*$/.test(String(part)) ? `${i ? "." : ""}${part}` : `[${part}]`,
    )
    .join("");
}

/** Whether `path` is `prefix` or lies inside it. */
export const isPrefix = (prefix: SpecPath, path: SpecPath): boolean =>
  prefix.length <= path.length && prefix.every((part, i) => path[i] === part);

/** Whether two paths name the same place, whether a part is written as a number or as text. */
export const samePath = (a: SpecPath, b: SpecPath): boolean =>
  a.length === b.length && a.every((p, i) => String(p) === String(b[i]));

/**
 * The value at `path` inside `value`, when every step before it is a map holding the next key as
 * its own (never an inherited `constructor`).
 */
export function valueAt(value: unknown, path: SpecPath): unknown {
  let current = value;
  for (const part of path) {
    const key = String(part);
    if (!isPlainMap(current) || !Object.hasOwn(current, key)) return undefined;
    current = current[key];
  }
  return current;
}

/** The map at `path` inside `value`, when every step there is a map. */
export function mapAt(value: unknown, path: SpecPath): PlainMap | undefined {
  const found = valueAt(value, path);
  return isPlainMap(found) ? found : undefined;
}

/**
 * `value` with `path` set to `replacement` (removed when undefined), copying only the maps on the
 * path: everything else stays shared with `value`, which is never changed. Setting makes a map of
 * each step that is not one; removing through something other than a map changes nothing.
 */
export function replaceAt(value: PlainMap, path: SpecPath, replacement: unknown): PlainMap {
  if (!path.length) return value;
  const [head, ...rest] = path;
  const key = String(head);
  const old = Object.hasOwn(value, key) ? value[key] : undefined;
  let child = replacement;
  if (rest.length) {
    if (!isPlainMap(old) && replacement === undefined) return value;
    child = replaceAt(isPlainMap(old) ? old : {}, rest, replacement);
    if (child === old) return value;
  }
  const copy = { ...value };
  if (child === undefined) delete copy[key];
  // Defined, never assigned: a key named __proto__ (a sysctl a contributor declared, say) becomes a
  // key, not the copy's prototype.
  else
    Object.defineProperty(copy, key, {
      value: child,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return copy;
}
