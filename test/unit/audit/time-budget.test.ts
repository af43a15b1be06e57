// Parsing a node's output counts against that node's time budget, and only that node's.
import assert from "node:assert/strict";
import { after, it } from "node:test";
import { stringify } from "yaml";
import { auditFleet } from "../../../src/audit/fleet.js";
import { defaultAuditSettings } from "../../../src/audit/node.js";
import { loadFleet } from "../../../src/manifest/load.js";
import { framed, marked, NOT_IN_MAINTENANCE, scriptedTransport } from "../../support/probe-output.js";
import { removeTree, writeTree } from "../../support/tree.js";

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));

const output = (nonce: string) =>
  framed(nonce, [
    ["maintenance", NOT_IN_MAINTENANCE(nonce)],
    ["kernel", marked(nonce, [["running", "6.1.0-28-amd64\n"], ["installed", ""]])],
  ]);

it("a node whose budget is spent when its parsing starts fails alone, with the reason; the other node is audited", async () => {
  const spec = stringify({ system: { kernel_version: "6.1.0-28-amd64" } });
  const dir = await writeTree({ "nodes/spent.yaml": spec, "nodes/honest.yaml": spec });
  dirs.push(dir);
  const fleet = await loadFleet(dir);
  const report = await auditFleet({
    nodes: fleet.nodes,
    // The spent node's transport reports a budget of 0 ms: whatever parsing takes is past it.
    transportFor: (node) => scriptedTransport(output, node.name === "spent" ? 0 : 60_000),
    settings: defaultAuditSettings(),
    drift: { policy: {}, waivers: [], tickets: [], now: new Date() },
    concurrency: 2,
    manifestRevision: null,
  });
  const [honest, spent] = report.nodes;
  assert.deepEqual([honest!.name, honest!.status, honest!.error], ["honest", "clean", undefined]);
  assert.deepEqual([spent!.name, spent!.status], ["spent", "error"]);
  assert.equal(spent!.error, "parsing the probe output of spent went past the node's 0s time budget: node not audited");
});
