import { createHash } from "node:crypto";
import { append } from "../collections.js";
import type { JsonValue } from "../domains/domain.js";
import { domainByName, type AnyDomain } from "../domains/registry.js";
import { driftSignature, setSignature } from "../manifest/signature.js";
import type { LoadedNode } from "../manifest/load.js";
import type { DriftItem, Report } from "../report/schema.js";

/** One drift signature: the same drift items of one domain on one or more nodes. */
export interface DriftGroup {
  signature: string;
  /** Who owns the nodes (`owners:`), sorted: nodes of different owners are never one group. */
  owners: string[];
  /** The signature, with the owners' hash when owned: what names the group's branches. */
  identity: string;
  domain: AnyDomain;
  /** One per key, in key order; several only for a domain whose items are a set. */
  items: DriftItem[];
  nodes: { node: LoadedNode; items: DriftItem[] }[];
}

export const hash = (text: string, length = 8) =>
  createHash("sha256").update(text).digest("hex").slice(0, length);

export const itemSignature = (item: DriftItem) =>
  driftSignature(item.domain, item.key, item.declared as JsonValue, item.live as JsonValue);
const byKey = (a: DriftItem, b: DriftItem) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/**
 * What a group's PR is about, in a title or a branch name: the key, or the first key and how many
 * more.
 */
export const groupKey = (group: DriftGroup) =>
  group.items.length === 1
    ? group.items[0]!.key
    : `${group.items[0]!.key} and ${group.items.length - 1} more`;

/**
 * A node's owners as its manifests declare them (`owners:`), CODEOWNERS' `@` left off, sorted and
 * each once: `@alice` and `alice` are one owner.
 */
export const ownersOf = (node: LoadedNode): string[] =>
  [
    ...new Set(
      (Array.isArray(node.spec.owners) ? node.spec.owners : []).map((o) => o.replace(/^@/, "")),
    ),
  ].sort();

/**
 * Unacknowledged drift grouped into proposals: identical drift on several nodes is one group, and
 * all drifting items of a set domain (listeners, routes) on one node are one group, not one each.
 */
export function groupDrift(report: Report, nodes: ReadonlyMap<string, LoadedNode>): DriftGroup[] {
  const groups = new Map<string, DriftGroup>();
  const add = (node: LoadedNode, domain: AnyDomain, items: DriftItem[]) => {
    items.sort(byKey);
    const signature =
      items.length === 1 ? itemSignature(items[0]!) : setSignature(items.map(itemSignature));
    const owners = ownersOf(node);
    const identity = owners.length ? `${signature}-${hash(JSON.stringify(owners))}` : signature;
    let group = groups.get(identity);
    if (!group)
      groups.set(identity, (group = { signature, owners, identity, domain, items, nodes: [] }));
    group.nodes.push({ node, items });
  };
  for (const result of report.nodes) {
    const node = nodes.get(result.name);
    if (!node) continue;
    const sets = new Map<AnyDomain, DriftItem[]>();
    for (const item of result.drift) {
      if (item.acknowledged) continue;
      const domain = domainByName(item.domain);
      if (!domain) continue;
      if (domain.itemsAreASet) append(sets, domain, item);
      else add(node, domain, [item]);
    }
    for (const [domain, items] of sets) add(node, domain, items);
  }
  return [...groups.values()].sort((a, b) => a.identity.localeCompare(b.identity));
}
