// The fleet over time, end to end: five scheduled runs (audit over real sshd hosts, then propose
// with a heartbeat) against the real git server and the GitHub double. One drift is accepted, one
// ticketed, one fixes itself on the host, and a node goes dark; the run history on the state branch
// holds five runs, the fleet page (opened in headless Chromium) shows each event on its node's
// timeline, and the heartbeat server gets one ping per run, /fail on the failing ones. Needs root.
import assert from "node:assert/strict";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { execa } from "execa";
import { MAX_TEXT_BYTES } from "../../src/report/read.js";
import { parseRuns, type RunHistory } from "../../src/report/runs.js";
import { Report } from "../../src/report/schema.js";
import { dumpDom, nodeSection, screenshot } from "../support/chromium.js";
import { runCli } from "../support/cli.js";
import { OWNER, REPO, suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";

const M = "fleet-manifests";
let fleet: TestFleet;
const forge = suiteForge({
  token: "ghs_fleet_history_e2e",
  workPrefix: "qm-fleet-history-",
  files: {
    [`${M}/fleet.yaml`]: "policy:\n  sysctl: { severity: medium, on_drift: accept }\n",
    [`${M}/nodes/web-01.yaml`]: "system:\n  sysctl_parameters:\n    net.ipv4.ip_forward: 0\n",
    [`${M}/nodes/web-02.yaml`]: "system:\n  sysctl_parameters:\n    net.ipv4.ip_forward: 0\n",
    [`${M}/nodes/db-01.yaml`]: "system:\n  sysctl_parameters:\n    net.ipv4.tcp_fin_timeout: 30\n",
    // The kernel's drift is a ticket by default.
    [`${M}/nodes/app-01.yaml`]: "system:\n  kernel_version: 0.0.0-declared\n",
  },
  setup: async () => {
    fleet = await startFleet([
      { name: "web-01", sysctls: { "net.ipv4.ip_forward": "1" } },
      { name: "web-02" },
      { name: "db-01", sysctls: { "net.ipv4.tcp_fin_timeout": "45" } },
      { name: "app-01" },
    ]);
  },
});

/** What the heartbeat monitor received: one path per request. */
const pings: string[] = [];
let monitor: Server;
let heartbeat: string;
before(async () => {
  monitor = createServer((request, response) => {
    pings.push(request.url ?? "");
    response.end("OK");
  });
  await new Promise<void>((resolve) => monitor.listen(0, "127.0.0.1", resolve));
  heartbeat = `http://127.0.0.1:${(monitor.address() as AddressInfo).port}/ping/fleet`;
});
after(async () => {
  monitor?.close();
  await fleet?.stop();
});

const env = () => forge.double.cliEnv();

/** One scheduled run: the audit (reading the state branch), then propose with the heartbeat. */
async function scheduledRun(n: number, expected: { audit: number; propose: number }) {
  const file = path.join(forge.work, `run-${n}.json`);
  const audited = await runCli(
    ["audit", ...forge.repoArgs(), "--ssh-config", fleet.sshConfig, "--state-from-repo"].concat([
      "--format",
      "json",
      "--out",
      file,
    ]),
    { env: env() },
  );
  assert.equal(audited.exitCode, expected.audit, audited.stderr);
  const proposed = await runCli(
    ["propose", "--report", file, ...forge.repoArgs(), "--heartbeat-url", heartbeat],
    { env: env() },
  );
  assert.equal(proposed.exitCode, expected.propose, proposed.stderr);
  return { file, report: Report.parse(JSON.parse(await readFile(file, "utf8"))) };
}

async function stateHistory(): Promise<RunHistory> {
  const { stdout } = await execa("git", ["show", "quartermaster-state:run-history.json"], {
    cwd: forge.server.barePath(OWNER, REPO),
  });
  const history = parseRuns(stdout);
  assert.ok(typeof history !== "string", String(history));
  return history;
}

const pullOn = (pattern: RegExp) => forge.double.pulls().find((p) => pattern.test(p.head))!;
// The page shows times to the second, in UTC.
const shown = (at: string) => at.slice(0, 19).replace("T", " ");

describe("five scheduled runs: the history, the fleet page and the heartbeat", () => {
  const at: string[] = [];
  let last: string;

  it("five runs: accepted, ticketed, fixed by itself, a node gone dark; a ping per run, none on --dry-run", async () => {
    const first = await scheduledRun(1, { audit: 1, propose: 0 });
    at.push(first.report.startedAt);
    assert.deepEqual(pings, ["/ping/fleet"]);
    const dry = await runCli(
      [
        "propose",
        "--report",
        first.file,
        ...forge.repoArgs(),
        "--dry-run",
        "--heartbeat-url",
        heartbeat,
      ],
      { env: env() },
    );
    assert.equal(dry.exitCode, 0, dry.stderr);
    assert.deepEqual(pings, ["/ping/fleet"], "a dry run pings nothing");

    // Between runs: the accept and the ticket are merged; db-01's value is set back on the host.
    await forge.double.mergePull(
      pullOn(/^quartermaster--accept--sysctl--net-ipv4-ip-forward--/).number,
    );
    await forge.double.mergePull(pullOn(/^quartermaster--ticket--kernel--/).number);
    await fleet.exec("db-01", "echo 30 > /proc/sys/net/ipv4/tcp_fin_timeout");
    at.push((await scheduledRun(2, { audit: 0, propose: 0 })).report.startedAt);

    await fleet.takeDown("web-02");
    at.push((await scheduledRun(3, { audit: 4, propose: 0 })).report.startedAt);
    // Its second missed run in a row is over the default grace: bit 8, and the run fails.
    at.push((await scheduledRun(4, { audit: 4 + 8, propose: 8 })).report.startedAt);
    const fifth = await scheduledRun(5, { audit: 4 + 8, propose: 8 });
    at.push(fifth.report.startedAt);
    last = fifth.file;
    assert.deepEqual(pings, [
      "/ping/fleet",
      "/ping/fleet",
      "/ping/fleet",
      "/ping/fleet/fail",
      "/ping/fleet/fail",
    ]);
    assert.deepEqual(forge.double.violations, []);
  });

  it("the state branch's history holds the five runs and each drift's story", async () => {
    const history = await stateHistory();
    assert.deepEqual(
      history.runs.map((r) => r.at),
      at,
    );
    assert.deepEqual(
      history.runs.map((r) => [r.counts.clean, r.counts.drift, r.counts.unreachable]),
      [
        [1, 3, 0],
        [4, 0, 0],
        [3, 0, 1],
        [3, 0, 1],
        [3, 0, 1],
      ],
    );
    const story = (node: string) => [...history.drift.values()].find((d) => d.node === node)!;
    const accept = pullOn(/^quartermaster--accept--sysctl--net-ipv4-ip-forward--/).number;
    const ticket = pullOn(/^quartermaster--ticket--kernel--/).number;
    assert.deepEqual(
      [story("web-01").resolved, story("web-01").pull],
      [at[1], { number: accept, kind: "accept" }],
    );
    assert.equal(story("db-01").resolved, at[1], "fixed by itself on the host");
    assert.deepEqual(
      [story("app-01").acknowledged, story("app-01").resolved, story("app-01").pull],
      [at[1], undefined, { number: ticket, kind: "ticket" }],
    );
    assert.equal(story("app-01").lastSeen, at[4]);
  });

  it("the fleet page in headless Chromium: each event on its node's timeline, resolved-within right", async () => {
    const page = path.join(forge.work, "fleet.html");
    const made = await runCli(
      ["report", "--report", last, "--format", "html", "--history-from-repo", "--out", page],
      { env: env() },
    );
    assert.equal(made.exitCode, 0, made.stderr);
    const dom = await dumpDom(page);
    assert.equal([...dom.matchAll(/<g class="run" /g)].length, 5, "one bar per run");
    const accept = pullOn(/^quartermaster--accept--sysctl--net-ipv4-ip-forward--/).number;
    const ticket = pullOn(/^quartermaster--ticket--kernel--/).number;
    const row = (node: string) =>
      nodeSection(dom, node).match(/<tr data-fp="[0-9a-f]+">(.*?)<\/tr>/)?.[1] ?? "";
    const cells = (node: string) => [...row(node).matchAll(/<td>(.*?)<\/td>/g)].map((m) => m[1]);
    const [, firstSeen, , , acceptPull, , acceptResolved] = cells("web-01");
    assert.equal(firstSeen, shown(at[0]!));
    assert.match(acceptPull!, new RegExp(`>#${accept} \\(accept\\)</a>`));
    assert.equal(acceptResolved, `${shown(at[1]!)} (within a day)`);
    assert.equal(cells("db-01")[6], `${shown(at[1]!)} (within a day)`);
    const app = cells("app-01");
    assert.match(app[4]!, new RegExp(`>#${ticket} \\(ticket\\)</a>`));
    assert.deepEqual([app[2], app[5], app[6]], [shown(at[4]!), shown(at[1]!), "open"]);
    assert.match(
      nodeSection(dom, "web-02"),
      new RegExp(
        `clean ${shown(at[0]!)} → <i class="s-unreachable"></i>unreachable ${shown(at[2]!)}</p>`,
      ),
    );
    // Two drifts resolved within a day of each mark; the ticketed one is open, for minutes: no outcome yet.
    for (const days of [1, 7, 30])
      assert.match(dom, new RegExp(`data-within="${days}" data-resolved="2" data-of="2"`));
    assert.match(dom, /<td data-open="1">1<\/td>/);
    // Kept after the suite (its work folder goes), for a person to look at.
    const shot = path.join(
      await mkdtemp(path.join(tmpdir(), "qm-fleet-history-shot-")),
      "fleet.png",
    );
    await screenshot(page, shot);
    assert.equal((await readFile(shot)).subarray(1, 4).toString(), "PNG");
    process.stdout.write(`# fleet page screenshot: ${shot}\n`);
  });

  it("a run history past what a reader takes whole costs no run: propose says so once and starts it again", async () => {
    // What a history in parts leaves when it has grown past the reader's limit: its index.
    const bytes = MAX_TEXT_BYTES + 1;
    await forge.double.pushCommit("quartermaster-state", {
      "run-history/index.json": JSON.stringify({
        version: 1,
        sha256: "0".repeat(64),
        bytes,
        parts: ["1".repeat(40)],
      }),
    });
    const proposed = await runCli(["propose", "--report", last, ...forge.repoArgs()], {
      env: env(),
    });
    // Bit 8 is web-02, dark past its grace since run 4.
    assert.equal(proposed.exitCode, 8, proposed.stderr);
    const warnings = proposed.stderr.split("\n").filter((l) => l.includes("run-history"));
    assert.deepEqual(warnings, [
      `quartermaster: quartermaster-state:run-history is ${bytes} bytes, over the ${MAX_TEXT_BYTES} the run history may be; not read; starting it again`,
    ]);
    const history = await stateHistory();
    assert.equal(history.runs.length, 1);
    const { stdout } = await execa("git", ["ls-tree", "--name-only", "quartermaster-state"], {
      cwd: forge.server.barePath(OWNER, REPO),
    });
    assert.ok(!stdout.split("\n").includes("run-history"), stdout);
  });
});
