import type { DriftItem, NodeResult } from "./schema.js";

// Most of a fleet drifts alike: the same item on many nodes, differing only in its fingerprint (and
// when it was first seen). A report read to be kept whole holds each such item's fields once.

/** What an item says besides the node it is on and since when. */
type Shared = Omit<DriftItem, "fingerprint" | "firstSeen">;

/**
 * A function giving each node read its entry, every drift item built over the fields of the first
 * item read that said the same (host text, so only ever a Map key).
 */
export function sharingItems(): (node: NodeResult) => NodeResult {
  const items = new Map<string, Shared>();
  const shared = (item: DriftItem): DriftItem => {
    const { fingerprint, firstSeen, ...rest } = item;
    const key = JSON.stringify(rest);
    let fields = items.get(key);
    if (!fields) items.set(key, (fields = rest));
    // Not a spread: a spread of these gave every copy a hidden class of its own (300 bytes more).
    return Object.assign({}, fields, { fingerprint }, firstSeen !== undefined && { firstSeen });
  };
  return (node) => ({ ...node, drift: node.drift.map(shared) });
}
