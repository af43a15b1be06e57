import { append } from "../collections.js";
import type { JsonValue } from "../domains/domain.js";
import type { AnyDomain } from "../domains/registry.js";
import { declaredFor, within } from "../domains/domain.js";
import { ManifestEditError } from "../errors.js";
import { applyChanges } from "../manifest/edit/apply.js";
import { declaredChanges, type DeclaredChange } from "../manifest/edit/changes.js";
import type { SpecListShapes } from "../manifest/lists.js";
import type { LoadedNode } from "../manifest/load.js";
import { sourceOf } from "../manifest/merge-layers.js";
import type { DriftItem } from "../report/schema.js";
import { acceptFinding } from "./accept.js";
import type { DriftGroup } from "./group.js";
import { pathKey, valueAt, type SpecPath } from "../spec-path.js";

/**
 * Nodes whose effective value at a spec path comes from a file: who an edit of that file would
 * change.
 */
export type Dependants = (file: string, specPath: SpecPath) => readonly LoadedNode[];

/** Who takes each value from each file, worked out once per file and path. */
export function dependantsOf(nodes: readonly LoadedNode[]): Dependants {
  const byFile = new Map<string, LoadedNode[]>();
  for (const node of nodes) for (const layer of node.layers) append(byFile, layer.file, node);
  const cache = new Map<string, LoadedNode[]>();
  return (file, specPath) => {
    const key = `${file}\0${pathKey(specPath)}`;
    let names = cache.get(key);
    if (!names)
      cache.set(
        key,
        (names = (byFile.get(file) ?? []).filter((n) => sourceOf(n, specPath).file === file)),
      );
    return names;
  };
}

/**
 * Past this many node files written with one shared value, the shared file is edited instead when
 * most of the nodes taking it drifted alike (the others keep the old value in their own file); else
 * the plan and the PR say how many node files it writes.
 */
export const FEW_OVERRIDES = 3;

/** How an accept treated a value a shared file declares for more than a few drifted nodes. */
export interface SharedValue {
  file: string;
  /** Nodes taking the value from the file, how many this run did not audit, how many drifted alike. */
  takers: number;
  unaudited: number;
  drifted: number;
  /** The file was edited and the others keep the old value; else the drifted got overrides. */
  edited: boolean;
}

/**
 * What accepting a drift group takes: the edited files, and what became of values shared by more
 * than a few drifted nodes.
 */
export interface AcceptPlan {
  files: Record<string, string>;
  shared: SharedValue[];
}

/** The group a manifest file declares, when it is a group file. */
export const groupOfFile = (file: string) => /(?:^|\/)groups\/([^/]+)\.ya?ml$/.exec(file)?.[1];

/**
 * The manifest edits accepting drift groups (one PR's: one group, or one cause's). Each changed
 * value is edited in the file that declares it when every audited node taking it from there drifted
 * alike, or past FEW_OVERRIDES drifted alike that are most of the audited takers: the others keep the
 * old value in their own files (unaudited ones included); else it is an override in each drifted
 * node's own file. A value no file declares yet goes where the drifted item is declared. Placement is
 * decided per shared value across all of the PR's groups (a cause's groups are split by node and
 * key, never by who drifted alike), and from the takers this run audited (`audited`): a dark node
 * never holds an accept back. Throws ManifestEditError when an edit cannot be made.
 */
export function acceptEdits(
  groups: readonly DriftGroup[],
  files: ReadonlyMap<string, string>,
  dependants: Dependants,
  lists: SpecListShapes,
  audited: (name: string) => boolean = () => true,
  alike: Alike = alikeAcross(groups),
): AcceptPlan {
  // The groups of one cause are one PR: their changes meet in the same files, one edit per file.
  const edits = new Map<string, DeclaredChange[]>();
  const sharedChanges = new Map<string, SharedChange[]>();
  for (const group of groups)
    for (const { node, items } of group.nodes) {
      const own: DeclaredChange[] = [];
      for (const shared of nodeChanges(group, node, items)) {
        if (shared.file === node.file) own.push(shared.change);
        else append(sharedChanges, `${shared.file}\0${pathKey(shared.change.path)}`, shared);
      }
      if (own.length) addChanges(edits, node.file, overrides(node, own, group.domain));
    }
  const shared: SharedValue[] = [];
  for (const changes of sharedChanges.values()) {
    const value = placeShared(changes, edits, dependants, audited, alike);
    if (value) shared.push(value);
  }
  return {
    files: editedFiles(edits, files, lists),
    shared: shared.sort((a, b) => (a.file < b.file ? -1 : 1)),
  };
}

/**
 * The drifted nodes (of the same owners) whose accepts change a value a shared file declares to the
 * same value, in this whole run: one PR per cause splits nodes that drifted alike, and where a
 * value is written is decided from all of them (their PRs then edit the same line: one PR).
 */
export type Alike = (change: SharedChange) => ReadonlySet<string>;

const alikeKey = (c: SharedChange) => JSON.stringify([c.file, c.change, c.owners]);

/** Who drifted alike among the accepting `groups`' nodes. */
export function alikeAcross(groups: readonly DriftGroup[]): Alike {
  const alike = new Map<string, Set<string>>();
  for (const group of groups)
    for (const { node, items } of group.nodes)
      for (const change of changesOrNone(group, node, items)) {
        if (change.file === node.file) continue;
        const key = alikeKey(change);
        let names = alike.get(key);
        if (!names) alike.set(key, (names = new Set()));
        names.add(node.name);
      }
  return (change) => alike.get(alikeKey(change)) ?? new Set([change.node.name]);
}

