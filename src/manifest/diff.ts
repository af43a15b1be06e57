// What a change to the manifests does to each node's effective declared state, to the fleet's
// settings, its remediation tickets and its pinned host keys: the data a reviewer needs, since one
// line in a group file can change what dozens of nodes must run. Rendered by diff-markdown.ts.
import { isDeepStrictEqual } from "node:util";
import { compareText } from "../report/formats/common.js";
import { unifiedDiff } from "../domains/file-text.js";
import { pinnedKeys } from "./known-hosts.js";
import { sshConfigCommands, type SshConfigCommand } from "./ssh-config.js";
import { itemKey, keyFieldAt, SPEC_LIST_SHAPES } from "./lists.js";
import type { Fleet, LoadedNode } from "./load.js";
import { sourceOf } from "./merge-layers.js";
import { pathKey, showPath } from "../spec-path.js";

export interface KeyChange {
  /** Where the value sits in the effective spec; keyed list items by their key (files by path). */
  path: (string | number)[];
  before: unknown;
  after: unknown;
  /**
   * For a list on both sides (ports, routes, waivers, a ticket's items): one item added to it or
   * removed from it, as `after` or `before`.
   */
  item?: "added" | "removed";
  /** file:line declaring the value after the change (before it, for a removal). */
  declaredAt?: string;
}

export interface NodeChange {
  node: string;
  kind: "added" | "removed" | "changed";
  changes: KeyChange[];
}

export interface ManifestDiff {
  /** Pinned host keys per host pattern: which keys Quartermaster trusts for which node. */
  knownHosts: KeyChange[];
  nodes: NodeChange[];
  fleetSettings: KeyChange[];
  /** Every field of every ticket but its id: status, nodes, the drift and signature it states. */
  tickets: KeyChange[];
  /** The tree's ssh_config, when it changes: ssh reads it on the runner, so every line counts. */
  sshConfig?: { diff: string; commands: SshConfigCommand[] };
}

type Leaf = { path: (string | number)[]; value: unknown };

/**
 * Leaf values by path: maps per key, keyed lists per item, other lists whole (compared item by
 * item in `changesBetween`). The root itself is never a leaf: nothing, or an empty map, there has
 * no key to show.
 */
function leaves(value: unknown, path: (string | number)[] = [], out = new Map<string, Leaf>()) {
  const listKey = keyFieldAt(SPEC_LIST_SHAPES, path);
  if (
    Array.isArray(value) &&
    listKey !== undefined &&
    value.every((item) => itemKey(item, listKey) !== undefined)
  ) {
    for (const item of value) leaves(item, [...path, String(itemKey(item, listKey))], out);
  } else if (
    value &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    Object.keys(value).length > 0
  ) {
    for (const [key, child] of Object.entries(value)) leaves(child, [...path, key], out);
  } else if (path.length) {
    out.set(pathKey(path), { path, value });
  }
  return out;
}

/** Items of `from` that `to` does not hold, as many times as `from` holds them more. */
function missing(from: readonly unknown[], to: readonly unknown[]): unknown[] {
  const left = new Map<string, number>();
  for (const item of to) left.set(JSON.stringify(item), (left.get(JSON.stringify(item)) ?? 0) + 1);
  return from.filter((item) => {
    const key = JSON.stringify(item);
    const count = left.get(key) ?? 0;
    left.set(key, count - 1);
    return count <= 0;
  });
}

/**
 * A list on both sides, item by item: what was removed, what was added; the whole list only when
 * just its order changed.
 */
function listChanges(path: (string | number)[], before: unknown[], after: unknown[]): KeyChange[] {
  const removed = missing(before, after).map((item) => ({
    path,
    before: item,
    after: undefined,
    item: "removed" as const,
  }));
  const added = missing(after, before).map((item) => ({
    path,
    before: undefined,
    after: item,
    item: "added" as const,
  }));
  return removed.length || added.length ? [...removed, ...added] : [{ path, before, after }];
}

function changesBetween(
  before: unknown,
  after: unknown,
  located?: (path: (string | number)[], removed: boolean) => string | undefined,
): KeyChange[] {
  const was = leaves(before);
  const now = leaves(after);
  const changes: KeyChange[] = [];
  for (const key of new Set([...was.keys(), ...now.keys()])) {
    const b = was.get(key);
    const a = now.get(key);
    if (b && a && isDeepStrictEqual(b.value, a.value)) continue;
    const path = (a ?? b)!.path;
    const declaredAt = located?.(path, !a);
    const found =
      Array.isArray(b?.value) && Array.isArray(a?.value)
        ? listChanges(path, b.value, a.value)
        : [{ path, before: b?.value, after: a?.value }];
    for (const change of found) changes.push({ ...change, ...(declaredAt && { declaredAt }) });
  }
  // Stable: a list's removals stay before its additions.
  return changes.sort((x, y) => compareText(showPath(x.path), showPath(y.path)));
}

function at(node: LoadedNode) {
  return (path: (string | number)[]) => {
    const origin = sourceOf(node, path);
    return `${origin.file}:${origin.line}`;
  };
}

function declared(node: LoadedNode): Record<string, unknown> {
  return { host: node.host, ...node.spec };
}

function knownHostsChanges(before: string | undefined, after: string | undefined): KeyChange[] {
  const was = pinnedKeys(before);
  const now = pinnedKeys(after);
  return [...new Set([...was.keys(), ...now.keys()])]
    .sort(compareText)
    .filter((host) => !isDeepStrictEqual(was.get(host), now.get(host)))
    .map((host) => ({ path: [host], before: was.get(host), after: now.get(host) }));
}

/** Tickets by id, each whole but its id: any field may change what it acknowledges. */
const ticketsOf = (fleet: Fleet) =>
  Object.fromEntries(fleet.tickets.map(({ ticket: { id, ...rest } }) => [id, rest]));

export function diffFleets(base: Fleet, head: Fleet): ManifestDiff {
  const before = new Map(base.nodes.map((n) => [n.name, n]));
  const after = new Map(head.nodes.map((n) => [n.name, n]));
  const nodes: NodeChange[] = [];
  for (const name of [...new Set([...before.keys(), ...after.keys()])].sort(compareText)) {
    const b = before.get(name);
    const a = after.get(name);
    const changes = changesBetween(b && declared(b), a && declared(a), (path, removed) =>
      removed ? b && at(b)(path) : a && at(a)(path),
    );
    if (changes.length)
      nodes.push({ node: name, kind: !b ? "added" : !a ? "removed" : "changed", changes });
  }
  return {
    knownHosts: knownHostsChanges(base.knownHosts, head.knownHosts),
    nodes,
    fleetSettings: changesBetween(base.settings, head.settings),
    tickets: changesBetween(ticketsOf(base), ticketsOf(head)),
    ...(base.sshConfig !== head.sshConfig && {
      sshConfig: {
        diff: unifiedDiff(base.sshConfig ?? "", head.sshConfig ?? ""),
        commands: sshConfigCommands(head.sshConfig ?? ""),
      },
    }),
  };
}
