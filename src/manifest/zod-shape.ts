import * as z from "zod";

// Reads a zod schema's structure, to suggest valid keys where a manifest has an unknown one.
type Def = {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  valueType?: z.ZodType;
  keyType?: z.ZodType;
  options?: z.ZodType[];
};

function def(schema: z.ZodType): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

function unwrap(schema: z.ZodType): z.ZodType {
  for (;;) {
    const d = def(schema);
    const inner = d.innerType ?? d.in;
    if (!inner) return schema;
    schema = inner;
  }
}

/** The schema found at `path` inside `schema`, following objects, arrays and records. */
export function schemaAt(schema: z.ZodType, path: readonly PropertyKey[]): z.ZodType | undefined {
  let current: z.ZodType | undefined = unwrap(schema);
  for (const part of path) {
    if (!current) return undefined;
    const d = def(current);
    // Own fields only: `__proto__` names no field.
    if (d.shape) current = Object.hasOwn(d.shape, part) ? d.shape[String(part)] : undefined;
    else if (d.element) current = d.element;
    else if (d.valueType) current = d.valueType;
    else if (d.options) current = d.options.map((o) => schemaAt(o, [part])).find(Boolean);
    else return undefined;
    current = current && unwrap(current);
  }
  return current;
}

/** Keys a map at `path` accepts: an object's fields or an enum-keyed record's keys. */
export function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  const at = schemaAt(schema, path);
  if (!at) return [];
  const d = def(at);
  if (d.shape) return Object.keys(d.shape);
  const keyType = d.keyType && (unwrap(d.keyType) as unknown as { options?: unknown[] });
  return Array.isArray(keyType?.options) ? keyType.options.map(String) : [];
}

type Issue = z.core.$ZodIssue;

/**
 * How a manifest is parsed: without zod's JIT, which compiles a parser for each object schema (with
 * `new Function`) the first time it parses one. A run parses fleet.yaml and each group once, too few
 * times to pay those compiles back: a 4 KB fleet.yaml's audit reached its first node about 4 ms of
 * CPU sooner without them, and a node file's parse is at most a microsecond slower.
 */
export const MANIFEST_PARSE = { jitless: true } as const;

const isObject = (value: unknown): value is Record<PropertyKey, unknown> =>
  typeof value === "object" && value !== null;

/**
 * `schema.safeParse(input)`, keeping `__proto__` keys: zod's records skip them (their output is
 * a plain object an assignment would bend), but in a manifest `__proto__` is a key like any other
 * (a sysctl, a device, a package), as the merge of layers and accept PRs keep it. Each such key of
 * a record is checked by the record's key and value schemas and defined as an own key of the
 * output. (A check on the record as a whole does not see it.)
 */
export function parseKeepingProtoKeys(
  schema: z.ZodType,
  input: unknown,
): { success: true; data: unknown } | { success: false; error: { issues: Issue[] } } {
  const result = schema.safeParse(input, MANIFEST_PARSE);
  const issues = result.success ? [] : [...result.error.issues];
  const output = result.success ? result.data : undefined;
  const path: PropertyKey[] = [];
  const walk = (value: unknown): void => {
    if (!isObject(value)) return;
    if (!Array.isArray(value) && Object.hasOwn(value, "__proto__"))
      issues.push(...keepProtoKey(schema, value, [...path], output));
    const array = Array.isArray(value);
    for (const key of Object.keys(value)) {
      const inner = value[key];
      if (!isObject(inner)) continue;
      path.push(array ? Number(key) : key);
      walk(inner);
      path.pop();
    }
  };
  walk(input);
  return issues.length ? { success: false, error: { issues } } : { success: true, data: output };
}

/** Checks `record.__proto__` by the schema of the record at `path`; defines it in `output`. */
function keepProtoKey(
  schema: z.ZodType,
  record: Record<PropertyKey, unknown>,
  path: PropertyKey[],
  output: unknown,
): Issue[] {
  const at = schemaAt(schema, path);
  const d = at && def(at);
  // Not a record (an object's fields): zod refuses the key as unknown.
  if (!d?.valueType || !d.keyType) return [];
  const keyPath = [...path, "__proto__"];
  const key = d.keyType.safeParse("__proto__");
  const value = d.valueType.safeParse(record.__proto__);
  const issues = [key, value].flatMap((r) =>
    r.success
      ? []
      : r.error.issues.map((issue) => ({ ...issue, path: [...keyPath, ...issue.path] })),
  );
  // Own keys only: a `__proto__` on the way that was not kept must not lead to Object.prototype.
  let target = output;
  for (const part of path)
    target = isObject(target) && Object.hasOwn(target, part) ? target[part] : undefined;
  if (issues.length || !isObject(target)) return issues;
  // Redefined in the file's order, the kept key in its place.
  const entries = [...new Set([...Object.keys(record), ...Object.keys(target)])]
    .filter((k) => k === "__proto__" || Object.hasOwn(target, k))
    .map((k) => [k, k === "__proto__" ? value.data : target[k]] as const);
  for (const k of Object.keys(target)) delete target[k];
  for (const [k, v] of entries)
    Object.defineProperty(target, k, {
      value: v,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return issues;
}
