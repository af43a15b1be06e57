import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { auditFleet } from "../../src/audit/fleet.js";
import { defaultAuditSettings } from "../../src/audit/node.js";
import { snapshotSpec } from "../../src/cli/commands/snapshot.js";
import { DOMAINS } from "../../src/domains/registry.js";
import { loadFleet } from "../../src/manifest/load.js";
import { localTransport } from "../../src/transport/local.js";
import { runCli } from "../support/cli.js";
import { nodeTree, unprivilegedTransport } from "../support/local-node.js";
import { removeTree, writeTree } from "../support/tree.js";

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));

describe("auditing this machine", () => {
  it("`snapshot --local` then `audit --local` on the same machine: exit 0, zero drift", async () => {
    const snapshot = await runCli(["snapshot", "--local"]);
    assert.equal(snapshot.exitCode, 0, snapshot.stderr);
    const dir = await writeTree({ "nodes/localhost.yaml": snapshot.stdout });
    dirs.push(dir);
    const audit = await runCli(["audit", "--local", "--manifests", dir, "--format", "json"]);
    const report = JSON.parse(audit.stdout);
    assert.deepEqual(report.nodes[0].drift, []);
    assert.equal(report.nodes[0].status, "clean");
    assert.equal(audit.exitCode, 0, audit.stderr);
  });

  it("as a non-root user with PATH=/usr/bin:/bin, the live values declared report no drift", async () => {
    // The truth as root; the audit as an unprivileged user who has no sysctl, ip or ss on PATH.
    const { spec } = await snapshotSpec(localTransport("localhost"), DOMAINS);
    const dir = await writeTree(nodeTree(spec));
    dirs.push(dir);
    const fleet = await loadFleet(dir);
    const report = await auditFleet({
      nodes: fleet.nodes,
      transportFor: () => unprivilegedTransport(),
      settings: defaultAuditSettings(),
      drift: { policy: {}, waivers: [], tickets: [], now: new Date() },
      concurrency: 1,
      manifestRevision: null,
    });
    const node = report.nodes[0]!;
    assert.equal(node.status, "clean", JSON.stringify(node, null, 2));
    assert.deepEqual(node.drift, []);
    assert.ok(Object.keys(spec).length > 0, "the snapshot declared something");
  });
});
