// One parsed manifest file turned into a layer: its validated values, with the lists that are maps
// in disguise as maps, `null` values as deletions, and the origin (file:line:col) of every value.
import { isMap, isNode, isScalar, isSeq, type Node as YamlNode } from "yaml";
import type * as z from "zod";
import { ManifestError } from "../errors.js";
import {
  KEY_FIELDS,
  LIST_FORM_KEYS,
  itemKey,
  keyFieldAt,
  listsAsMaps,
  SPEC_LIST_SHAPES,
  readListItem,
} from "./lists.js";
import { locate, type ManifestReader, type ParsedFile } from "./read.js";
import { FLEET_SETTINGS } from "./schema.js";
import { nearest } from "./suggest.js";
import { keysAt, parseKeepingProtoKeys } from "./zod-shape.js";
import {
  childKey,
  isPlainMap,
  pathKey,
  showPath,
  type PlainMap,
  type SpecPath,
} from "../spec-path.js";

/**
 * Where a value was declared: the file (as the repository names it), line, column and YAML path.
 */
export interface Origin {
  file: string;
  line: number;
  col: number;
  yamlPath: (string | number)[];
  /** The value was written in the sysctl.conf-style `- key = value` list form. */
  form?: "list";
  /** A YAML number, which the schema may read as a string (a sysctl's `4096`). */
  number?: true;
}

/** One manifest file's contribution to a node: validated values, `null` deletions and origins. */
export interface Layer {
  file: string;
  value: PlainMap;
  deletions: readonly SpecPath[];
  origins: ReadonlyMap<string, Origin>;
}

// What a file that sets and deletes nothing holds: shared by every such layer.
const NOTHING: PlainMap = Object.freeze({});
const NO_DELETIONS: readonly SpecPath[] = Object.freeze([]);
const NO_ORIGINS: ReadonlyMap<string, Origin> = new Map();

/**
 * `layer`, or when it sets and deletes nothing (a node file that is `{}` or comments, most of a
 * large fleet's), one holding only its file name. What that drops is the origin of the file's
 * root, which nothing looks up outside `toLayer` (the located errors are made there).
 */
export function compactLayer(layer: Layer): Layer {
  if (layer.deletions.length || Object.keys(layer.value).length) return layer;
  return emptyLayer(layer.file);
}

/** The layer of a file that sets and deletes nothing. */
export const emptyLayer = (file: string): Layer => ({
  file,
  value: NOTHING,
  deletions: NO_DELETIONS,
  origins: NO_ORIGINS,
});

/**
 * Whether a file's whole text is `{}`: what most of a large fleet's node files hold, a layer that
 * sets nothing, with no YAML to parse and no value a schema could refuse.
 */
export const isEmptyMap = (text: string | undefined): boolean =>
  text === "{}\n" || text === "{}" || text === "{}\r\n";

/**
 * The origin of every node of the YAML tree, by canonical spec path (keyed items by key, list-form
 * items by name).
 */
function originsOf(reader: ManifestReader, parsed: ParsedFile): Map<string, Origin> {
  const origins = new Map<string, Origin>();
  // `key` is the canonical path's pathKey, built as the walk descends.
  const walk = (
    node: unknown,
    yamlPath: (string | number)[],
    key: string,
    keyNode?: unknown,
  ): void => {
    if (!isNode(node)) return;
    const loc = locate(parsed, node, keyNode);
    origins.set(key, {
      file: parsed.file,
      line: loc.line ?? 1,
      col: loc.col ?? 1,
      yamlPath,
      ...(isScalar(node) && typeof node.value === "number" && { number: true as const }),
    });
    if (isMap(node)) {
      for (const pair of node.items) {
        const name = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        walk(pair.value ?? pair.key, [...yamlPath, name], childKey(key, name), pair.key);
      }
    } else if (isSeq(node)) {
      const listForm = LIST_FORM_KEYS.has(key);
      const keyField = KEY_FIELDS.get(key);
      node.items.forEach((item, i) => {
        if (listForm && isScalar(item) && typeof item.value === "string") {
          const entry = readListItem(item.value);
          const itemLoc = locate(parsed, item);
          if (!entry) {
            reader.errors.push(
              new ManifestError(`"${item.value}" is not of the form "name = value"`, itemLoc),
            );
            return;
          }
          origins.set(childKey(key, entry[0]), {
            ...itemLoc,
            line: itemLoc.line ?? 1,
            col: itemLoc.col ?? 1,
            yamlPath: [...yamlPath, i],
            form: "list",
          });
          return;
        }
        const name = keyField && isMap(item) ? item.get(keyField) : undefined;
        walk(item, [...yamlPath, i], childKey(key, typeof name === "string" ? name : i));
      });
    }
  };
  walk(parsed.doc.contents, [], pathKey([]));
  return origins;
}

