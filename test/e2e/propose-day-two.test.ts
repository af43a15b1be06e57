// Day two of propose, end to end: real sshd test hosts audited through the real CLI, `propose`
// against the real git server and the GitHub forge.double. A group value drifted on the audited members
// is accepted as their overrides while a member is unreachable, then in the group file alone; an expired waiver
// and a ticket past due bring their drift back, saying so (the ticket's on the dashboard, no fresh PR); nodes of different owners get separate
// PRs asking those owners to review; merging one PR rewrites no other PR's branch; a normal
// propose run writes nothing to stderr. Needs root.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import { driftSignature } from "../../src/manifest/signature.js";
import { Report, type DriftItem } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";

const TOKEN = "ghs_propose_day_two";
const M = "fleet-manifests";
const TICKET = "sysctl-net-ipv4-tcp-keepalive-time-ops-1234";
const WAIVER_LAPSED = "waiver expired 2020-01-31: legacy tuning";
const TICKET_LAPSED = `ticket ${TICKET} past due since 2026-01-15`;

const yaml = (...rows: string[]) => `${rows.join("\n")}\n`;
const FILES: Record<string, string> = {
  [`${M}/fleet.yaml`]: yaml(
    "policy:",
    "  sysctl: { on_drift: accept }",
    "ignore:",
    "  - node: db-01",
    "    domain: sysctl",
    "    key: net.ipv4.tcp_fin_timeout",
    "    reason: legacy tuning",
    "    expires: 2020-01-31",
  ),
  [`${M}/groups/web.yaml`]: yaml(
    // The CODEOWNERS form, @ included.
    'owners: ["@acme/web-team"]',
    "system:",
    "  sysctl_parameters:",
    "    net.ipv4.ip_forward: 0   # no routing on web nodes",
  ),
  [`${M}/groups/db.yaml`]: yaml(
    "owners: [bob]",
    "system:",
    "  sysctl_parameters:",
    "    net.ipv4.ip_forward: 0",
  ),
  [`${M}/nodes/web-01.yaml`]: "groups: [web]\n",
  [`${M}/nodes/web-02.yaml`]: "groups: [web]\n",
  [`${M}/nodes/web-03.yaml`]: "groups: [web]\n",
  [`${M}/nodes/db-01.yaml`]: yaml(
    "groups: [db]",
    "system:",
    "  sysctl_parameters:",
    "    net.ipv4.tcp_fin_timeout: 30",
    "    # keepalive probes: agreed with the DBA team,",
    "    # see the runbook before changing them",
    "    net.ipv4.tcp_keepalive_probes: 5",
  ),
  [`${M}/nodes/db-02.yaml`]: yaml(
    "groups: [db]",
    "system:",
    "  sysctl_parameters:",
    "    net.ipv4.tcp_keepalive_time: 600",
  ),
  [`${M}/remediations/db-02/${TICKET}.yaml`]: yaml(
    `id: ${TICKET}`,
    "status: open",
    "domain: sysctl",
    "key: net.ipv4.tcp_keepalive_time",
    'declared: "600"',
    'live: "900"',
    "severity: medium",
    "nodes: [db-02]",
    "remediation: Apply the manifest baseline.",
    "detected: 2026-01-01T00:00:00Z",
    `signature: ${driftSignature("sysctl", "net.ipv4.tcp_keepalive_time", "600", "900")}`,
    "owner: bob",
    "due: 2026-01-15",
    "link: https://tracker.example/browse/OPS-1234",
    "refs: { jira: OPS-1234 }",
  ),
};

