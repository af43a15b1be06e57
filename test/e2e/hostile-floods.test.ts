// A host flooding what it is audited on, over real ssh: one user opening two thousand ports (no
// privilege needed) adds one item counting them past the first few, not two thousand; the node's
// report entry stays small and the report reads back. Needs root.
import assert from "node:assert/strict";
import path from "node:path";
import { describe, test } from "node:test";
import { MAX_ITEMS_PER_DOMAIN } from "../../src/audit/node.js";
import { MAX_UNAUTHORIZED_ITEMS, OTHER_LISTENERS } from "../../src/domains/ports/index.js";
import { auditReport, suiteFleet } from "../support/audited-fleet.js";
import { runCli } from "../support/cli.js";

const LISTENERS = 2000;
const ROUTES = 3000;
// Three thousand routes the manifests do not declare, one network each, written into the routes section.
const manyRoutes = [
  "awk '{ print }",
  `/ begin routes$/ { for (i = 0; i < ${ROUTES}; i++) printf "/proc/net/route:eth0\\t00%02X%02X0A\\t00000000\\t0001\\t0\\t0\\t0\\t00FFFFFF\\t0\\t0\\t0\\n", i % 256, int(i / 256) }'`,
].join("\n");

describe("a host flooding the audit", () => {
  const suite = suiteFleet(
    [
      {
        name: "flood-01",
        listeners: Array.from({ length: LISTENERS }, (_, i) => `tcp/${20000 + i}`),
      },
      { name: "routes-01", probeFilter: manyRoutes },
    ],
    {
      "fleet-manifests/nodes/flood-01.yaml": "networking:\n  listening_ports: [tcp/22]\n",
      "fleet-manifests/nodes/routes-01.yaml": "networking:\n  routes: []\n",
    },
  );

  test("with listeners or routes: one item, or the domain's unknown reason, counts those past the first ones", async () => {
    const audit = await auditReport(suite.manifests, suite.fleet.sshConfig, {
      out: path.join(suite.work, "report.json"),
    });
    assert.equal(audit.exitCode, 1, audit.stderr);
    const { report, out: file } = audit;
    const node = report.nodes.find((n) => n.name === "flood-01")!;
    const ports = node.drift.filter((d) => d.domain === "ports");
    assert.equal(ports.length, MAX_UNAUTHORIZED_ITEMS);
    const other = ports.at(-1)!;
    assert.equal(other.key, OTHER_LISTENERS);
    const shown = MAX_UNAUTHORIZED_ITEMS - 1;
    assert.match(
      other.detail!,
      new RegExp(`^${LISTENERS - shown} more listeners outside the allow-list: tcp/\\d+, `),
    );
    assert.ok(JSON.stringify(node).length < 100_000, `${JSON.stringify(node).length} bytes`);
    const rendered = await runCli(["report", "--report", file, "--format", "markdown"]);
    assert.equal(rendered.exitCode, 0, rendered.stderr);
    // Two drifted nodes, the listeners' items and the routes' listed ones.
    const items = MAX_UNAUTHORIZED_ITEMS + MAX_ITEMS_PER_DOMAIN;
    assert.match(
      rendered.stdout,
      new RegExp(`^\\| 2 \\| 0 \\| 2 \\| 0 \\| 0 \\| 0 \\| ${items} \\| 0 \\| 0 \\|$`, "m"),
    );

    // Routes past the cap a domain lists per node: counted, not listed.
    const routes = report.nodes.find((n) => n.name === "routes-01")!;
    assert.equal(routes.status, "drift", routes.error);
    const extra = routes.drift.filter((d) => d.domain === "routes").length;
    assert.equal(extra, MAX_ITEMS_PER_DOMAIN);
    const counted = routes.unknown?.find((u) => u.domain === "routes")?.reason ?? "";
    const total = Number(
      /^(\d+) more drift items than the \d+ a domain lists per node/.exec(counted)?.[1],
    );
    assert.ok(total + extra >= ROUTES, counted);
  });
});