/** A node's changes, none when the manifest cannot take them: its PR is then a ticket. */
function changesOrNone(...args: Parameters<typeof nodeChanges>): SharedChange[] {
  try {
    return nodeChanges(...args);
  } catch (error) {
    if (error instanceof ManifestEditError) return [];
    throw error;
  }
}

/** One drifted node's change to a value, and the file it takes that value from. */
export interface SharedChange {
  domain: AnyDomain;
  owners: readonly string[];
  node: LoadedNode;
  change: DeclaredChange;
  file: string;
  /** Where the value sits for the file's takers: the change's path, or the drifted item's. */
  at: SpecPath;
}

function addChanges(
  edits: Map<string, DeclaredChange[]>,
  file: string,
  changes: DeclaredChange[],
): void {
  for (const change of changes) append(edits, file, change);
}

/** One drifted node's accepted values, each with the file that declares it for the node. */
function nodeChanges(
  { domain, owners, auditedAt }: Pick<DriftGroup, "domain" | "owners" | "auditedAt">,
  node: LoadedNode,
  items: readonly DriftItem[],
): SharedChange[] {
  const before = declaredFor(domain, node.spec);
  // The manifests no longer declare the domain for this node: the report predates that change,
  // and the next audit will not find this drift.
  if (before === undefined) return [];
  // A set's items (listeners, routes) are accepted together, in one edit of their list.
  const after = items.reduce<unknown>(
    (declared, each) => acceptFinding(domain, declared, each, auditedAt),
    before,
  );
  return declaredChanges(before, after, domain.specPath, domain.listKey).map((change) => {
    const at = node.layers.some((layer) => layer.origins.has(pathKey(change.path)))
      ? change.path
      : items[0]!.path;
    return { domain, owners, node, change, file: sourceOf(node, at).file, at };
  });
}

/**
 * Where the drifted nodes' changes of one value a shared file declares go: the shared file, when the
 * most nodes alike (one new value) are every audited taker, or more than a few and most of them; the
 * other takers then keep the old value (or their own new one) in their own files. Else each drifted
 * node's own file. What the plan says of it when more than a few drifted alike.
 */
function placeShared(
  changes: readonly SharedChange[],
  edits: Map<string, DeclaredChange[]>,
  dependants: Dependants,
  audited: (name: string) => boolean,
  alikeOf: Alike,
): SharedValue | undefined {
  const { file, at, domain } = changes[0]!;
  const takers = dependants(file, at);
  // The new value most nodes drifted to, counted across the run's PRs.
  const [first, alike] = changes
    .map((each) => [each, alikeOf(each)] as const)
    .reduce((most, next) => (next[1].size > most[1].size ? next : most));
  const unaudited = takers.filter((n) => !audited(n.name)).length;
  const drifted = alike.size;
  const many = drifted > FEW_OVERRIDES;
  const edited =
    drifted === takers.length - unaudited || (many && drifted * 2 > takers.length - unaudited);
  if (!edited)
    for (const each of changes)
      addChanges(edits, each.node.file, overrides(each.node, [each.change], each.domain));
  else {
    const { node, change } = first;
    addChanges(edits, file, [change]);
    const layer = node.layers.find((l) => l.file === file)!;
    const read = valueAt(layer.value, change.path);
    // Kept as the shared file writes it: a YAML number the schema read as a string stays a number.
    const number = layer.origins.get(pathKey(change.path))?.number && typeof read === "string";
    const old = number ? Number(read) : read;
    // A value the shared file did not declare yet is `null` for the others: absent, as before.
    const keep: DeclaredChange = { path: change.path, value: (old ?? null) as JsonValue };
    const own = new Map(changes.map((each) => [each.node.name, each.change]));
    for (const other of takers)
      if (!alike.has(other.name))
        addChanges(edits, other.file, overrides(other, [own.get(other.name) ?? keep], domain));
  }
  return many ? { file, takers: takers.length, unaudited, drifted, edited } : undefined;
}

/** Each edited file's new text. */
export function editedFiles(
  edits: ReadonlyMap<string, DeclaredChange[]>,
  files: ReadonlyMap<string, string>,
  lists: SpecListShapes,
): Record<string, string> {
  const edited: Record<string, string> = {};
  for (const [file, changes] of edits) {
    const text = files.get(file);
    if (text === undefined)
      throw new ManifestEditError(`${file} is not in the manifest repository`);
    edited[file] = applyChanges(text, changes, lists);
  }
  return edited;
}

/**
 * Changes in a node's own file: removing a value an earlier file declares is written as `null`,
 * which deletes it for that node only (removing it from the node file alone would bring it back).
 */
function overrides(
  node: LoadedNode,
  changes: DeclaredChange[],
  domain: AnyDomain,
): DeclaredChange[] {
  const inherited = node.layers.slice(0, -1);
  return changes.map((change) => {
    if (
      !("delete" in change) ||
      !inherited.some((layer) => layer.origins.has(pathKey(change.path)))
    )
      return change;
    if (domain.listKey && within(domain, change.path).length === 1) {
      throw new ManifestEditError(
        `${change.path.at(-1)} is declared for other nodes too, and a node file cannot remove one item of an inherited list`,
      );
    }
    return { path: change.path, value: null };
  });
}