let fleet: TestFleet;
/** web-03 refuses connections: its ssh port is one nothing listens on. */
let webDown: string;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-day-two-",
  files: { "README.md": "Fleet manifests.\n", ...FILES },
  setup: async ({ work, double }) => {
    const forwarding = { "net.ipv4.ip_forward": "1" };
    fleet = await startFleet([
      { name: "web-01", sysctls: forwarding },
      { name: "web-02", sysctls: forwarding },
      { name: "web-03", sysctls: forwarding },
      {
        name: "db-01",
        sysctls: {
          ...forwarding,
          "net.ipv4.tcp_fin_timeout": "45",
          "net.ipv4.tcp_keepalive_probes": "7",
        },
      },
      { name: "db-02", sysctls: { ...forwarding, "net.ipv4.tcp_keepalive_time": "900" } },
    ]);
    webDown = path.join(work, "ssh_config.web-03-down");
    // ssh takes the first value it reads for an option: web-03's port is 1, where nothing listens.
    await writeFile(webDown, `Host web-03\n  Port 1\n\n${await readFile(fleet.sshConfig, "utf8")}`);
    double.addCollaborator("bob", "write");
    double.addTeam("web-team");
  },
});

const env = () => forge.double.cliEnv();

async function audit(name: string, sshConfig: string): Promise<{ file: string; report: Report }> {
  const file = path.join(forge.work, `${name}.json`);
  const result = await runCli(
    ["audit", ...forge.repoArgs(), "--ssh-config", sshConfig, "--format", "json", "--out", file],
    { env: env() },
  );
  assert.ok(
    [0, 1, 4, 5].includes(result.exitCode),
    `audit exited ${result.exitCode}: ${result.stderr}`,
  );
  return { file, report: Report.parse(JSON.parse(await readFile(file, "utf8"))) };
}

async function propose(report: string, extra: string[] = []) {
  const result = await runCli(["propose", "--report", report, ...forge.repoArgs(), ...extra], {
    env: env(),
  });
  assert.equal(result.exitCode, 0, result.stderr);
  assert.equal(result.stderr, "", "a normal propose run writes nothing to stderr");
  return result;
}

const itemOf = (report: Report, node: string, key: string): DriftItem =>
  report.nodes.find((n) => n.name === node)!.drift.find((d) => d.key === key)!;
const openPulls = () => forge.double.pulls().filter((p) => p.state === "open");
const pullFor = (key: string) =>
  openPulls().find((p) => p.head.includes(`--${key.replaceAll(".", "-").replaceAll("_", "-")}--`));

after(async () => {
  await fleet?.stop();
});

