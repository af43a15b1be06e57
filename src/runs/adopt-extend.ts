// A second adopt with more `--files` or `--units`: the nodes the tree already declares take the
// files and units they do not declare yet, at their live state, factored as a first adopt factors
// them (a value every node holds to fleet.yaml, most members of a group to the group's file, the
// rest to each node's own file), wherever the tree keeps those files. A file takes the new entries
// at its end; what it holds stays as it is, byte for byte, and a file nothing is added to is not
// touched.
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { isMap, isSeq, parseDocument, type Document } from "yaml";
import { asFileSpec, factorFleet, mergedOver, sameSpec } from "../adopt/factor.js";
import { ManifestErrors } from "../errors.js";
import { loadFleet, type LoadedNode } from "../manifest/load.js";
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

/** A tree's layer files, relative to the tree, as its loaded nodes name them. */
export interface TreeFiles {
  /** Each node's own file. */
  node: (node: LoadedNode) => string;
  /** fleet.yaml, when the tree has one. */
  fleet: string | undefined;
  /** Each group's file and the groups it builds on. */
  groups: Map<string, { file: string; parents: string[] }>;
}

/**
 * Where each layer of the loaded `nodes` lives under `tree`: node and group files wherever the
 * tree keeps them (in subfolders too), read from the layers the loader merged for each node.
 */
export function treeFiles(tree: string, nodes: readonly LoadedNode[]): TreeFiles {
  // A loaded file's name is shown relative to the working directory.
  const rel = (shown: string) => path.relative(tree, path.resolve(shown));
  const groups = new Map<string, { file: string; parents: string[] }>();
  let fleet: string | undefined;
  for (const node of nodes)
    for (const layer of node.layers.slice(0, -1)) {
      const file = rel(layer.file);
      if (file === "fleet.yaml") fleet = file;
      else
        groups.set(path.basename(file).replace(/\.ya?ml$/, ""), {
          file,
          parents: listOf(layer.value.groups).map(String),
        });
    }
  return { node: (node) => rel(node.file), fleet, groups };
}

/** What a second adopt appends, by file, and which files each node's additions went to. */
export interface Extension {
  files: Map<string, PlainMap>;
  byNode: Map<string, string[]>;
}

/**
 * Factors each node's additions (`notYetDeclared`) over the whole tree: a node without an addition
 * at a path (not snapshot, or declaring it already) keeps every layer it builds on from taking that
 * path, so no node's declared state changes but by its own additions. Nodes in `ownOnly` take
 * theirs in their own files and keep their layers from taking any of those paths.
 */
export function planExtension(
  nodes: readonly LoadedNode[],
  added: ReadonlyMap<string, PlainMap>,
  files: TreeFiles,
  ownOnly: ReadonlySet<string> = new Set(),
): Extension {
  const directGroups = (node: LoadedNode) => listOf(node.layers.at(-1)?.value.groups).map(String);
  const factored = factorFleet({
    nodes: nodes.map((node) => ({
      name: node.name,
      groups: directGroups(node),
      spec: ownOnly.has(node.name) ? {} : (added.get(node.name) ?? {}),
    })),
    groups: new Map([...files.groups].map(([name, g]) => [name, g.parents])),
    fleet: files.fleet !== undefined,
  });
  const out: Extension = { files: new Map(), byNode: new Map() };
  const put = (file: string, spec: PlainMap) => {
    if (Object.keys(spec).length) out.files.set(file, asFileSpec(spec));
  };
  if (files.fleet) put(files.fleet, factored.fleet);
  for (const [name, group] of factored.groups) put(files.groups.get(name)!.file, group.spec);
  for (const node of nodes)
    put(
      files.node(node),
      ownOnly.has(node.name)
        ? (added.get(node.name) ?? {})
        : (factored.nodes.get(node.name)?.spec ?? {}),
    );
  for (const node of nodes) {
    if (!Object.keys(added.get(node.name) ?? {}).length) continue;
    const layers = [
      ...(files.fleet ? [files.fleet] : []),
      ...node.groups.map((g) => files.groups.get(g)?.file ?? ""),
      files.node(node),
    ];
    out.byNode.set(
      node.name,
      layers.filter((file) => out.files.has(file)),
    );
  }
  return out;
}

/**
 * The nodes whose declared state, with `extension` written into a copy of the tree at `stage` and
 * loaded as audit loads it, is not what they declared before plus their own additions (or whose own
 * file the loader refuses): none, when the extension is right.
 */
async function notMergingBack(
  tree: string,
  stage: string,
  nodes: readonly LoadedNode[],
  added: ReadonlyMap<string, PlainMap>,
  extension: Extension,
): Promise<Set<string>> {
  await rm(stage, { recursive: true, force: true });
  await cp(tree, stage, { recursive: true });
  for (const [rel, spec] of extension.files) await appendToFile(stage, rel, spec);
  const loaded = await loadFleet(stage).catch((error: unknown) => {
    if (!(error instanceof ManifestErrors)) throw error;
    return error;
  });
  if (loaded instanceof ManifestErrors) {
    // A layer's entry and the node's own combined into one the manifest refuses (contents and a
    // sha256): the node named by the file the loader points at.
    const refused = new Set(
      loaded.errors.map((e) => path.relative(stage, path.resolve(e.location.file))),
    );
    const own = treeFiles(tree, nodes).node;
    const named = nodes.filter((n) => refused.has(own(n)));
    if (!named.length) throw loaded;
    return new Set(named.map((n) => n.name));
  }
  const now = new Map(loaded.nodes.map((n) => [n.name, n]));
  return new Set(
    nodes
      .filter((node) => {
        const after = now.get(node.name);
        const want = mergedOver(node.spec, added.get(node.name) ?? {});
        return !after || !sameSpec(after.spec, want);
      })
      .map((n) => n.name),
  );
}

