import { createHash } from "../crypto.js";
import { append } from "../collections.js";
import type { CauseKind } from "../domains/cause.js";
import { domainByName, type AnyDomain } from "../domains/registry.js";
import { itemSignatureOf, setSignature } from "../manifest/signature.js";
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
  /** The known cause these items share: what makes them one PR with its other items. */
  cause?: KnownCause;
  /** The accept PR a reviewer closed unmerged that carried these items on these nodes. */
  rejectedBy?: { number: number; branch: string };
  /** When the audit that found them ran (the report's start), epoch milliseconds. */
  auditedAt?: number;
}

/** A cause that names what it is (not `unknown`), its node-independent identity and its change. */
export interface KnownCause {
  kind: Exclude<CauseKind, "unknown">;
  /** Host text, so only ever a Map key or hashed. */
  group: string;
  /**
   * When the group changed differently on different nodes: what this node's items of it are
   * (domain, key and live value of each), hashed. Nodes join one PR by a cause only where it
   * changed the same on each, so a host that copies another's text joins its PR only by showing the
   * very same change.
   */
  change?: string;
}

/**
 * The group of the item's cause when it can join items into one PR. A latent item's cause made what
 * comes next, not what drifted: it joins no drift's PR.
 */
function causeGroup(item: DriftItem): string | undefined {
  const cause = item.cause;
  return !cause || cause.kind === "unknown" || item.latentPolicy ? undefined : cause.group;
}

/** Each cause group's change on one node: every item of that group, as the host shows it, hashed. */
function causeChanges(items: readonly DriftItem[]): Map<string, string> {
  const changed = new Map<string, string[]>();
  for (const item of items) {
    const group = causeGroup(item);
    if (group !== undefined)
      append(changed, group, JSON.stringify([item.domain, item.key, item.live]));
  }
  return new Map(
    [...changed].map(([group, each]) => [
      group,
      hash(JSON.stringify([...new Set(each)].sort()), 16),
    ]),
  );
}

/**
 * What a cause joins by: its group, and its change on the node where the group changed differently
 * elsewhere. A group that changed alike everywhere is its group alone, so its PR's branch stays the
 * same as its items are accepted or resolved one by one.
 */
export const causeIdentity = (cause: KnownCause) =>
  cause.change === undefined ? cause.group : JSON.stringify([cause.group, cause.change]);

export const hash = (text: string, length = 8) =>
  createHash("sha256").update(text).digest("hex").slice(0, length);

export const itemSignature = (item: DriftItem) =>
  itemSignatureOf(item.domain, { ...item, latent: item.latentPolicy ? item.latent : undefined });
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
 * Items of different known causes are never one group.
 */
export function groupDrift(report: Report, nodes: ReadonlyMap<string, LoadedNode>): DriftGroup[] {
  const groups = new Map<string, DriftGroup>();
  const add = (node: LoadedNode, domain: AnyDomain, items: DriftItem[], cause?: KnownCause) => {
    items.sort(byKey);
    const signature =
      items.length === 1 ? itemSignature(items[0]!) : setSignature(items.map(itemSignature));
    const owners = ownersOf(node);
    const identity = [
      signature,
      ...(owners.length ? [hash(JSON.stringify(owners))] : []),
      ...(cause ? [`c${hash(causeIdentity(cause))}`] : []),
    ].join("-");
    let group = groups.get(identity);
    if (!group)
      groups.set(
        identity,
        (group = {
          signature,
          owners,
          identity,
          domain,
          items,
          nodes: [],
          auditedAt: Date.parse(report.startedAt),
          ...(cause && { cause }),
        }),
      );
    group.nodes.push({ node, items });
  };
  const entries = report.nodes.flatMap((result) => {
    const node = nodes.get(result.name);
    if (!node) return [];
    const drift = result.drift.filter((item) => !item.acknowledged && domainByName(item.domain));
    return [{ node, drift, changes: causeChanges(drift) }];
  });
  // Each cause group's distinct changes across the nodes: more than one, and each is told apart.
  const changesOf = new Map<string, Set<string>>();
  for (const { changes } of entries)
    for (const [group, change] of changes) {
      const seen = changesOf.get(group) ?? new Set<string>();
      changesOf.set(group, seen.add(change));
    }
  for (const { node, drift, changes } of entries) {
    const causeOf = (item: DriftItem): KnownCause | undefined => {
      const cause = item.cause;
      if (!cause || cause.kind === "unknown" || cause.group === undefined || item.latentPolicy)
        return undefined;
      const split = changesOf.get(cause.group)!.size > 1;
      return {
        kind: cause.kind,
        group: cause.group,
        ...(split && { change: changes.get(cause.group)! }),
      };
    };
    // Keyed by domain and cause group: a set's items of one cause are one group, apart from others.
    const sets = new Map<string, DriftItem[]>();
    for (const item of drift) {
      const domain = domainByName(item.domain)!;
      if (!domain.itemsAreASet) {
        add(node, domain, [item], causeOf(item));
        continue;
      }
      append(sets, JSON.stringify([domain.name, causeGroup(item) ?? null]), item);
    }
    for (const items of sets.values())
      add(node, domainByName(items[0]!.domain)!, items, causeOf(items[0]!));
  }
  return [...groups.values()].sort((a, b) => a.identity.localeCompare(b.identity));
}

/**
 * Drift groups as pull requests take them: the groups of one known cause, which changed the same on
 * each of their nodes, and the same owners are one bundle (across nodes and domains), every other
 * group a bundle of its own.
 */
export function bundleGroups(groups: readonly DriftGroup[]): DriftGroup[][] {
  const bundles = new Map<string, DriftGroup[]>();
  for (const group of groups) {
    const key = group.cause
      ? JSON.stringify(["cause", causeIdentity(group.cause), group.owners])
      : JSON.stringify(["group", group.identity]);
    append(bundles, key, group);
  }
  return [...bundles.values()];
}
