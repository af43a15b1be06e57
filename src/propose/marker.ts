import * as z from "zod";
import { DOMAIN_NAMES } from "../domains/registry.js";
import { branchIdentity, ticketId } from "./branch.js";
import type { DriftItem } from "../report/schema.js";
import { hash } from "./group.js";

// The hidden marker a pull request's body ends in: what the next run knows the PR by. Its node
// list is kept in full while it is short; a longer one is its count and digest, the list itself
// kept on the state branch (node-lists.ts), so the marker stays the same size on any fleet.

export const MARKER_VERSION = 1;
/** A node list longer than this (as JSON) is named by its count and digest in the marker. */
export const MARKER_NODES_CHARS = 4_000;

const MarkerBase = z.object({
  v: z.literal(MARKER_VERSION),
  kind: z.enum(["accept", "ticket", "resolve", "lift"]),
  signature: z.string(),
  /**
   * The drift's domain: a partial (`--category`) audit only decides about PRs of the domains it
   * audited.
   */
  domain: z.enum(DOMAIN_NAMES).optional(),
  /** Every domain of a PR of one cause (the first is `domain`): a partial audit must cover them all. */
  domains: z.array(z.enum(DOMAIN_NAMES)).optional(),
  /** When the drift was first proposed: kept across updates so the body stays stable. */
  detected: z.string(),
  /** Hash of what the PR changes (its own lines, not where they sit): equal means no new commit. */
  content: z.string(),
  ticket: z.string().optional(),
  /**
   * An accept PR's items, each its node, domain, key and live value hashed (carriedItem): what
   * closing it unmerged rejects, and nothing else. Absent when they are too many to list here; the
   * rejection then holds for the drift's signature on the PR's nodes.
   */
  items: z.array(z.string()).optional(),
});

export const PullMarker = z.union([
  // Every marker before digests, and any short list now: the nodes themselves.
  MarkerBase.extend({ nodes: z.array(z.string()) }),
  MarkerBase.extend({
    nodeCount: z.number().int().positive(),
    /** nodesDigest of the PR's nodes. */
    nodeDigest: z.string().regex(/^[0-9a-f]{32}$/),
  }),
]);
export type PullMarker = z.infer<typeof PullMarker>;

/** An item on a node as an accept PR's marker lists it: what closing the PR rejects. */
export const carriedItem = (node: string, item: DriftItem): string =>
  hash(JSON.stringify([node, item.domain, item.key, item.live]), 16);

/** The items an accept PR's marker lists, sorted; undefined when the list would be too long. */
export function markerItems(items: readonly string[]): string[] | undefined {
  const sorted = [...new Set(items)].sort();
  return JSON.stringify(sorted).length <= MARKER_NODES_CHARS ? sorted : undefined;
}

/** What names a set of nodes whatever their order: the digest of its sorted names. */
export const nodesDigest = (nodes: readonly string[]): string =>
  hash(JSON.stringify([...new Set(nodes)].sort()), 32);

/** The digest of the nodes a marker names, written in it or not. */
export const markerDigest = (marker: PullMarker): string =>
  "nodes" in marker ? nodesDigest(marker.nodes) : marker.nodeDigest;

/** A marker's node part: the list while it is short, else its count and digest. */
export function markerNodes(
  nodes: readonly string[],
): { nodes: string[] } | { nodeCount: number; nodeDigest: string } {
  return JSON.stringify(nodes).length <= MARKER_NODES_CHARS
    ? { nodes: [...nodes] }
    : { nodeCount: new Set(nodes).size, nodeDigest: nodesDigest(nodes) };
}

const MARKER_OPEN = "<!-- quartermaster-pr ";
const MARKER_TAIL = /^<!-- quartermaster-pr (\{.*\}) -->\s*$/s;

/**
 * The marker as the body's last line; `<` and `>` escaped, so nothing in it reads as markup or
 * ends the comment early (a value holding `-->` would show what follows it).
 */
export const formatMarker = (marker: PullMarker) =>
  `${MARKER_OPEN}${JSON.stringify(marker).replaceAll("<", "\\u003c").replaceAll(">", "\\u003e")} -->`;

/**
 * The bot's hidden marker: the last one, only at the very end of the body (host text sits above it,
 * in code, with `<!--` escaped), and only when it agrees with the branch name, which no host
 * chooses. Markers written before this rule sat at the end too, so they still read.
 */
export function parseMarker(
  body: string | null | undefined,
  branch: string,
): PullMarker | undefined {
  if (!body) return undefined;
  const match = MARKER_TAIL.exec(body.slice(body.lastIndexOf(MARKER_OPEN)));
  const from = branchIdentity(branch);
  if (!match || !from) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(match[1]!);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    return undefined;
  }
  const parsed = PullMarker.safeParse(json);
  if (!parsed.success) return undefined;
  const marker = parsed.data;
  if (marker.kind !== from.kind || (marker.domain !== undefined && marker.domain !== from.domain))
    return undefined;
  const agrees =
    marker.kind === "accept"
      ? marker.signature === from.identity || from.identity.startsWith(`${marker.signature}-`)
      : marker.kind === "ticket"
        ? marker.ticket === ticketId(from.domain, from.slug, from.identity) &&
          from.identity.startsWith(marker.signature)
        : marker.kind === "lift"
          ? marker.signature === from.identity
          : marker.ticket === from.identity;
  return agrees ? marker : undefined;
}
