// drift-audit.yml and review-command.yml run step by step as GitHub would, against real sshd test
// hosts, a real git server and the GitHub double: called from a fleet repository of their own (the
// one docs/actions.md shows), on a self-hosted runner's labels, with the packed release installed by action.yml.
// Needs root (test hosts).
import assert from "node:assert/strict";
import { readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { runCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { documentedSshConfig, FLEET_RUNNER_LABELS } from "./fleet-repo.js";
import {
  failures,
  heartbeatMonitor,
  OWNER,
  startFleetForge,
  type FleetForge,
  type FleetSite,
} from "./fleet-site.js";
import { ACTIONS, type RunResult } from "./runner.js";
import type { Value } from "./expressions.js";

// The fleet repository's own workflows, which call this repository's.
const DRIFT_AUDIT = "drift-audit.yml";
const REVIEW_COMMAND = "review-command.yml";
// Declared on db-01, each different from the host's value: more findings than fit in 10
// annotations.
const DB_SYSCTLS = [
  "tcp_fin_timeout",
  "tcp_keepalive_time",
  "tcp_keepalive_intvl",
  "tcp_keepalive_probes",
  "tcp_syn_retries",
  "tcp_synack_retries",
  "tcp_max_syn_backlog",
  "tcp_rfc1337",
  "tcp_sack",
];

// Kept secret by the fleet: a bastion's address.
const SECRET_SSH_CONFIG = "Host bastion-private\n  HostName bastion.private.example\n";

describe("drift-audit and review-command workflows", () => {
  let fleet: TestFleet;
  let forge: FleetForge;
  let monitor: Awaited<ReturnType<typeof heartbeatMonitor>>;
  let sharded: FleetSite;
  let whole: FleetSite;
  let dryRun: RunResult;
  let shardedRun: RunResult;
  let wholeRun: RunResult;

  before(async () => {
    fleet = await startFleet(
      [
        { name: "web-01", sysctls: { "net.ipv4.ip_forward": "1" } },
        { name: "web-02", sysctls: { "net.ipv4.ip_forward": "1" } },
        { name: "web-03", sysctls: { "net.ipv4.ip_forward": "1" }, listeners: ["tcp/8080"] },
        { name: "db-01" },
        { name: "cache-01", state: "stopped" },
      ],
      { prefix: "qmw" },
    );
    const address = (name: string) => fleet.hosts.find((h) => h.name === name)!.address;
    const live = async (key: string) =>
      (await fleet.exec("db-01", `cat /proc/sys/net/ipv4/${key}`)).trim();
    const dbLines = await Promise.all(
      DB_SYSCTLS.map(async (key) => `    net.ipv4.${key}: ${Number(await live(key)) + 1}`),
    );
    const manifests = {
      "fleet.yaml":
        "ssh: { user: qm-audit, connect_timeout: 5, timeout: 60 }\npolicy:\n  ports: { severity: high, on_drift: ticket }\n",
      "groups/web.yaml":
        "system:\n  sysctl_parameters:\n    net.ipv4.ip_forward: 0\nnetworking:\n  listening_ports: [tcp/22]\n",
      ...Object.fromEntries(
        ["web-01", "web-02", "web-03"].map((name) => [
          `nodes/${name}.yaml`,
          `host: ${address(name)}\ngroups: [web]\n`,
        ]),
      ),
      "nodes/db-01.yaml": `host: ${address("db-01")}\nsystem:\n  sysctl_parameters:\n${dbLines.join("\n")}\n`,
      "nodes/cache-01.yaml": `host: ${address("cache-01")}\n`,
      // Pinned host keys, kept in the repository: no trust on first use.
      known_hosts: await readFile(fleet.knownHosts, "utf8"),
    };
    forge = await startFleetForge({
      prefix: "qm-workflow-e2e-",
      manifests,
      sshKey: await readFile(fleet.identityFile, "utf8"),
      sshConfig: SECRET_SSH_CONFIG,
    });
    sharded = await forge.site("fleet-sharded");
    whole = await forge.site("fleet-whole");
    // Both sites keep a monitor's ping address, as docs/operations.md says.
    monitor = await heartbeatMonitor();
    sharded.heartbeatUrl = monitor.url("sharded");
    whole.heartbeatUrl = `${monitor.url("whole")}/`;
  });

  after(async () => {
    await monitor?.stop();
    await forge?.stop();
    await fleet?.stop();
  });

  /** A run's page, as the heartbeat names it (every emulated run is run 1). */
  const runPage = (site: FleetSite) => `${forge.server.url}/${OWNER}/${site.repo}/actions/runs/1`;

  const dispatch = (inputs: Record<string, Value>) => ({
    name: "workflow_dispatch",
    payload: { inputs },
  });

  /**
   * Each pull request by branch: title, state and files (ticket dates left out: they are when the
   * run happened).
   */
  async function pullRequests(where: FleetSite) {
    const { git } = where;
    const main = await where.mainSha();
    const pulls = where.double.pulls().filter((p) => p.state === "open");
    return Object.fromEntries(
      await Promise.all(
        pulls.map(async (p) => {
          const names = (await git("diff", "--name-only", main, p.headSha))
            .split("\n")
            .filter(Boolean)
            .sort();
          const files = Object.fromEntries(
            await Promise.all(
              names.map(async (f) => [
                f,
                (await git("show", `${p.headSha}:${f}`)).replace(
                  /^detected: .*$/m,
                  "detected: (run time)",
                ),
              ]),
            ),
          );
          return [p.head, { title: p.title, labels: [...p.labels].sort(), files }];
        }),
      ),
    );
  }

  test("a dry run audits, reports and plans, and writes nothing", async () => {
    dryRun = await sharded.run(DRIFT_AUDIT, dispatch({ "dry-run": true, shards: 1 }));
    assert.deepEqual(
      dryRun.job("propose").map((j) => j.result),
      ["skipped"],
    );
    assert.equal(failures(dryRun), "");
    assert.deepEqual(sharded.double.writes(), []);
    assert.deepEqual(monitor.pings(), [], "a dry run pings nothing");
    const plan = dryRun.job("report")[0]!.steps.find((s) => s.name.includes("dry run"))!;
    assert.match(
      plan.stdout,
      /^would open +accept +quartermaster--accept--sysctl--net-ipv4-ip-forward--/m,
    );
    assert.deepEqual(dryRun.limitViolations, []);
  });

  test("each job runs on the fleet's runner, installs the release once and then from the cache, and uses the extra ssh_config", async () => {
    const ran = dryRun.jobs.filter((j) => j.result !== "skipped");
    assert.deepEqual(
      ran.map((j) => [j.id, j.runsOn]),
      ["plan", "audit", "report"].map((id) => [id, FLEET_RUNNER_LABELS]),
    );
    const install = ran.map((j) => j.steps.find((s) => s.name === "Install Quartermaster")!);
    assert.deepEqual(
      install.map((s) => s.steps!.map((inner) => [inner.name.split(" / ")[1], inner.outcome])),
      [true, false, false].map((first) => [
        [`actions/setup-node@${ACTIONS["actions/setup-node"]!.sha}`, "success"],
        ["Which release", "success"],
        [`actions/cache@${ACTIONS["actions/cache"]!.sha}`, "success"],
        ["Download the release", first ? "success" : "skipped"],
        // verify-attestation is off by default: no gh or API needed.
        ["Verify the build provenance", "skipped"],
        ["Check the SHA-256 and install", "success"],
      ]),
    );
    const jobs = path.join(forge.work, "run-1", "jobs");
    const auditJob = (await readdir(jobs)).find((d) => d.startsWith("audit-"))!;
    const config = await readFile(path.join(jobs, auditJob, "temp", "ssh", "config"), "utf8");
    // The documented fleet-manifests/ssh_config, then the secret's, then the workflow's defaults.
    assert.ok(config.startsWith(await documentedSshConfig()), config);
    const [secret, defaults] = [config.indexOf(SECRET_SSH_CONFIG), config.indexOf("\nHost *\n")];
    assert.ok(secret > 0 && defaults > secret, config);
  });

  test("a run in three shards opens the same pull requests as a scheduled run in one", async () => {
    shardedRun = await sharded.run(DRIFT_AUDIT, dispatch({ "dry-run": false, shards: 3 }));
    assert.equal(failures(shardedRun), "");
    assert.equal(shardedRun.job("audit").length, 3);
    wholeRun = await whole.run(DRIFT_AUDIT, {
      name: "schedule",
      payload: { schedule: "23 */6 * * *" },
    });
    assert.equal(failures(wholeRun), "");
    assert.equal(wholeRun.job("audit").length, 1);
    // One ping per run, at its end.
    assert.deepEqual(monitor.pings(), [
      `POST /ping/sharded: quartermaster run ok: ${runPage(sharded)}`,
      `POST /ping/whole/: quartermaster run ok: ${runPage(whole)}`,
    ]);

    const opened = await pullRequests(sharded);
    assert.deepEqual(opened, await pullRequests(whole));
    const branches = Object.keys(opened);
    // The web group's sysctl on three nodes is one accept PR; web-03's listener a ticket; db-01's
    // sysctls sit on adjacent lines of its file, so they are one accept PR (two would conflict).
    assert.equal(branches.length, 3, branches.join("\n"));
    const db = branches.find(
      (b) => b.startsWith("quartermaster--accept--sysctl--") && !b.includes("ip-forward"),
    )!;
    assert.deepEqual(Object.keys(opened[db]!.files), ["fleet-manifests/nodes/db-01.yaml"]);
    assert.match(
      opened[db]!.files["fleet-manifests/nodes/db-01.yaml"],
      /net\.ipv4\.tcp_synack_retries: /,
    );
    const forward = branches.find((b) =>
      b.startsWith("quartermaster--accept--sysctl--net-ipv4-ip-forward--"),
    )!;
    assert.deepEqual(Object.keys(opened[forward]!.files), ["fleet-manifests/groups/web.yaml"]);
    assert.match(
      opened[forward]!.files["fleet-manifests/groups/web.yaml"],
      /net\.ipv4\.ip_forward: 1/,
    );
    assert.ok(
      branches.some((b) => b.startsWith("quartermaster--ticket--ports--tcp-8080--")),
      branches.join("\n"),
    );
    assert.deepEqual(sharded.double.violations, []);
    assert.deepEqual(whole.double.violations, []);
  });

  test("a run from another branch cannot reach the SSH key: the environment refuses the audit jobs, and the monitor hears of it at once", async () => {
    const pinged = monitor.pings().length;
    const result = await whole.run(DRIFT_AUDIT, dispatch({ "dry-run": false, shards: 1 }), {
      ref: "refs/heads/topic",
    });
    const audit = result.job("audit");
    assert.deepEqual(
      audit.map((j) => [j.result, j.steps.map((s) => s.name)]),
      [["failure", ["environment quartermaster"]]],
    );
    assert.match(
      audit[0]!.steps[0]!.stderr,
      /^Branch "topic" is not allowed to deploy to quartermaster due to environment protection rules\.$/,
    );
    // The plan job names no environment and ran; nothing after the audit did.
    assert.deepEqual(
      result.jobs.map((j) => [j.id, j.result]),
      [
        ["plan", "success"],
        ["audit", "failure"],
        ["report", "skipped"],
        ["propose", "skipped"],
        ["heartbeat", "success"],
      ],
    );
    // The run failed before propose: /fail, once (a trailing slash of the address is not doubled).
    assert.deepEqual(monitor.pings().slice(pinged), [
      `POST /ping/whole/fail: quartermaster run failed: ${runPage(whole)}`,
    ]);
  });

  test("the job summary and annotations stay within GitHub's limits and point at the manifest lines", () => {
    for (const result of [dryRun, shardedRun, wholeRun])
      assert.deepEqual(result.limitViolations, []);
    const report = shardedRun.job("report")[0]!;
    const summary = report.steps.find((s) => s.name === "Job summary")!.summary;
    assert.match(summary, /^## Quartermaster drift audit/);
    assert.match(summary, /cache-01/);
    assert.ok(Buffer.byteLength(summary) < 1024 * 1024);
    const annotations = report.steps.find(
      (s) => s.name === "Annotate the worst drift",
    )!.annotations;
    assert.equal(annotations.length, 10);
    assert.deepEqual(annotations.at(-1)!.level, "notice");
    assert.match(annotations.at(-1)!.message, /^\d+ more findings/);
    const forward = annotations.find((a) => a.title?.includes("net.ipv4.ip_forward"))!;
    assert.deepEqual(
      [forward.level, forward.file, forward.line],
      ["warning", "fleet-manifests/groups/web.yaml", 3],
    );
    assert.match(forward.message, /^web-01, web-02, web-03: /);
    assert.ok(annotations.some((a) => a.title === "cache-01 not audited"));
  });

  /** The sharded fleet's accept PR for ip_forward. */
  const forwardAccept = () =>
    sharded.double
      .pulls()
      .find((p) => p.head.startsWith("quartermaster--accept--sysctl--net-ipv4-ip-forward--"))!;

  /** `review` through the real CLI, for a comment `body` by `login` on that PR. */
  async function reviewComment(name: string, login: string, body: string) {
    const event = path.join(forge.work, `${name}-event.json`);
    await writeFile(
      event,
      JSON.stringify({
        issue: { number: forwardAccept().number, pull_request: {} },
        comment: { body, user: { login } },
      }),
    );
    const { GITHUB_TOKEN, GITHUB_API_URL, GITHUB_REPOSITORY } = sharded.double.cliEnv();
    return runCli(["review", "--event", event], {
      env: {
        GITHUB_TOKEN: GITHUB_TOKEN!,
        GITHUB_API_URL: GITHUB_API_URL!,
        GITHUB_REPOSITORY: GITHUB_REPOSITORY!,
      },
    });
  }

  test("/quartermaster reject from someone who may not write changes nothing", async () => {
    const result = await reviewComment("visitor", "visitor", "/quartermaster reject");
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(result.stdout, /only people with write access/);
    assert.equal(
      sharded.double.pulls().find((p) => p.number === forwardAccept().number)!.state,
      "open",
    );
  });

  test("an unknown command is quoted in a code span, cut short: it mentions no one and hides nothing", async () => {
    sharded.double.addCollaborator("fleet-reviewer", "write");
    const result = await reviewComment(
      "unknown",
      "fleet-reviewer",
      `/quartermaster x\`@octo/team\`<!--${"y".repeat(100_000)}`,
    );
    assert.equal(result.exitCode, 0, result.stderr);
    const [reply] = result.stdout.trim().split("\n").slice(-1);
    assert.ok(reply!.length < 400, `${reply!.length} characters`);
    assert.match(reply!, /^@fleet-reviewer: unknown command ``/);
    // Outside the code span, nothing the commenter wrote remains.
    const outside = reply!.replace(/``.*``/, "");
    assert.doesNotMatch(outside, /@octo|<!--/);
  });

  test("/quartermaster reject on an accept PR closes it and opens its ticket at once", async () => {
    sharded.double.addCollaborator("fleet-reviewer", "write");
    const accept = sharded.double
      .pulls()
      .find((p) => p.head.startsWith("quartermaster--accept--sysctl--net-ipv4-ip-forward--"))!;
    const before = sharded.double.pulls().length;
    const result = await sharded.run(REVIEW_COMMAND, {
      name: "issue_comment",
      payload: {
        action: "created",
        issue: { number: accept.number, pull_request: { url: "…" } },
        comment: {
          body: "/quartermaster reject\nWe keep forwarding off.",
          user: { login: "fleet-reviewer" },
        },
      },
    });
    assert.equal(failures(result), "");
    const pulls = sharded.double.pulls();
    assert.equal(pulls.find((p) => p.number === accept.number)!.state, "closed");
    assert.equal(pulls.length, before + 1);
    const ticket = pulls.at(-1)!;
    assert.match(ticket.head, /^quartermaster--ticket--sysctl--net-ipv4-ip-forward--/);
    assert.match(
      ticket.body ?? "",
      new RegExp(`accept PR #${accept.number} was closed without merging`),
    );
    // The command's audit reads the history the scheduled audit keeps: the drift is as old as the
    // run that first saw it, not the comment.
    const since = /^Drifting since (\S+) \(first seen by an audit\)\.$/m.exec(accept.body ?? "");
    assert.ok(since, accept.body ?? "");
    assert.match(ticket.body ?? "", new RegExp(`^Drifting since ${since[1]} `, "m"));
    const said = result.job("command")[0]!.steps.at(-1)!.stdout;
    assert.match(said, new RegExp(`Recorded the remediation ticket in #${ticket.number}\\.`));
    assert.deepEqual(sharded.double.violations, []);
  });

  test("more nodes unaudited than allowed: the report and the pull requests are still written, then the run fails", async () => {
    // The fleet allows no node to go unaudited; cache-01 is down.
    const fleetYaml = await whole.git("show", "main:fleet-manifests/fleet.yaml");
    await whole.double.pushCommit("main", {
      "fleet-manifests/fleet.yaml": `${fleetYaml}\naudit: { max_unaudited: 0 }\n`,
    });
    const pinged = monitor.pings().length;
    const result = await whole.run(DRIFT_AUDIT, {
      name: "schedule",
      payload: { schedule: "23 */6 * * *" },
    });
    assert.deepEqual(monitor.pings().slice(pinged), [
      `POST /ping/whole/fail: quartermaster run failed: ${runPage(whole)}`,
    ]);
    for (const job of ["plan", "audit", "report"])
      for (const instance of result.job(job))
        assert.equal(instance.result, "success", failures(result));
    const step = result
      .job("propose")[0]!
      .steps.find((s) => s.name === "Open, update or close pull requests")!;
    assert.equal(step.exitCode, 8, step.stderr);
    assert.match(step.stderr, /more nodes not audited than allowed: 1 of 5 nodes not audited/);
    // The run still proposed: its plan is said, and the dashboard below is this run's.
    assert.match(step.stdout, /^nothing to propose: every pull request is up to date$/m);
    const summary = result.job("report")[0]!.steps.find((s) => s.name === "Job summary")!.summary;
    assert.match(summary, /\*\*More nodes not audited than allowed\*\*/);
    // The first run's history says since when cache-01 is dark; the dashboard lists it.
    const [dashboard] = whole.double.issues();
    assert.match(
      dashboard?.body ?? "",
      /- `cache-01`: unreachable, never audited, first tried [^,]+, 2 runs/,
    );
    assert.deepEqual(whole.double.violations, []);
  });

  test("a broken manifest stops the run at its plan, and the monitor hears of it at once", async () => {
    await whole.double.pushCommit("main", { "fleet-manifests/nodes/web-01.yaml": "host: [\n" });
    const pinged = monitor.pings().length;
    const result = await whole.run(DRIFT_AUDIT, {
      name: "schedule",
      payload: { schedule: "23 */6 * * *" },
    });
    assert.deepEqual(
      result.jobs.map((j) => [j.id, j.result]),
      [
        ["plan", "failure"],
        ["audit", "skipped"],
        ["report", "skipped"],
        ["propose", "skipped"],
        ["heartbeat", "success"],
      ],
    );
    assert.deepEqual(monitor.pings().slice(pinged), [
      `POST /ping/whole/fail: quartermaster run failed: ${runPage(whole)}`,
    ]);
  });
});
