// `quartermaster propose` end to end: a manifest repository on a real git server, the GitHub double
// on top, audits of this machine through the real CLI (manifests pulled with isomorphic-git), and
// `propose` through the real CLI. Scenarios run in order and share the repository's history.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { execa } from "execa";
import type { Finding } from "../../src/domains/domain.js";
import { loadFleet } from "../../src/manifest/load.js";
import { Report } from "../../src/report/schema.js";
import { summarize } from "../../src/report/tally.js";
import { runCli } from "../support/cli.js";
import { OWNER, proposalWrites, REPO, suiteForge } from "../support/forge.js";
import { badGateway, secondaryRateLimit } from "../support/github-double/index.js";
import { testOctokit, type TestOctokit } from "../support/octokit.js";
import { sysctlResults } from "../support/reports.js";

const TOKEN = "ghs_propose_e2e";
const KERNEL = "0.0.0-declared";
const swappiness = Number((await readFile("/proc/sys/vm/swappiness", "utf8")).trim());

let octokit: TestOctokit;
let cache: string;

// This machine, declared with two deliberate drifts: a sysctl (accepted by policy) and the kernel
// (a ticket).
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-propose-e2e-",
  files: {
    "README.md": "Fleet manifests.\n",
    "fleet-manifests/fleet.yaml":
      "# Fleet-wide defaults.\npolicy:\n  sysctl: { severity: medium, on_drift: accept }\n",
    "fleet-manifests/nodes/localhost.yaml": [
      "# This machine.",
      "system:",
      `  kernel_version: ${KERNEL}   # the release we run`,
      "  sysctl_parameters:",
      `    vm.swappiness: ${swappiness + 1}   # tuned by hand`,
      "",
    ].join("\n"),
    "fleet-manifests/groups/web.yaml":
      "# Front-end web servers.\nsystem:\n  sysctl_parameters:\n    net.core.somaxconn: 4096   # tuned for nginx\n",
    "fleet-manifests/nodes/web-01.yaml": "groups: [web]\n",
    "fleet-manifests/nodes/web-02.yaml": "groups: [web]\n",
    "fleet-manifests/nodes/web-03.yaml": "groups: [web]\n",
    "fleet-manifests/nodes/db-01.yaml": "system:\n  sysctl_parameters:\n    vm.swappiness: 1\n",
  },
  setup: ({ work, double }) => {
    cache = path.join(work, "cache");
    ({ octokit } = testOctokit({ baseUrl: double.apiUrl, auth: TOKEN }));
  },
});

const env = () => forge.double.cliEnv();
const repoArgs = () => ["--repo", forge.server.repoUrl(OWNER, REPO), "--cache-dir", cache];

/** `audit --local` of this machine against the repository's main branch, as a JSON report file. */
async function audit(name: string): Promise<{ file: string; report: Report }> {
  const file = path.join(forge.work, `${name}.json`);
  const result = await runCli(
    ["audit", "--local", "--nodes", "localhost", ...repoArgs(), "--format", "json", "--out", file],
    { env: env() },
  );
  assert.ok(result.exitCode === 0 || result.exitCode === 1, result.stderr);
  return { file, report: Report.parse(JSON.parse(await readFile(file, "utf8"))) };
}

async function propose(report: string, extra: string[] = repoArgs()) {
  return runCli(["propose", "--report", report, ...extra], { env: env() });
}

type Drift = Record<string, Finding[]>;
const somaxconn = (live: number): Finding => ({
  key: "net.core.somaxconn",
  declared: "4096",
  live: String(live),
  path: ["system", "sysctl_parameters", "net.core.somaxconn"],
});
const dbSwappiness = (live: number): Finding => ({
  key: "vm.swappiness",
  declared: "1",
  live: String(live),
  path: ["system", "sysctl_parameters", "vm.swappiness"],
});

/**
 * A hand-made report for the web and db nodes (many nodes, one machine), drift items made by the
 * audit's code.
 */
async function fleetReport(name: string, drift: Drift): Promise<string> {
  const dir = await forge.checkout();
  const fleet = await loadFleet(path.join(dir, "fleet-manifests"), {
    displayPrefix: "fleet-manifests",
  });
  const ctx = {
    policy: fleet.settings.policy ?? {},
    waivers: [],
    tickets: fleet.tickets.map((t) => t.ticket),
    now: new Date(),
  };
  const nodes = sysctlResults(
    fleet.nodes.filter((n) => n.name !== "localhost"),
    drift,
    ctx,
  );
  const report = Report.parse({
    schemaVersion: 1,
    startedAt: new Date().toISOString(),
    finishedAt: new Date().toISOString(),
    manifestRevision: null,
    nodes,
    summary: summarize(nodes),
  });
  const file = path.join(forge.work, `${name}.json`);
  await writeFile(file, JSON.stringify(report));
  return file;
}

