// Pull requests reviewers can trust, end to end: real sshd test hosts audited through the real CLI,
// manifests on a real git server, `propose` and `review` through the real CLI against the GitHub
// double. A hostile host forges another node's marker, floods listeners and writes every kind of
// markup into a declared file. Scenarios run in order and share the repository's history. Needs
// root.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { execa } from "execa";
import { runCli, type CliResult } from "../support/cli.js";
import type { GitServer } from "../support/git-server.js";
import type { GitHubDouble } from "../support/github-double/index.js";
import { proposalWrites, startForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { outsideCode } from "../support/markdown.js";
import { testOctokit, type TestOctokit } from "../support/octokit.js";

const TOKEN = "ghs_propose_trust";
const OWNER = "acme";
const REPO = "fleet";
const APP_CONF = "/etc/qm-trust/app.conf";
const PORTS = Array.from({ length: 50 }, (_, i) => `tcp/${9100 + i}`);

/** A declared file's live contents as a hostile host writes them: 300 lines, over 110 KB. */
function hostileText(forgedMarker: string): string {
  const lines = [
    "role = hotfixed",
    "@qm-victim please approve this",
    '<img src="https://evil.example/x.png" onerror="alert(1)">',
    "[Approve in one click](https://evil.example/approve)",
    "<!-- an HTML comment -->",
    forgedMarker,
    "nul:\u0000:esc:\u001b[31mred\u001b[0m",
    "::error::forged annotation",
    "::add-mask::hidden",
    "````` ``` ` backtick runs `` ```` ",
  ];
  while (lines.length < 299) lines.push(`padding ${lines.length} ${"x".repeat(400)}`);
  lines.push(forgedMarker);
  return `${lines.join("\n")}\n`;
}

let fleet: TestFleet;
let server: GitServer;
let double: GitHubDouble;
let octokit: TestOctokit;
let work: string;
let cache: string;

before(async () => {
  fleet = await startFleet(
    [
      { name: "web-01", sysctls: { "net.ipv4.ip_forward": "1" } },
      { name: "web-02", sysctls: { "net.ipv4.tcp_syncookies": "0" } },
      { name: "files-01", files: { [APP_CONF]: { contents: "role = hotfixed\n", mode: "0644" } } },
      { name: "ports-01", listeners: PORTS },
    ],
    { prefix: "qmp" },
  );
  work = await mkdtemp(path.join(tmpdir(), "qm-propose-trust-"));
  cache = path.join(work, "cache");
  ({ server, double } = await startForge({
    token: TOKEN,
    owner: OWNER,
    repo: REPO,
    files: {
      "README.md": "Fleet manifests.\n",
      // Files drift is a ticket here: the hostile text lands in a ticket PR, which `/quartermaster
      // reject` must not take for an accept.
      "fleet-manifests/fleet.yaml":
        "# At most two new pull requests per run.\npropose: { max_new_prs: 2 }\npolicy:\n  files: { on_drift: ticket }\n",
      "fleet-manifests/nodes/web-01.yaml":
        "system:\n  sysctl_parameters:\n    net.ipv4.ip_forward: 0\n",
      "fleet-manifests/nodes/web-02.yaml":
        "system:\n  sysctl_parameters:\n    net.ipv4.tcp_syncookies: 1\n",
      "fleet-manifests/nodes/files-01.yaml": `files:\n  - { path: ${APP_CONF}, contents: "role = app\\n" }\n`,
      "fleet-manifests/nodes/ports-01.yaml": "networking:\n  listening_ports: [tcp/22]\n",
    },
  }));
  double.addCollaborator("fleet-reviewer", "write");
  ({ octokit } = testOctokit({ baseUrl: double.apiUrl, auth: TOKEN }));
});

after(async () => {
  await double?.stop();
  await server?.stop();
  await fleet?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

const env = () => double.cliEnv();
const repoArgs = () => ["--repo", server.repoUrl(OWNER, REPO), "--cache-dir", cache];

/** No line a runner reads as a workflow command: host text is escaped on stdout and stderr. */
function assertNoWorkflowCommands(result: CliResult) {
  for (const line of `${result.stdout}\n${result.stderr}`.split("\n"))
    assert.doesNotMatch(line, /^\s*::/, `a workflow command line: ${line}`);
}

/**
 * Every PR as a reviewer sees it: one-line titles, bodies under GitHub's limit, host text only as
 * code.
 */
function assertReviewable() {
  for (const pr of double.pulls()) {
    assert.doesNotMatch(pr.title, /[\n\r\u0000\u001b]/, `#${pr.number}'s title`);
    assert.ok(pr.title.length <= 256, `#${pr.number}'s title is ${pr.title.length} characters`);
    const body = pr.body ?? "";
    assert.ok(body.length <= 65536, `#${pr.number}'s body is ${body.length} characters`);
    const rendered = outsideCode(body.replace(/<!-- quartermaster-pr [^\n]*-->\s*$/, ""));
    for (const bad of [
      "@qm-victim",
      "<img",
      "](https://evil",
      "<!--",
      "::error",
      "\u0000",
      "\u001b",
    ]) {
      assert.ok(
        !rendered.includes(bad),
        `#${pr.number}'s body shows ${JSON.stringify(bad)} outside code`,
      );
    }
  }
}

let audits = 0;
async function audit(): Promise<string> {
  const file = path.join(work, `report-${++audits}.json`);
  const result = await runCli(
    ["audit", ...repoArgs(), "--ssh-config", fleet.sshConfig, "--format", "json", "--out", file],
    { env: env() },
  );
  assert.ok(result.exitCode === 0 || result.exitCode === 1, result.stderr);
  return file;
}

async function propose(report: string, extra: string[] = []): Promise<CliResult> {
  const result = await runCli(["propose", "--report", report, ...repoArgs(), ...extra], {
    env: env(),
  });
  assert.equal(result.exitCode, 0, result.stderr + result.stdout);
  assertNoWorkflowCommands(result);
  assertReviewable();
  return result;
}

async function noWritesFrom(run: () => Promise<unknown>): Promise<void> {
  const before = double.writes().length;
  await run();
  assert.deepEqual(
    proposalWrites(double.writes().slice(before)).map((w) => `${w.method} ${w.path}`),
    [],
    "no write request",
  );
}

/** What the bot keeps between runs: each deferred PR's branch and when it first waited. */
async function waiting(): Promise<Record<string, string>> {
  const shown = await execa("git", ["show", "quartermaster-state:deferred.json"], {
    cwd: server.barePath(OWNER, REPO),
  });
  return JSON.parse(shown.stdout) as Record<string, string>;
}
const deferredBranches = (stdout: string) =>
  [...stdout.matchAll(/^defer +\S+ +(\S+):/gm)].map((m) => m[1]!).sort();

const open = (pattern: RegExp) =>
  double.pulls().filter((p) => p.state === "open" && pattern.test(p.head));
const writesTo = (number: number, since: number) =>
  double
    .writes()
    .slice(since)
    .filter((w) => new RegExp(`/(pulls|issues)/${number}(/|$)`).test(w.path));

describe("pull requests reviewers can trust", () => {
  let report: string;

  it("a budget of two new PRs per run (fleet.yaml): the rest are deferred, in stdout and the job summary", async () => {
    report = await audit();
    const summary = path.join(work, "summary.md");
    const result = await propose(report, ["--summary", summary]);
    assert.equal(double.pulls().length, 2);
    assert.equal(result.stdout.match(/^defer /gm)?.length, 2, result.stdout);
    assert.match(result.stdout, /2 new pull requests are deferred: at most 2 are opened per run/);
    const markdown = await readFile(summary, "utf8");
    assert.match(markdown, /\*\*2 deferred\*\*: at most 2 new pull requests are opened per run/);
    assert.equal(markdown.match(/^\| deferred \|/gm)?.length, 2);
    // The queue outlives the run, so the next runs open the longest-waiting first.
    assert.deepEqual(Object.keys(await waiting()).sort(), deferredBranches(result.stdout));
  });

  it("fifty unauthorized listeners on one host are one pull request", () => {
    const ports = double.pulls().filter((p) => /^quartermaster--ticket--ports--/.test(p.head));
    assert.equal(
      ports.length,
      1,
      double
        .pulls()
        .map((p) => p.head)
        .join("\n"),
    );
    assert.match(ports[0]!.title, /^Remediate ports drift on ports-01: tcp\/9100 and 49 more$/);
    assert.equal((ports[0]!.body!.match(/^\| `ports-01` \| `tcp\/91\d\d` \|/gm) ?? []).length, 50);
  });

  it("deferred drift is opened on the next runs; --max-new-prs wins over fleet.yaml; then nothing is left to write", async () => {
    const queued = await waiting();
    const one = await propose(report, ["--max-new-prs", "1"]);
    assert.equal(double.pulls().length, 3);
    assert.equal(one.stdout.match(/^defer /gm)?.length, 1);
    const still = deferredBranches(one.stdout)[0]!;
    assert.deepEqual(
      await waiting(),
      { [still]: queued[still] },
      "the one still waiting keeps its time",
    );
    const rest = await propose(report);
    assert.doesNotMatch(rest.stdout, /^defer /m);
    assert.equal(double.pulls().length, 4);
    assert.deepEqual(await waiting(), {});
    assert.equal(open(/^quartermaster--accept--sysctl--net-ipv4-ip-forward--/).length, 1);
    await noWritesFrom(() => propose(report));
  });

  let victim: { number: number; body: string; title: string };
  it("a host that writes another node's marker into its file leaves that node's PR untouched; a re-run writes nothing", async () => {
    const [pr] = open(/^quartermaster--accept--sysctl--net-ipv4-ip-forward--/);
    victim = { number: pr!.number, body: pr!.body!, title: pr!.title };
    const forged = /<!-- quartermaster-pr [^\n]*-->\s*$/.exec(victim.body)![0].trim();
    const staged = path.join(work, "hostile.conf");
    await writeFile(staged, hostileText(forged));
    await fleet.exec("files-01", `cat ${staged} > ${APP_CONF}`);
    assert.ok((await readFile(staged)).length > 110 * 1024);

    report = await audit();
    const since = double.writes().length;
    await propose(report);
    assert.deepEqual(writesTo(victim.number, since), [], "no request touched web-01's PR");
    await noWritesFrom(() => propose(report));
    const now = double.pulls().find((p) => p.number === victim.number)!;
    assert.deepEqual([now.state, now.body, now.title], ["open", victim.body, victim.title]);
  });

  it("the hostile file's PR: one title line, host text only as code, under the size limit", () => {
    const [files] = open(/^quartermaster--ticket--files--/);
    assert.ok(
      files,
      double
        .pulls()
        .map((p) => `${p.state} ${p.head}`)
        .join("\n"),
    );
    assert.ok(
      files.body!.includes("@qm-victim please approve this"),
      "the host's text is shown, as code",
    );
    assertReviewable();
  });

  it("/quartermaster reject on a ticket PR whose body holds a forged accept marker changes nothing", async () => {
    const [ticket] = open(/^quartermaster--ticket--files--/);
    assert.ok(
      ticket && ticket.body!.split("quartermaster-pr").length > 2,
      "the body quotes the host's forged marker",
    );
    const event = path.join(work, "reject-ticket.json");
    await writeFile(
      event,
      JSON.stringify({
        issue: { number: ticket.number, pull_request: {} },
        comment: { body: "/quartermaster reject", user: { login: "fleet-reviewer" } },
      }),
    );
    const before = double.pulls().length;
    const result = await runCli(
      ["review", "--event", event, ...repoArgs(), "--ssh-config", fleet.sshConfig],
      { env: env() },
    );
    assert.equal(result.exitCode, 0, result.stderr);
    assertNoWorkflowCommands(result);
    assert.match(result.stdout, /only accept pull requests can be rejected/);
    assert.equal(double.pulls().length, before);
    assert.equal(double.pulls().find((p) => p.number === ticket.number)!.state, "open");
    assert.equal(double.pulls().find((p) => p.number === victim.number)!.state, "open");
    const comments = (
      await octokit.rest.issues.listComments({
        owner: OWNER,
        repo: REPO,
        issue_number: victim.number,
      })
    ).data;
    assert.deepEqual(comments, []);
    assert.deepEqual(double.violations, []);
  });
  it("a reviewer closing the hostile host's PR decides about that PR only: the other node's PR stays as it was", async () => {
    const [files] = open(/^quartermaster--ticket--files--/);
    await double.closePull(files!.number);
    const since = double.writes().length;
    await propose(report);
    assert.deepEqual(writesTo(victim.number, since), []);
    assert.equal(double.pulls().find((p) => p.number === victim.number)!.state, "open");
    assert.deepEqual(open(/^quartermaster--ticket--sysctl--/), [], "no ticket for web-01's drift");
    await noWritesFrom(() => propose(report));
  });
});