/**
 * The extension for `added`, checked in a copy of the tree before anything is written: a node
 * whose additions a shared file cannot hold as they are (a layer's entry merges with the node's
 * own, field by field) takes them in its own file, and keeps its layers from taking those paths.
 */
export async function checkedExtension(
  tree: string,
  nodes: readonly LoadedNode[],
  added: ReadonlyMap<string, PlainMap>,
): Promise<Extension> {
  const files = treeFiles(tree, nodes);
  const stage = await mkdtemp(path.join(os.tmpdir(), "quartermaster-adopt-"));
  try {
    let extension = planExtension(nodes, added, files);
    let wrong = await notMergingBack(tree, stage, nodes, added, extension);
    if (!wrong.size) return extension;
    extension = planExtension(nodes, added, files, wrong);
    wrong = await notMergingBack(tree, stage, nodes, added, extension);
    if (wrong.size) throw new Error("the files and units added do not merge back to the snapshots");
    return extension;
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

/** The column a node of `text` starts at. */
const columnOf = (text: string, at: number) => at - text.lastIndexOf("\n", at - 1) - 1;

const indented = (yaml: string, column: number) => yaml.replace(/^(?=.)/gm, " ".repeat(column));

/**
 * Where the items for the list at `at` go into `text` as text: after the last item of the block
 * list there, or, where the list is missing, as its key after the last key of the deepest block map
 * on the way; undefined when neither is there (a flow collection, an empty value).
 */
function insertion(
  doc: Document,
  text: string,
  at: readonly string[],
  items: PlainMap[],
): { offset: number; text: string } | undefined {
  for (let depth = at.length; depth >= 0; depth--) {
    const node = depth ? doc.getIn(at.slice(0, depth), true) : doc.contents;
    if (node === undefined) continue;
    const block = (isSeq(node) || isMap(node)) && !node.flow && node.items.length > 0 && node.range;
    if (!block || (isSeq(node) && depth < at.length)) return undefined;
    // A missing list comes with its keys: `units:` under `systemd:`, or `files:` at the top.
    const rest = at.slice(depth).reduceRight<unknown>((value, key) => ({ [key]: value }), items);
    return {
      offset: block[1],
      text: indented(stringifyPortable(rest), columnOf(text, block[0])),
    };
  }
  return undefined;
}

/**
 * Appends `added` (files and units) to the tree's file `rel`: a list the file already has takes
 * the new items after its last one, a list it lacks is added with its key after the other keys
 * there; what the file held stays byte for byte (re-written as YAML only where it has the list or
 * its map in flow style, `[]` or `{}`).
 */
export async function appendToFile(tree: string, rel: string, added: PlainMap): Promise<void> {
  const file = path.join(tree, rel);
  const text = await readFile(file, "utf8");
  const doc = parseDocument(text);
  if (!isMap(doc.contents) || !doc.contents.items.length) {
    // A file with nothing of its own: its comments at the top, then what is added.
    const comments = /^(?:[ \t]*(?:#[^\n]*)?\n)*/.exec(text)![0];
    await writeFile(file, `${comments}${stringifyPortable(added)}`);
    return;
  }
  // Each added key holds a list (`files`) or a map of lists (`systemd.units`).
  const lists: [string[], PlainMap[]][] = Object.entries(added).flatMap(([key, value]) =>
    Array.isArray(value)
      ? [[[key], listOf(value)] as [string[], PlainMap[]]]
      : Object.entries(value as PlainMap).map(
          ([sub, items]) => [[key, sub], listOf(items)] as [string[], PlainMap[]],
        ),
  );
  const places = lists.map(([at, items]) => insertion(doc, text, at, items));
  if (places.every((p) => p !== undefined)) {
    // From the end, so each offset still points where it did; ties keep the order asked.
    let out = text.endsWith("\n") ? text : `${text}\n`;
    const order = places
      .map((p, i) => ({ ...p, i }))
      .sort((a, b) => b.offset - a.offset || b.i - a.i);
    for (const { offset, text: more } of order) {
      const at = Math.min(offset, out.length);
      const lineStart =
        at === 0 || out[at - 1] === "\n" ? at : out.indexOf("\n", at) + 1 || out.length;
      out = `${out.slice(0, lineStart)}${more}${out.slice(lineStart)}`;
    }
    await writeFile(file, out);
    return;
  }
  for (const [at, items] of lists) for (const item of items) doc.addIn(at, doc.createNode(item));
  await writeFile(file, doc.toString());
}
