import { z } from "zod";

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
    if (d.shape) current = d.shape[String(part)];
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
