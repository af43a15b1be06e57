// Two `propose` runs at once against the GitHub double, through the real CLI: they take turns (a
// lock branch), so neither meets the other's branches as 422s, and the second plans from what the
// first opened: two runs open what two runs one after the other would.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Finding } from "../../src/domains/domain.js";
import { domainByName } from "../../src/domains/registry.js";
import { toDriftItems } from "../../src/drift/drift.js";
import { loadFleet } from "../../src/manifest/load.js";
import { Report, summarize, type NodeResult } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { startForge, type TestForge } from "../support/forge.js";
import { removeTree, writeTree } from "../support/tree.js";

const TOKEN = "ghs_propose_concurrent";
const NODES = ["web-01", "web-02", "web-03", "web-04", "web-05"];
const FILES: Record<string, string> = {
  "fleet-manifests/fleet.yaml": "policy:\n  sysctl: { severity: medium, on_drift: accept }\n",
  // Each node its own value: each drift is a pull request of its own.
  ...Object.fromEntries(
    NODES.map((name, i) => [
      `fleet-manifests/nodes/${name}.yaml`,
      `system:\n  sysctl_parameters:\n    vm.swappiness: ${i + 1}\n`,
    ]),
  ),
};

describe("two propose runs at once", () => {
  let forge: TestForge;
  let work: string;
  let report: string;

  before(async () => {
    forge = await startForge({ token: TOKEN, owner: "acme", repo: "fleet", files: FILES });
    work = await writeTree(FILES);
    const fleet = await loadFleet(path.join(work, "fleet-manifests"), {
      displayPrefix: "fleet-manifests",
    });
    const ctx = { policy: fleet.settings.policy ?? {}, waivers: [], tickets: [], now: new Date() };
    const nodes: NodeResult[] = fleet.nodes.map((node, i) => {
      const finding: Finding = {
        key: "vm.swappiness",
        declared: String(i + 1),
        live: "60",
        path: ["system", "sysctl_parameters", "vm.swappiness"],
      };
      const drift = toDriftItems(node, domainByName("sysctl")!, [finding], ctx);
      return { name: node.name, host: node.host, status: "drift", durationMs: 1, drift };
    });
    const now = new Date().toISOString();
    report = path.join(work, "report.json");
    await writeFile(
      report,
      JSON.stringify(
        Report.parse({
          schemaVersion: 1,
          startedAt: now,
          finishedAt: now,
          manifestRevision: null,
          nodes,
          summary: summarize(nodes),
        }),
      ),
    );
  });
  after(async () => {
    await forge?.double.stop();
    await forge?.server.stop();
    if (work) await removeTree(work);
  });

  it("both succeed, each opening its own budget of pull requests, none twice", async () => {
    const cache = path.join(work, "cache");
    const propose = () =>
      runCli(
        [
          "propose",
          "--report",
          report,
          "--max-new-prs",
          "2",
          "--repo",
          forge.server.repoUrl("acme", "fleet"),
          "--cache-dir",
          cache,
        ],
        { env: forge.double.cliEnv() },
      );
    const runs = await Promise.all([propose(), propose()]);
    for (const run of runs) assert.equal(run.exitCode, 0, run.stdout + run.stderr);
    const opened = runs.flatMap((run) => run.stdout.match(/^opened #\d+ .+$/gm) ?? []);
    assert.equal(opened.length, 4, runs.map((r) => r.stdout).join("\n"));
    const heads = forge.double.pulls().map((p) => p.head);
    assert.equal(heads.length, 4, heads.join(", "));
    assert.equal(new Set(heads).size, 4, `a branch opened twice: ${heads.join(", ")}`);
    assert.ok(
      forge.double.pulls().every((p) => !p.head.includes("lock")),
      "the lock is no pull request",
    );
  });
});
