// A PR about more nodes than a marker can list names them by count and digest; the list is kept on
// the state branch by that digest, and every decision that reads a PR's nodes reads it from there.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { loadFleet, type Fleet } from "../../../src/manifest/load.js";
import { formatMarker, MARKER_NODES_CHARS, nodesDigest } from "../../../src/propose/marker.js";
import {
  listsAfter,
  parseNodeLists,
  serializeNodeLists,
  type NodeLists,
} from "../../../src/propose/node-lists.js";
import { plan } from "../../../src/propose/plan.js";
import type { Action } from "../../../src/propose/proposal.js";
import type { ExistingPull } from "../../../src/propose/pulls.js";
import { removeTree, writeTree } from "../../support/tree.js";
import { asPulls, input, opens, PREFIX, report, somaxconn, type Drift } from "./fixtures.js";

const COUNT = 300;
const names = Array.from({ length: COUNT }, (_, i) => `web-node-${String(i).padStart(3, "0")}`);
const TREE: Record<string, string> = {
  "fleet.yaml": "system:\n  sysctl_parameters:\n    net.ipv4.tcp_syncookies: 1\n",
  "groups/web.yaml": "system:\n  sysctl_parameters:\n    net.core.somaxconn: 4096\n",
  ...Object.fromEntries(names.map((name) => [`nodes/${name}.yaml`, "groups: [web]\n"])),
};
const texts = new Map(Object.entries(TREE).map(([name, text]) => [`${PREFIX}/${name}`, text]));

let dir: string;
let fleet: Fleet;
before(async () => {
  dir = await writeTree(TREE);
  fleet = await loadFleet(dir, { displayPrefix: PREFIX });
});
after(() => removeTree(dir));

const drifted = (nodes: readonly string[]) =>
  report(Object.fromEntries(nodes.map((n): [string, Drift[]] => [n, [somaxconn(8192)]])), {
    fleetOverride: fleet,
  });
const planned = (nodes: readonly string[], pulls: ExistingPull[] = []) =>
  plan(input(drifted(nodes), pulls, { fleet, files: texts }));
/** The PRs the actions opened, and the lists a run carrying them out keeps. */
const opened = (actions: Action[], lists: NodeLists = listsAfter([], actions)) =>
  asPulls(actions, 1, lists);

describe("node lists: PRs about more nodes than a marker lists", () => {
  it("a PR of 300 nodes names them by count and digest, and its body stays small", () => {
    assert.ok(JSON.stringify(names).length > MARKER_NODES_CHARS);
    const [pr] = opens(planned(names));
    assert.ok(pr && !("nodes" in pr.marker), "no node list in the marker");
    assert.equal(pr.marker.nodeCount, COUNT);
    assert.equal(pr.marker.nodeDigest, nodesDigest(names));
    assert.deepEqual(pr.nodes, names, "the plan still knows every node");
    assert.ok(formatMarker(pr.marker).length < 600, formatMarker(pr.marker));
    assert.deepEqual([...listsAfter([], [pr])], [[nodesDigest(names), names]]);
  });

  it("the same drift again changes nothing; gone from every node, the PR closes naming them", () => {
    const pulls = opened(planned(names));
    assert.deepEqual(planned(names, pulls), [], "no update, no second PR");
    const [close, ...more] = planned([], pulls);
    assert.equal(more.length, 0);
    assert.ok(close?.type === "close");
    assert.match(close.comment, /no longer present on `web-node-000`, .* and 290 more/);
  });

  it("a node less updates the PR in place, and the next run keeps the new list, not the old", () => {
    const pulls = opened(planned(names));
    const fewer = names.slice(1);
    const [update, ...more] = planned(fewer, pulls);
    assert.equal(more.length, 0);
    assert.ok(update?.type === "update" && update.number === 1);
    assert.deepEqual(update.nodes, fewer);
    const kept = listsAfter(pulls, [update]);
    assert.deepEqual(kept.get(nodesDigest(fewer)), fewer);
    assert.ok(kept.has(nodesDigest(names)), "the old list stays until GitHub has the new body");
    const next = asPulls([{ ...update, type: "open" }], 1, kept);
    assert.deepEqual(listsAfter(next, []).size, 1, "then only the list its marker names");
  });

  it("its list lost: the PR is not closed, and once proposed again it is written again to keep it", () => {
    const lost = opened(planned(names), new Map());
    assert.equal(lost[0]!.nodes, undefined);
    assert.deepEqual(planned([], lost), [], "nodes not known are not known to be clean");
    const [again, ...more] = planned(names, lost);
    assert.equal(more.length, 0);
    assert.ok(again?.type === "update" && !again.updateFiles, "the same body written again");
    assert.equal(again.body, lost[0]!.body);
    assert.deepEqual(listsAfter(lost, [again]).get(nodesDigest(names)), names);
  });

  it("a rejected accept PR whose list is lost still holds: its drift becomes a ticket", () => {
    const rejected = opened(planned(names), new Map()).map((p) => ({
      ...p,
      state: "closed" as const,
    }));
    const kinds = opens(planned(names, rejected)).map((a) => a.kind);
    assert.deepEqual(kinds, ["ticket"]);
  });

  it("a PR the version before wrote, all 300 nodes in its marker, still reads and is rewritten once", () => {
    const [pr] = opens(planned(names));
    const old = { ...pr!.marker, nodes: names } as Record<string, unknown>;
    delete old.nodeCount;
    delete old.nodeDigest;
    const body = pr!.body.replace(
      /<!-- quartermaster-pr .*$/s,
      `<!-- quartermaster-pr ${JSON.stringify(old)} -->`,
    );
    const [existing] = asPulls([{ ...pr!, body }], 4);
    assert.deepEqual(existing!.nodes, names, "its marker's own list");
    assert.deepEqual(planned([], [existing!])[0]?.type, "close");
    const [update] = planned(names, [existing!]);
    assert.ok(update?.type === "update" && !update.updateFiles && update.number === 4);
    assert.equal(update.body, pr!.body, "the body as this version writes it");
  });

  it("the state branch's file: only a list that hashes to its key is read", () => {
    const other = ["web-node-000", "mallory"];
    const text = serializeNodeLists(
      new Map([
        [nodesDigest(names), names],
        [nodesDigest(names.slice(1)), other],
      ]),
    );
    const { lists, problem } = parseNodeLists(text);
    assert.equal(problem, undefined);
    assert.deepEqual([...lists], [[nodesDigest(names), names]]);
    assert.equal(
      serializeNodeLists(lists),
      serializeNodeLists(parseNodeLists(serializeNodeLists(lists)).lists),
    );
    assert.match(parseNodeLists("[]").problem ?? "", /not a Quartermaster node list file/);
  });
});
