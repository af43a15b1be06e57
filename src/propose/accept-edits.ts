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
 * The manifest edits accepting drift groups (one PR's: one group, or one cause's). Each changed value is edited in the file that
 * declares it when every node taking it from there drifted alike, else as an override in the node's
 * own file (or, past FEW_OVERRIDES drifted nodes that are most of the audited takers, in the shared
 * file with the old value kept for the others, unaudited ones included); a value no file declares
 * yet goes where the drifted item is declared. A dark node never holds an accept back: placement is
 * decided from the takers this run audited (`audited`). Throws ManifestEditError when an edit cannot
 * be made.
 */
export function acceptEdits(
  groups: readonly DriftGroup[],
  files: ReadonlyMap<string, string>,
  dependants: Dependants,
  lists: SpecListShapes,
  audited: (name: string) => boolean = () => true,
): AcceptPlan {
  // The groups of one cause are one PR: their changes meet in the same files, one edit per file.
  const edits = new Map<string, DeclaredChange[]>();
  const shared: SharedValue[] = [];
  for (const group of groups) {
    const drifted = new Set(group.nodes.map((n) => n.node.name));
    const draft: AcceptDraft = {
      domain: group.domain,
      drifted,
      takersOf: takersLookup(dependants, drifted, audited),
      edits,
      shared: new Map(),
    };
    for (const { node, items } of group.nodes) acceptNode(draft, node, items);
    for (const value of draft.shared.values()) if (value) shared.push(value);
  }
  return {
    files: editedFiles(edits, files, lists),
    shared: shared.sort((a, b) => (a.file < b.file ? -1 : 1)),
  };
}

/** Nodes taking a value from a file, how many of them drifted alike and how many were not audited. */
interface Takers {
  all: readonly LoadedNode[];
  drifted: number;
  unaudited: number;
}

/** What accepting a drift group has gathered so far, node by node. */
interface AcceptDraft {
  domain: AnyDomain;
  drifted: ReadonlySet<string>;
  takersOf: (file: string, at: SpecPath) => Takers;
  /** File -> the changes to make in it. */
  edits: Map<string, DeclaredChange[]>;
  /** Per file and changed path, decided once however many nodes share it. */
  shared: Map<string, SharedValue | undefined>;
}

/**
 * Takers asked once per file and path, not once per node (10,000 nodes sharing fleet.yaml made that
 * 100 million lookups).
 */
function takersLookup(
  dependants: Dependants,
  drifted: ReadonlySet<string>,
  audited: (name: string) => boolean,
): (file: string, at: SpecPath) => Takers {
  const takers = new Map<string, Takers>();
  return (file, at) => {
    const key = `${file}\0${pathKey(at)}`;
    let answer = takers.get(key);
    if (answer === undefined) {
      const all = dependants(file, at);
      takers.set(
        key,
        (answer = {
          all,
          drifted: all.filter((n) => drifted.has(n.name)).length,
          unaudited: all.filter((n) => !audited(n.name)).length,
        }),
      );
    }
    return answer;
  };
}

function addChanges(
  edits: Map<string, DeclaredChange[]>,
  file: string,
  changes: DeclaredChange[],
): void {
  for (const change of changes) append(edits, file, change);
}

/** One drifted node's accepted values, each sent to the file it is to be edited in. */
function acceptNode(draft: AcceptDraft, node: LoadedNode, items: readonly DriftItem[]): void {
  const { domain } = draft;
  const before = declaredFor(domain, node.spec);
  // The manifests no longer declare the domain for this node: the report predates that change,
  // and the next audit will not find this drift.
  if (before === undefined) return;
  // A set's items (listeners, routes) are accepted together, in one edit of their list.
  const after = items.reduce<unknown>(
    (declared, each) => acceptFinding(domain, declared, each),
    before,
  );
  const own: DeclaredChange[] = [];
  for (const change of declaredChanges(before, after, domain.specPath, domain.listKey)) {
    const at = node.layers.some((layer) => layer.origins.has(pathKey(change.path)))
      ? change.path
      : items[0]!.path;
    const file = sourceOf(node, at).file;
    if (file === node.file || acceptSharedChange(draft, node, change, file, at)) own.push(change);
  }
  if (own.length) addChanges(draft.edits, node.file, overrides(node, own, domain));
}

/**
 * A change to a value the node takes from a shared file: true when it is to be an override in the
 * node's own file, false when the shared file is edited.
 */
function acceptSharedChange(
  draft: AcceptDraft,
  node: LoadedNode,
  change: DeclaredChange,
  file: string,
  at: SpecPath,
): boolean {
  const who = draft.takersOf(file, at);
  const key = `${file}\0${pathKey(change.path)}`;
  if (!draft.shared.has(key)) {
    const many = who.drifted > FEW_OVERRIDES;
    const audited = who.all.length - who.unaudited;
    const edited = who.drifted === who.all.length || (many && who.drifted * 2 > audited);
    const { unaudited, drifted } = who;
    draft.shared.set(
      key,
      many ? { file, takers: who.all.length, unaudited, drifted, edited } : undefined,
    );
    if (edited) editSharedFile(draft, node, change, file, who.all);
  }
  return !(draft.shared.get(key)?.edited ?? who.drifted === who.all.length);
}

/** The change made in the shared file; those that did not drift keep its old value in their own. */
function editSharedFile(
  draft: AcceptDraft,
  node: LoadedNode,
  change: DeclaredChange,
  file: string,
  takers: readonly LoadedNode[],
): void {
  addChanges(draft.edits, file, [change]);
  const old = valueAt(node.layers.find((l) => l.file === file)!.value, change.path);
  for (const other of takers) {
    if (draft.drifted.has(other.name)) continue;
    addChanges(
      draft.edits,
      other.file,
      overrides(
        other,
        [
          old === undefined
            ? { path: change.path, delete: true }
            : { path: change.path, value: old as JsonValue },
        ],
        draft.domain,
      ),
    );
  }
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