/** `null` values taken out of `value` (in place), as the paths they delete. */
function takeDeletions(value: unknown, canon: (string | number)[], out: SpecPath[] = []) {
  if (Array.isArray(value)) {
    const keyField = keyFieldAt(SPEC_LIST_SHAPES, canon);
    value.forEach((item, i) => {
      const key = keyField === undefined ? undefined : itemKey(item, keyField);
      takeDeletions(item, [...canon, typeof key === "string" ? key : i], out);
    });
  } else if (isPlainMap(value)) {
    for (const [key, child] of Object.entries(value)) {
      if (child === null) {
        out.push([...canon, key]);
        delete value[key];
      } else takeDeletions(child, [...canon, key], out);
    }
  }
  return out;
}

/**
 * Turns one parsed file into a layer: origins from the YAML tree, `- key = value` list forms into
 * maps, `null` values into deletions, then zod validation with every issue located at
 * file:line:col.
 */
export function toLayer(
  reader: ManifestReader,
  parsed: ParsedFile,
  schema: z.ZodType,
): { layer?: Layer; settings?: PlainMap } {
  const errorsBefore = reader.errors.length;
  const read = reader.toJS(parsed);
  if (read === undefined) return {};
  const origins = originsOf(reader, parsed);
  // The `- net.ipv4.tcp_syncookies = 1` list becomes the map it means.
  const raw = isPlainMap(read)
    ? listsAsMaps(read, { listFormPaths: SPEC_LIST_SHAPES.listFormPaths, keyedLists: [] })
    : read;
  const deletions = takeDeletions(raw, []);

  const result = parseKeepingProtoKeys(schema, raw);
  if (!result.success) {
    for (const issue of result.error.issues)
      reader.errors.push(locateIssue(parsed, origins, schema, issue));
    return {};
  }
  if (reader.errors.length > errorsBefore || !isPlainMap(result.data)) return {};
  const validated = result.data;
  const settings: PlainMap = {};
  for (const key of FLEET_SETTINGS) {
    if (key in validated) {
      settings[key] = validated[key];
      delete validated[key];
    }
  }
  // Lists declared per item (files by path, units by name) become maps, so layers merge per item.
  let duplicates = false;
  const value = listsAsMaps(
    validated,
    { listFormPaths: [], keyedLists: SPEC_LIST_SHAPES.keyedLists },
    (path, key) => {
      const origin = origins.get(pathKey([...path, key]));
      reader.errors.push(
        new ManifestError(
          `${keyFieldAt(SPEC_LIST_SHAPES, path)} "${key}" is declared twice in ${showPath(path)}`,
          { file: parsed.file, line: origin?.line, col: origin?.col },
        ),
      );
      duplicates = true;
    },
  );
  if (duplicates) return {};
  return { layer: { file: parsed.file, value, deletions, origins }, settings };
}

/**
 * A zod issue as a ManifestError at the file:line:col it is about, with the nearest valid key for
 * an unknown one.
 */
export function locateIssue(
  parsed: ParsedFile,
  origins: ReadonlyMap<string, Origin>,
  schema: z.ZodType,
  issue: z.core.$ZodIssue,
): ManifestError {
  const issuePath = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
  const dotted = issuePath.join(".");
  const node = nodeAt(parsed, issuePath);
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0]!;
    const pair = isMap(node)
      ? node.items.find((p) => isScalar(p.key) && String(p.key.value) === key)
      : undefined;
    const valid = keysAt(schema, issuePath);
    const suggestion = nearest(key, valid);
    const where = dotted ? ` in ${dotted}` : "";
    return new ManifestError(
      `unknown key "${key}"${where}`,
      locate(parsed, node ?? null, pair?.key),
      suggestion
        ? `did you mean "${suggestion}"?`
        : valid.length
          ? `valid keys: ${valid.join(", ")}`
          : undefined,
    );
  }
  let loc = node?.range ? locate(parsed, node) : undefined;
  for (let len = issuePath.length; !loc && len >= 0; len--) {
    const origin = origins.get(pathKey(issuePath.slice(0, len)));
    if (origin) loc = { file: origin.file, line: origin.line, col: origin.col };
  }
  return new ManifestError(
    dotted ? `${dotted}: ${issue.message}` : issue.message,
    loc ?? { file: parsed.file },
  );
}

/** The YAML node at `path`, when there is one. */
function nodeAt(parsed: ParsedFile, path: (string | number)[]): YamlNode | undefined {
  const node: unknown = parsed.doc.getIn(path, true);
  return isNode(node) ? node : undefined;
}
