// A second adopt with more `--files` or `--units`: the nodes the tree already declares take the
// files and units they do not declare yet, at their live state, appended to each node's own file.
// What the file holds stays as it is, in its order; a file nothing is added to is not touched.
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { isMap, parseDocument } from "yaml";
import type { LoadedNode } from "../manifest/load.js";
import type { PlainMap } from "../spec-path.js";
import { stringifyPortable } from "../text/yaml-scalar.js";

const listOf = (value: unknown) => (Array.isArray(value) ? (value as PlainMap[]) : []);

/** The files and units of a snapshot that `node` does not declare yet, in the order asked. */
export function notYetDeclared(node: LoadedNode, snapshot: PlainMap): PlainMap {
  const spec = node.spec as PlainMap;
  const paths = new Set(listOf(spec.files).map((f) => f.path));
  const names = new Set(listOf((spec.systemd as PlainMap | undefined)?.units).map((u) => u.name));
  const files = listOf(snapshot.files).filter((f) => !paths.has(f.path));
  const units = listOf((snapshot.systemd as PlainMap | undefined)?.units).filter(
    (u) => !names.has(u.name),
  );
  return {
    ...(files.length && { files }),
    ...(units.length && { systemd: { units } }),
  };
}

/**
 * Appends `added` (from `notYetDeclared`) to the node's own file: a list the file already has takes
 * the new items at its end; a key it does not have is appended after what is there, byte for byte.
 * Returns the file's path relative to the tree, or undefined when nothing was added.
 */
export async function appendToNodeFile(
  tree: string,
  node: LoadedNode,
  added: PlainMap,
): Promise<string | undefined> {
  if (!Object.keys(added).length) return undefined;
  const file = path.join(tree, "nodes", path.basename(node.file));
  const text = await readFile(file, "utf8");
  const doc = parseDocument(text);
  if (!isMap(doc.contents) || !doc.contents.items.length) {
    // A node file with nothing of its own: its comments at the top, then what is added.
    const comments = /^(?:[ \t]*(?:#[^\n]*)?\n)*/.exec(text)![0];
    await writeFile(file, `${comments}${stringifyPortable(added)}`);
    return path.relative(tree, file);
  }
  const appended: PlainMap = {};
  let edited = false;
  // Each added key holds a list (`files`) or a map of lists (`systemd.units`).
  for (const [key, value] of Object.entries(added)) {
    const lists: [string[], PlainMap[]][] = Array.isArray(value)
      ? [[[key], listOf(value)]]
      : Object.entries(value as PlainMap).map(([sub, items]) => [[key, sub], listOf(items)]);
    if (!doc.hasIn([key])) Object.assign(appended, { [key]: value });
    else
      for (const [at, items] of lists) {
        for (const item of items) doc.addIn(at, doc.createNode(item));
        edited = true;
      }
  }
  const head = edited ? doc.toString() : text;
  const tail = Object.keys(appended).length ? stringifyPortable(appended) : "";
  await writeFile(file, `${head}${tail && head && !head.endsWith("\n") ? "\n" : ""}${tail}`);
  return path.relative(tree, file);
}
