import * as z from "zod";
import type { PullRecord } from "../forge/records.js";
import { isObject, stateJson } from "../report/history.js";
import { markerDigest, nodesDigest, type PullMarker } from "./marker.js";
import type { Action } from "./proposal.js";

// The node lists of pull requests whose marker names its nodes by count and digest (marker.ts),
// kept on the state branch by that digest. The marker is what is trusted: a list counts only when
// it hashes to the digest its key says, so a list rewritten by anyone is just not found.

export const NODE_LISTS_FILE = "pull-nodes.json";
const VERSION = 1;
const Names = z.array(z.string());

/** Digest -> the sorted node names it is the digest of. */
export type NodeLists = ReadonlyMap<string, readonly string[]>;

/** A pull request read as the bot's (pulls.ts): its marker, and the nodes found for it. */
type MarkedPull = Pick<PullRecord, "state" | "merged"> & {
  marker?: PullMarker;
  nodes?: readonly string[];
};

/**
 * The lists in `text` that hash to their key, and why nothing was read when it is not such a file.
 */
export function parseNodeLists(text: string): { lists: Map<string, string[]>; problem?: string } {
  const lists = new Map<string, string[]>();
  const json = stateJson(text, VERSION, "node list file");
  if (typeof json === "string") return { lists, problem: json };
  if (isObject(json.lists))
    for (const [digest, names] of Object.entries(json.lists)) {
      const parsed = Names.safeParse(names);
      if (parsed.success && nodesDigest(parsed.data) === digest) lists.set(digest, parsed.data);
    }
  return { lists };
}

/** One list a line, digests sorted: the same lists are the same text. */
export function serializeNodeLists(lists: NodeLists): string {
  const lines = [...lists]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([digest, names]) => `${JSON.stringify(digest)}:${JSON.stringify(names)}`);
  return `{"version":${VERSION},\n"lists":{${lines.length ? `\n${lines.join(",\n")}\n` : ""}}}\n`;
}

/** Every node a marker names: its own list, or the kept list of its digest; undefined if not kept. */
export function markedNodes(marker: PullMarker, lists: NodeLists): readonly string[] | undefined {
  return "nodes" in marker ? marker.nodes : lists.get(marker.nodeDigest);
}

/**
 * Whether a later run reads the nodes of `pull`: to close it once its drift is gone on all of them
 * (open), or to find the drift a reviewer rejected (an accept PR closed unmerged).
 */
export const needsNodes = (pull: MarkedPull): boolean =>
  pull.state === "open" || (pull.marker?.kind === "accept" && !pull.merged);

/**
 * The lists the next run reads: those of the pull requests read this run that it may still need,
 * and of those this run opens or updates. Short lists are in their markers and are not kept.
 */
export function listsAfter(pulls: readonly MarkedPull[], actions: readonly Action[]): NodeLists {
  const lists = new Map<string, readonly string[]>();
  const keep = (marker: PullMarker, nodes: readonly string[] | undefined) => {
    if (!("nodes" in marker) && nodes) lists.set(markerDigest(marker), [...nodes].sort());
  };
  for (const pull of pulls) if (pull.marker && needsNodes(pull)) keep(pull.marker, pull.nodes);
  for (const action of actions)
    if (action.type === "open" || action.type === "update") keep(action.marker, action.nodes);
  return lists;
}
