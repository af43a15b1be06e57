// Two `propose` runs at once against the GitHub double, through the real CLI: they take turns (a
// lock branch), so neither meets the other's branches as 422s, and the second plans from what the
// first opened and kept: two runs open and remember what two runs one after the other would.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { execa } from "execa";
import type { Finding } from "../../src/domains/domain.js";
import { domainByName } from "../../src/domains/registry.js";
import { toDriftItems } from "../../src/drift/drift.js";
import { loadFleet } from "../../src/manifest/load.js";
import { parseHistory, type AuditHistory } from "../../src/report/history.js";
import { Report, type NodeResult } from "../../src/report/schema.js";
import { summarize } from "../../src/report/tally.js";
import { spawnCli } from "../support/cli.js";
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
  /** A report at `startedAt` of `names` (all nodes when absent), each drifted. */
  let writeReport: (file: string, startedAt: string, names?: string[]) => Promise<string>;
  // Processes of their own: runCli takes its runs one at a time, and these must run at once.
  const propose = (file: string, ...flags: string[]) =>
    spawnCli(
      [
        "propose",
        "--report",
        file,
        ...flags,
        "--repo",
        forge.server.repoUrl("acme", "fleet"),
        "--cache-dir",
        path.join(work, "cache"),
      ],
      { env: forge.double.cliEnv() },
    );

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
    writeReport = async (file, startedAt, names) => {
      const picked = nodes.filter((n) => !names || names.includes(n.name));
      const written = path.join(work, file);
      await writeFile(
        written,
        JSON.stringify(
          Report.parse({
            schemaVersion: 1,
            startedAt,
            finishedAt: startedAt,
            manifestRevision: null,
            nodes: picked,
            summary: summarize(picked),
          }),
        ),
      );
      return written;
    };
    report = await writeReport("report.json", new Date().toISOString());
  });
  after(async () => {
    await forge?.double.stop();
    await forge?.server.stop();
    if (work) await removeTree(work);
  });

  it("both succeed, each opening its own budget of pull requests, none twice", async () => {
    const runs = await Promise.all([
      propose(report, "--max-new-prs", "2"),
      propose(report, "--max-new-prs", "2"),
    ]);
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

  it("with different reports, both runs are in the audit history, even with no pull request to write", async () => {
    const first = new Date(Date.now() - 120_000).toISOString();
    const second = new Date(Date.now() - 60_000).toISOString();
    const reports = [
      await writeReport("first.json", first, ["web-01", "web-02"]),
      await writeReport("second.json", second, ["web-03", "web-04", "web-05"]),
    ];
    // No new pull request: neither run writes one, both keep their history.
    const runs = await Promise.all(reports.map((file) => propose(file, "--max-new-prs", "0")));
    for (const run of runs) assert.equal(run.exitCode, 0, run.stdout + run.stderr);
    const shown = await execa("git", ["show", "quartermaster-state:audit-history.json"], {
      cwd: forge.server.barePath("acme", "fleet"),
    });
    const history = parseHistory(shown.stdout) as AuditHistory;
    assert.deepEqual(
      Object.fromEntries([...history.nodes].map(([name, node]) => [name, node.lastAudited])),
      {
        "web-01": first,
        "web-02": first,
        "web-03": second,
        "web-04": second,
        "web-05": second,
      },
      shown.stdout,
    );
  });

  it(
    "a lock planted with a date in the future is taken over at once, not waited on",
    { timeout: 600_000 },
    async () => {
      const future = new Date(Date.now() + 365 * 24 * 3600_000).toISOString();
      await forge.double.pushCommit(
        "quartermaster-state--lock",
        { "planted.txt": "x\n" },
        { name: "someone", email: "someone@example.com", date: future },
      );
      const run = await propose(report, "--max-new-prs", "1");
      assert.equal(run.exitCode, 0, run.stdout + run.stderr);
      assert.doesNotMatch(run.stderr, /waiting for it/);
      const lock = await execa(
        "git",
        ["rev-parse", "--verify", "--quiet", "quartermaster-state--lock"],
        {
          cwd: forge.server.barePath("acme", "fleet"),
          reject: false,
        },
      );
      assert.notEqual(lock.exitCode, 0, "the lock is released");
    },
  );
});