const openPulls = () => forge.double.pulls().filter((p) => p.state === "open");
const pullOn = (pattern: RegExp) => forge.double.pulls().filter((p) => pattern.test(p.head));
const diffOf = async (branch: string) =>
  (await execa("git", ["diff", "main..." + branch], { cwd: forge.server.barePath(OWNER, REPO) }))
    .stdout;
const commentsOn = async (number: number) =>
  (
    await octokit.rest.issues.listComments({ owner: OWNER, repo: REPO, issue_number: number })
  ).data.map((c) => c.body ?? "");

async function noWritesFrom(run: () => Promise<unknown>): Promise<void> {
  const before = forge.double.writes().length;
  await run();
  assert.deepEqual(proposalWrites(forge.double.writes().slice(before)), [], "no write request");
}

describe("quartermaster propose", () => {
  let firstReport: string;

  it("first run opens the expected PRs from a real audit: an accept PR editing one line, a ticket PR", async () => {
    const { file, report } = await audit("first");
    firstReport = file;
    const drift = report.nodes[0]!.drift.map((d) => `${d.domain}:${d.key}`).sort();
    assert.deepEqual(drift, ["kernel:kernel_version", "sysctl:vm.swappiness"]);
    const result = await propose(file);
    assert.equal(result.exitCode, 0, result.stderr + result.stdout);
    assert.equal(openPulls().length, 2);
    const [accept] = pullOn(/^quartermaster--accept--sysctl--vm-swappiness--/);
    assert.ok(accept, "an accept PR");
    assert.ok(accept.labels.includes("quartermaster") && accept.labels.includes("drift:sysctl"));
    assert.match(accept.body!, /-want \+got|declared/);
    const diff = await diffOf(accept.head);
    assert.deepEqual(
      diff.split("\n").filter((l) => /^[-+][^-+]/.test(l)),
      [
        `-    vm.swappiness: ${swappiness + 1}   # tuned by hand`,
        `+    vm.swappiness: ${swappiness}   # tuned by hand`,
      ],
    );
    const [ticket] = pullOn(/^quartermaster--ticket--kernel--/);
    assert.ok(ticket, "a ticket PR");
    assert.match(
      await diffOf(ticket.head),
      // The signature, then the cause's hash: the running kernel is the one the host booted.
      /\+\+\+ b\/fleet-manifests\/remediations\/localhost\/kernel-kernel-version-[0-9a-f]{16}-c[0-9a-f]{8}\.yaml/,
    );
    assert.deepEqual(forge.double.violations, []);
  });

  it("an identical second run sends zero write requests; ten repeated runs leave no duplicate PR", async () => {
    await noWritesFrom(() => propose(firstReport));
    const count = forge.double.pulls().length;
    for (let run = 0; run < 10; run++) await noWritesFrom(() => propose(firstReport));
    assert.equal(forge.double.pulls().length, count);
  });

  it("merging the accept PR makes the next audit of that node clean of that drift", async () => {
    const [accept] = pullOn(/^quartermaster--accept--sysctl--/);
    await forge.double.mergePull(accept!.number);
    const { file, report } = await audit("after-accept");
    assert.deepEqual(
      report.nodes[0]!.drift.map((d) => d.domain),
      ["kernel"],
    );
    await noWritesFrom(() => propose(file));
  });

  it("a merged ticket acknowledges its drift; when the drift is gone, resolving the ticket is proposed", async () => {
    const [ticket] = pullOn(/^quartermaster--ticket--kernel--/);
    await forge.double.mergePull(ticket!.number);
    const { file, report } = await audit("after-ticket");
    const [kernel] = report.nodes[0]!.drift;
    assert.equal(kernel!.acknowledged, true);
    assert.match(kernel!.acknowledgedBy!, /^ticket kernel-kernel-version-/);
    assert.equal(report.nodes[0]!.status, "clean");
    await noWritesFrom(() => propose(file));

    // The operator fixes the declaration by hand: the drift is gone, the ticket can be resolved.
    const release = (await readFile("/proc/sys/kernel/osrelease", "utf8")).trim();
    const text =
      (
        await execa("git", ["show", "main:fleet-manifests/nodes/localhost.yaml"], {
          cwd: forge.server.barePath(OWNER, REPO),
        })
      ).stdout + "\n";
    await forge.double.pushCommit("main", {
      "fleet-manifests/nodes/localhost.yaml": text.replace(KERNEL, release),
    });
    const fixed = await audit("after-fix");
    assert.deepEqual(fixed.report.nodes[0]!.drift, []);
    assert.equal((await propose(fixed.file)).exitCode, 0);
    const [resolve] = pullOn(/^quartermaster--resolve--kernel--/);
    assert.ok(resolve && resolve.state === "open", "a resolve PR");
    assert.match(await diffOf(resolve.head), /\+status: resolved/);
  });

  describe("many nodes (hand-made reports)", () => {
    it("identical drift on several nodes is one PR, edited in the group file; changed drift updates it", async () => {
      const one = await fleetReport("web-1", {
        "web-01": [somaxconn(8192)],
        "web-02": [somaxconn(8192)],
      });
      assert.equal((await propose(one)).exitCode, 0);
      const [pr] = pullOn(/^quartermaster--accept--sysctl--net-core-somaxconn--/);
      assert.match(await diffOf(pr!.head), /nodes\/web-01\.yaml[\s\S]*nodes\/web-02\.yaml/);
      const head = pr!.headSha;
      const all = await fleetReport("web-all", {
        "web-01": [somaxconn(8192)],
        "web-02": [somaxconn(8192)],
        "web-03": [somaxconn(8192)],
      });
      assert.equal((await propose(all)).exitCode, 0);
      const [updated] = pullOn(/^quartermaster--accept--sysctl--net-core-somaxconn--/);
      assert.equal(updated!.number, pr!.number, "the same PR");
      assert.notEqual(updated!.headSha, head);
      const diff = await diffOf(updated!.head);
      assert.match(diff, /groups\/web\.yaml/);
      assert.doesNotMatch(diff, /nodes\/web-0/);
      assert.match(updated!.body!, /web-03/);
      await noWritesFrom(() => propose(all));
    });

    it("drift that disappeared closes its PR with a comment", async () => {
      const [pr] = pullOn(/^quartermaster--accept--sysctl--net-core-somaxconn--/);
      const clean = await fleetReport("web-clean", {});
      assert.equal((await propose(clean)).exitCode, 0);
      assert.equal(forge.double.pulls().find((p) => p.number === pr!.number)!.state, "closed");
      assert.match(
        (await commentsOn(pr!.number)).join("\n"),
        /no longer present on `web-01`, `web-02`, `web-03`/,
      );
      await noWritesFrom(() => propose(clean));
    });

    it("closing an accept PR produces a ticket PR on the next run, and the accept PR is never reopened", async () => {
      const report = await fleetReport("db-drift", { "db-01": [dbSwappiness(30)] });
      assert.equal((await propose(report)).exitCode, 0);
      const [accept] = pullOn(/^quartermaster--accept--sysctl--vm-swappiness--/).filter(
        (p) => p.state === "open",
      );
      await forge.double.closePull(accept!.number);
      assert.equal((await propose(report)).exitCode, 0);
      const [ticket] = pullOn(/^quartermaster--ticket--sysctl--vm-swappiness--/);
      assert.ok(ticket && ticket.state === "open");
      assert.match(
        ticket.body!,
        new RegExp(`accept PR #${accept!.number} was closed without merging`),
      );
      for (let run = 0; run < 2; run++) await noWritesFrom(() => propose(report));
      assert.equal(forge.double.pulls().find((p) => p.number === accept!.number)!.state, "closed");
    });

    it("a branch with a human's commit on it is left alone, with one comment saying why", async () => {
      const report = await fleetReport("web-somax", { "web-01": [somaxconn(1024)] });
      assert.equal((await propose(report)).exitCode, 0);
      const [pr] = pullOn(/^quartermaster--accept--sysctl--net-core-somaxconn--/).filter(
        (p) => p.state === "open",
      );
      await forge.double.pushCommit(pr!.head, {
        "fleet-manifests/nodes/web-01.yaml": "groups: [web]\n# reviewed by ops\n",
      });
      const changed = await fleetReport("web-somax-2", {
        "web-01": [somaxconn(1024)],
        "web-02": [somaxconn(1024)],
      });
      for (let run = 0; run < 2; run++) assert.equal((await propose(changed)).exitCode, 0);
      const comments = await commentsOn(pr!.number);
      assert.equal(comments.filter((c) => c.includes("leaves this pull request alone")).length, 1);
      assert.match(comments.join("\n"), /someone other than Quartermaster pushed commits/);
      assert.equal(forge.double.pulls().find((p) => p.number === pr!.number)!.state, "open");
      await noWritesFrom(() => propose(changed));
      // Back to the drift the PR was opened for, then gone: still not closed over the human's work.
      await propose(await fleetReport("web-clean-2", {}));
      assert.equal(forge.double.pulls().find((p) => p.number === pr!.number)!.state, "open");
      await forge.double.closePull(pr!.number);
    });

    it("502s and a secondary rate limit are retried", async () => {
      forge.double.inject(badGateway({ method: "POST", path: /\/git\/trees$/, times: 2 }));
      forge.double.inject(secondaryRateLimit({ method: "POST", path: /\/pulls$/ }));
      const report = await fleetReport("web-retry", { "web-02": [somaxconn(2048)] });
      const result = await propose(report);
      assert.equal(result.exitCode, 0, result.stderr);
      const statuses = proposalWrites(forge.double.requests)
        .filter((r) => r.method === "POST" && /\/(git\/trees|pulls)$/.test(r.path))
        .slice(-5)
        .map((r) => r.status);
      assert.deepEqual(statuses, [502, 502, 201, 403, 201]);
      assert.equal(
        pullOn(/^quartermaster--accept--sysctl--net-core-somaxconn--/).filter(
          (p) => p.state === "open",
        ).length,
        1,
      );
    });

    it("a base branch that moved between checkout and push: the PR holds only the bot's change, and merging keeps the other commit", async () => {
      const old = await forge.checkout();
      await forge.double.pushCommit("main", { "README.md": "Fleet manifests, reviewed weekly.\n" });
      const report = await fleetReport("db-moved", { "db-01": [dbSwappiness(45)] });
      const result = await propose(report, ["--manifests", path.join(old, "fleet-manifests")]);
      assert.equal(result.exitCode, 0, result.stderr);
      const [pr] = pullOn(/^quartermaster--accept--sysctl--vm-swappiness--/).filter(
        (p) => p.state === "open",
      );
      const diff = await diffOf(pr!.head);
      assert.deepEqual(diff.match(/^\+\+\+ .*$/gm), ["+++ b/fleet-manifests/nodes/db-01.yaml"]);
      await forge.double.mergePull(pr!.number);
      const bare = forge.server.barePath(OWNER, REPO);
      assert.equal(
        (await execa("git", ["show", "main:README.md"], { cwd: bare })).stdout,
        "Fleet manifests, reviewed weekly.",
      );
      assert.match(
        (await execa("git", ["show", "main:fleet-manifests/nodes/db-01.yaml"], { cwd: bare }))
          .stdout,
        /vm.swappiness: 45/,
      );
    });

    it("a failed run loses nothing: non-zero exit, report untouched; the next run converges with no duplicates", async () => {
      const report = await fleetReport("web-fail", {
        "web-01": [somaxconn(512)],
        "web-02": [somaxconn(512)],
        "web-03": [somaxconn(256)],
      });
      const digest = async () =>
        createHash("sha256")
          .update(await readFile(report))
          .digest("hex");
      const before = await digest();
      forge.double.inject({
        method: "POST",
        path: /\/pulls$/,
        status: 403,
        times: 2,
        body: {
          message: "Resource not accessible by integration",
          documentation_url: "https://docs.github.com/rest",
          status: "403",
        },
      });
      const failed = await propose(report);
      assert.notEqual(failed.exitCode, 0);
      assert.match(failed.stderr, /Resource not accessible by integration/);
      assert.equal(await digest(), before);
      const count = forge.double.pulls().length;
      assert.equal((await propose(report)).exitCode, 0);
      const opened = forge.double.pulls().slice(count);
      assert.equal(opened.length, 2);
      assert.equal(new Set(opened.map((p) => p.head)).size, 2);
      await noWritesFrom(() => propose(report));
      assert.deepEqual(forge.double.violations, []);
    });
  });

  it("--dry-run prints the plan and writes nothing", async () => {
    const report = await fleetReport("dry", { "web-03": [somaxconn(64)] });
    let result: Awaited<ReturnType<typeof propose>> | undefined;
    await noWritesFrom(
      async () =>
        (result = await runCli(["propose", "--report", report, "--dry-run", ...repoArgs()], {
          env: env(),
        })),
    );
    assert.equal(result!.exitCode, 0, result!.stderr);
    assert.match(result!.stdout, /^would /m);
  });
});
