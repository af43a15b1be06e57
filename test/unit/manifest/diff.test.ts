import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { diffFleets } from "../../../src/manifest/diff.js";
import { showPath } from "../../../src/spec-path.js";
import { renderManifestDiff } from "../../../src/manifest/diff-markdown.js";
import { loadFleet, type Fleet } from "../../../src/manifest/load.js";
import { removeTree, writeTree } from "../../support/tree.js";

const BASE = {
  "fleet.yaml": "policy:\n  sysctl: { severity: medium }\n",
  "groups/web.yaml":
    'system:\n  sysctl_parameters:\n    net.ipv4.ip_forward: 0\nfiles:\n  - { path: /etc/app.conf, contents: "a\\n", mode: "0644" }\n',
  "nodes/web-01.yaml": "groups: [web]\n",
  "nodes/web-02.yaml": "groups: [web]\n",
  "nodes/db-01.yaml": "networking:\n  listening_ports: [tcp/22]\n",
};

let dirs: string[] = [];
let base: Fleet;
let head: Fleet;
before(async () => {
  dirs = [
    await writeTree(BASE),
    await writeTree({
      ...BASE,
      "fleet.yaml": "policy:\n  sysctl: { severity: high }\n",
      "groups/web.yaml":
        'system:\n  sysctl_parameters:\n    net.ipv4.ip_forward: 1\nfiles:\n  - { path: /etc/app.conf, contents: "a\\n", mode: "0600" }\n',
      "nodes/db-01.yaml": "networking:\n  listening_ports: [tcp/22, tcp/5432]\n",
      "nodes/cache-01.yaml": "system:\n  kernel_version: 6.1.0\n",
    }),
  ];
  base = await loadFleet(dirs[0]!, { displayPrefix: "fleet-manifests" });
  head = await loadFleet(dirs[1]!, { displayPrefix: "fleet-manifests" });
});
after(() => Promise.all(dirs.map(removeTree)));

test("each affected node's keys before and after, located where the new value is declared", () => {
  const diff = diffFleets(base, head);
  assert.deepEqual(
    diff.nodes.map((n) => [n.node, n.kind]),
    [
      ["cache-01", "added"],
      ["db-01", "changed"],
      ["web-01", "changed"],
      ["web-02", "changed"],
    ],
  );
  const web = diff.nodes.find((n) => n.node === "web-01")!;
  assert.deepEqual(
    web.changes.map((c) => [showPath(c.path), c.before, c.after, c.declaredAt]),
    [
      ["files[/etc/app.conf].mode", "0644", "0600", "fleet-manifests/groups/web.yaml:5"],
      [
        "system.sysctl_parameters[net.ipv4.ip_forward]",
        "0",
        "1",
        "fleet-manifests/groups/web.yaml:3",
      ],
    ],
  );
  const db = diff.nodes.find((n) => n.node === "db-01")!;
  assert.deepEqual(
    db.changes.map((c) => [showPath(c.path), c.before, c.after, c.item]),
    [["networking.listening_ports", undefined, "tcp/5432", "added"]],
  );
  assert.deepEqual(
    diff.fleetSettings.map((c) => [showPath(c.path), c.before, c.after]),
    [["policy.sysctl.severity", "medium", "high"]],
  );
});

test("nodes changed alike share one section; an unchanged tree says so", () => {
  const text = renderManifestDiff(diffFleets(base, head), 1_000_000);
  assert.match(text, /### web-01, web-02 \(2 nodes, the same change\)/);
  assert.match(text, /### cache-01\n\n_new node: merging starts auditing it against this state_/);
  assert.match(
    text,
    /\| `system\.sysctl_parameters\[net\.ipv4\.ip_forward\]` \| `0` \| `1` \| `fleet-manifests\/groups\/web\.yaml:3` \|/,
  );
  assert.match(
    renderManifestDiff(diffFleets(base, base), 1_000_000),
    /No node's effective declared state changes\./,
  );
});

test("stays under the size cap and counts what it left out", () => {
  const text = renderManifestDiff(diffFleets(base, head), 700);
  assert.ok(Buffer.byteLength(text) <= 700, `${Buffer.byteLength(text)} bytes`);
  assert.match(text, /more sections? left out to stay under GitHub's size limit/);
});
