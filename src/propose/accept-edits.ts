import { append } from "../collections.js";
import type { Finding, JsonValue } from "../domains/domain.js";
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
 * The domain's finding back from a report item, with all its accept reads (a diff: the live text
 * was read).
 */
function findingOf(item: DriftItem): Finding {
  const { key, path } = item;
  const finding: Finding = {
    key,
    declared: item.declared as JsonValue,
    live: item.live as JsonValue,
    path,
  };
  if (item.detail !== undefined) finding.detail = item.detail;
  if (item.diff !== undefined) finding.diff = item.diff;
  return finding;
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
  /** Nodes taking the value from the file, and how many of them drifted alike. */
  takers: number;
  drifted: number;
  /** The file was edited and the others keep the old value; else the drifted got overrides. */
  edited: boolean;
}

/**
 * What accepting a drift group takes: the edited files (and what became of values shared by more
 * than a few drifted nodes), or why it must wait for a later run.
 */
export type AcceptPlan =
  { files: Record<string, string>; shared: SharedValue[] } | { waiting: string[] };

/** The group a manifest file declares, when it is a group file. */
export const groupOfFile = (file: string) => /(?:^|\/)groups\/([^/]+)\.ya?ml$/.exec(file)?.[1];

/** A shared file as a reviewer names it: the group, or the file's name. */
const sharedName = (file: string) => groupOfFile(file) ?? file.split("/").at(-1)!;

/**
 * The manifest edits accepting a drift group. Each changed value is edited in the file that
 * declares it when every node taking it from there drifted alike, else as an override in the node's
 * own file (or, past FEW_OVERRIDES drifted nodes that are most of them, in the shared file with the
 * old value kept for the others); a value no file declares yet goes where the drifted item is
 * declared. A value a shared file declares for a node this run did not audit (`audited`) is none of
 * these: the whole accept waits, so no override is written while the shared file may still hold.
 * Throws ManifestEditError when an edit cannot be made.
 */
export function acceptEdits(
  group: DriftGroup,
  files: ReadonlyMap<string, string>,
  dependants: Dependants,
  lists: SpecListShapes,
  audited: (name: string) => boolean = () => true,
): AcceptPlan {
  const { domain } = group;
  const edits = new Map<string, DeclaredChange[]>();
  const drifted = new Set(group.nodes.map((n) => n.node.name));
  // Who takes a value from a file, who of them drifted alike and who this run did not audit: asked
  // once per file and path, not once per node (10,000 nodes sharing fleet.yaml made that 100
  // million lookups).
  const takers = new Map<
    string,
    { all: readonly LoadedNode[]; drifted: number; unaudited: number }
  >();
  const takersOf = (file: string, at: SpecPath) => {
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
  const waiting = new Set<string>();
  // Per file and changed path, made once however many nodes share it.
  const done = new Map<string, SharedValue | undefined>();
  const add = (file: string, changes: DeclaredChange[]) => {
    for (const change of changes) append(edits, file, change);
  };
  for (const { node, items } of group.nodes) {
    const before = declaredFor(domain, node.spec);
    // The manifests no longer declare the domain for this node: the report predates that change,
    // and the next audit will not find this drift.
    if (before === undefined) continue;
    // A set's items (listeners, routes) are accepted together, in one edit of their list.
    const after = items.reduce<unknown>(
      (declared, each) => acceptFinding(domain, declared, findingOf(each)),
      before,
    );
    const own: DeclaredChange[] = [];
    for (const change of declaredChanges(before, after, domain.specPath, domain.listKey)) {
      const at = node.layers.some((layer) => layer.origins.has(pathKey(change.path)))
        ? change.path
        : items[0]!.path;
      const file = sourceOf(node, at).file;
      if (file === node.file) {
        own.push(change);
        continue;
      }
      const who = takersOf(file, at);
      if (who.unaudited) {
        const of = who.all.length;
        waiting.add(
          `${sharedName(file)}: ${who.unaudited} of ${of} node${of === 1 ? "" : "s"} not audited this run`,
        );
        continue;
      }
      const key = `${file}\0${pathKey(change.path)}`;
      if (!done.has(key)) {
        const many = who.drifted > FEW_OVERRIDES;
        const edited = who.drifted === who.all.length || (many && who.drifted * 2 > who.all.length);
        done.set(
          key,
          many ? { file, takers: who.all.length, drifted: who.drifted, edited } : undefined,
        );
        if (edited) {
          add(file, [change]);
          // Those that did not drift keep what they run: the file's old value, now in their own.
          const old = valueAt(node.layers.find((l) => l.file === file)!.value, change.path);
          for (const other of who.all) {
            if (drifted.has(other.name)) continue;
            add(
              other.file,
              overrides(
                other,
                [
                  old === undefined
                    ? { path: change.path, delete: true }
                    : { path: change.path, value: old as JsonValue },
                ],
                domain,
              ),
            );
          }
        }
      }
      if (!(done.get(key)?.edited ?? who.drifted === who.all.length)) own.push(change);
    }
    if (own.length) add(node.file, overrides(node, own, domain));
  }
  if (waiting.size) return { waiting: [...waiting].sort() };
  const edited: Record<string, string> = {};
  for (const [file, changes] of edits) {
    const text = files.get(file);
    if (text === undefined)
      throw new ManifestEditError(`${file} is not in the manifest repository`);
    edited[file] = applyChanges(text, changes, lists);
  }
  return {
    files: edited,
    shared: [...done.values()]
      .filter((s) => s !== undefined)
      .sort((a, b) => (a.file < b.file ? -1 : 1)),
  };
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