describe("propose on day two", () => {
  let run1: { file: string; report: Report };

  it("validate takes the ticket with owner, due, link and refs; refuses a waiver for sysctlz", async () => {
    const dir = await forge.checkout();
    const ok = await runCli(["validate", "--manifests", path.join(dir, M)]);
    assert.equal(ok.exitCode, 0, ok.stderr);
    const fleetFile = path.join(dir, M, "fleet.yaml");
    await writeFile(
      fleetFile,
      (await readFile(fleetFile, "utf8")).replace("domain: sysctl\n", "domain: sysctlz\n"),
    );
    const bad = await runCli(["validate", "--manifests", path.join(dir, M)]);
    assert.equal(bad.exitCode, 2);
    assert.match(
      bad.stderr,
      /fleet\.yaml:5:5: waiver domain "sysctlz" matches no domain \(.*\) \(did you mean "sysctl"\?\)/,
    );
  });

  it("run 1, web-03 unreachable: the two audited web nodes, drifted alike, move the group's value, web-03 keeping its old one in its own file; what the expired waiver and the overdue ticket held back is drift, saying so", async () => {
    run1 = await audit("run1", webDown);
    assert.equal(run1.report.nodes.find((n) => n.name === "web-03")!.status, "unreachable");
    const waived = itemOf(run1.report, "db-01", "net.ipv4.tcp_fin_timeout");
    assert.equal(waived.acknowledged, undefined);
    assert.equal(waived.lapsed, WAIVER_LAPSED);
    const ticketed = itemOf(run1.report, "db-02", "net.ipv4.tcp_keepalive_time");
    assert.equal(ticketed.acknowledged, undefined);
    assert.equal(ticketed.lapsed, TICKET_LAPSED);
    const text = await runCli(["report", "--report", run1.file, "--format", "text"]);
    assert.match(text.stdout, new RegExp(`no longer acknowledged: ${WAIVER_LAPSED}`));
    assert.match(text.stdout, new RegExp(`no longer acknowledged: ${TICKET_LAPSED}`));

    const dry = await propose(run1.file, ["--dry-run"]);
    assert.match(
      dry.stdout,
      /^would open {3}accept .* on web-01, web-02: net\.ipv4\.ip_forward: 0 → 1 \(fleet-manifests\/groups\/web\.yaml, fleet-manifests\/nodes\/web-03\.yaml\)$/m,
    );

    await propose(run1.file);
    const pulls = openPulls();
    assert.equal(pulls.length, 4, pulls.map((p) => p.title).join("\n"));
    const touched = await Promise.all(
      pulls.map(
        async (p) =>
          (
            await execa("git", [
              "-C",
              await forge.checkout(),
              "diff",
              "--name-only",
              `origin/main...origin/${p.head}`,
            ])
          ).stdout,
      ),
    );
    // The audited takers decide (issue 28): the group file, and web-03, not audited, keeps 0.
    assert.ok(
      touched.includes(`${M}/groups/web.yaml\n${M}/nodes/web-03.yaml`),
      touched.join("\n---\n"),
    );
    const db = pullFor("net.ipv4.ip_forward")!;
    assert.match(db.title, /on db-01, db-02/);
    assert.deepEqual(db.requestedReviewers, ["bob"]);
    assert.ok(db.labels.includes("owner:bob"));
    const lapsed = pullFor("net.ipv4.tcp_fin_timeout")!;
    assert.ok(lapsed.body!.includes(`No longer acknowledged: \`${WAIVER_LAPSED}\``), lapsed.body!);
    // The overdue ticket's drift is raised on that ticket, on the dashboard, not as a fresh PR.
    assert.equal(pullFor("net.ipv4.tcp_keepalive_time"), undefined);
    const [dashboard] = forge.double.issues();
    assert.ok(
      dashboard!.body!.includes(
        `- \`${TICKET}\` (sysctl \`net.ipv4.tcp_keepalive_time\` on 1 node), due \`2026-01-15\`: \`${M}/remediations/db-02/${TICKET}.yaml\`; its drift is still present on \`db-02\``,
      ),
      dashboard!.body!,
    );
  });

  it("run 2: merging one PR leaves the other open PRs' head commits unchanged, one on the same file too", async () => {
    const merged = pullFor("net.ipv4.tcp_fin_timeout")!;
    await forge.double.mergePull(merged.number);
    const heads = new Map(openPulls().map((p) => [p.number, p.headSha]));
    assert.equal(heads.size, 3);
    const sameFile = pullFor("net.ipv4.tcp_keepalive_probes")!;
    assert.ok(heads.has(sameFile.number), "edits nodes/db-01.yaml as the merged PR did");
    const run2 = await audit("run2", webDown);
    await propose(run2.file);
    assert.deepEqual(new Map(openPulls().map((p) => [p.number, p.headSha])), heads);
  });

  it("run 3, every web node audited: the same accept PR now edits the group file only, asking the web team", async () => {
    const run3 = await audit("run3", fleet.sshConfig);
    await propose(run3.file);
    const web = openPulls().find(
      (p) => p.head.includes("--net-ipv4-ip-forward--") && p.title.includes("web-01"),
    )!;
    assert.ok(
      web,
      openPulls()
        .map((p) => p.title)
        .join("\n"),
    );
    const dir = await forge.checkout();
    const { stdout } = await execa("git", [
      "-C",
      dir,
      "diff",
      "--name-only",
      `origin/main...origin/${web.head}`,
    ]);
    assert.equal(stdout, `${M}/groups/web.yaml`);
    assert.deepEqual(web.requestedTeams, ["web-team"]);
    assert.ok(web.labels.includes("owner:acme/web-team"));
    // The db PR for the same drift is still its own, asking bob.
    assert.ok(
      openPulls().some(
        (p) => p.title.includes("db-01, db-02") && p.head.includes("--net-ipv4-ip-forward--"),
      ),
    );
  });
});
