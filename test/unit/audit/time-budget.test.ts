// Parsing a node's output counts against that node's time budget, and only that node's.
import assert from "node:assert/strict";
import { after, it } from "node:test";
import { stringify } from "yaml";
import { auditFleet } from "../../../src/audit/fleet.js";
import { defaultAuditSettings, MAX_ITEMS_PER_DOMAIN } from "../../../src/audit/node.js";
import { loadFleet } from "../../../src/manifest/load.js";
import {
  framed,
  KERNEL_ONLY,
  NOT_IN_MAINTENANCE,
  scriptedTransport,
} from "../../support/probe-output.js";
import { removeTree, writeTree } from "../../support/tree.js";

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));

it("a node whose budget is spent when its parsing starts fails alone, with the reason; the other node is audited", async () => {
  const spec = stringify({ system: { kernel_version: "6.1.0-28-amd64" } });
  const dir = await writeTree({ "nodes/spent.yaml": spec, "nodes/honest.yaml": spec });
  dirs.push(dir);
  const fleet = await loadFleet(dir);
  const report = await auditFleet({
    nodes: fleet.nodes,
    // The spent node's transport reports a budget of 0 ms: whatever parsing takes is past it.
    transportFor: (node) => scriptedTransport(KERNEL_ONLY, node.name === "spent" ? 0 : 60_000),
    settings: defaultAuditSettings(),
    drift: { policy: {}, waivers: [], tickets: [], now: new Date() },
    concurrency: 2,
    manifestRevision: null,
  });
  const [honest, spent] = report.nodes;
  assert.deepEqual([honest!.name, honest!.status, honest!.error], ["honest", "clean", undefined]);
  assert.deepEqual([spent!.name, spent!.status], ["spent", "error"]);
  assert.equal(
    spent!.error,
    "parsing the probe output of spent went past the node's 0s time budget: node not audited",
  );
});

it("a host with more routes than a call takes arguments is audited: the first routes are drift items, the rest counted", async () => {
  const routes = 200_000;
  // 10.x.y.0/24 in /proc/net/route's little-endian hex, none declared.
  const hex = (i: number) =>
    [0, i & 255, (i >> 8) & 255, 10 + (i >> 16)]
      .map((b) => b.toString(16).padStart(2, "0").toUpperCase())
      .join("");
  const table = [
    "/proc/net/route:Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT",
  ];
  for (let i = 0; i < routes; i++)
    table.push(`/proc/net/route:eth0\t${hex(i)}\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0`);
  const body = `${table.join("\n")}\n`;
  const dir = await writeTree({ "nodes/router.yaml": stringify({ networking: { routes: [] } }) });
  dirs.push(dir);
  const fleet = await loadFleet(dir);
  const report = await auditFleet({
    nodes: fleet.nodes,
    // A budget no machine's load can spend: what this test checks is the count, not the time.
    transportFor: () =>
      scriptedTransport(
        (nonce) =>
          framed(nonce, [
            ["maintenance", NOT_IN_MAINTENANCE(nonce)],
            ["routes", body],
          ]),
        24 * 3_600_000,
      ),
    settings: defaultAuditSettings(),
    drift: { policy: {}, waivers: [], tickets: [], now: new Date() },
    concurrency: 1,
    manifestRevision: null,
  });
  const [router] = report.nodes;
  assert.deepEqual(
    [router!.status, router!.error, router!.drift.length],
    ["drift", undefined, MAX_ITEMS_PER_DOMAIN],
  );
  assert.deepEqual(router!.unknown, [
    {
      domain: "routes",
      reason: `${routes - MAX_ITEMS_PER_DOMAIN} more drift items than the ${MAX_ITEMS_PER_DOMAIN} a domain lists per node: not listed`,
    },
  ]);
});
