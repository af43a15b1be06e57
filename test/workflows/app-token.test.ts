// The GitHub App path of the shipped workflows, as docs/actions.md step 4 sets it up: the variable
// QUARTERMASTER_APP_ID and the secret QUARTERMASTER_APP_PRIVATE_KEY, the documented callers as
// they are. Two scheduled drift-audit runs and a refresh after a merge act as the App
// (`quartermaster[bot]`): its pull requests start manifest-review, the second run finds the
// dashboard the first opened, and an issue a person opened with the dashboard's title, label and
// mark is never taken for it. An App whose token cannot be made, or a key without the App, stops the
// run before anything is written, and says why. Needs root (test hosts).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { TestFleet } from "../support/hosts.js";
import {
  APP_CLIENT_ID,
  APP_PRIVATE_KEY,
  failures,
  heartbeatMonitor,
  startTwoDriftForge,
  TWO_DRIFT_FILE,
  type FleetForge,
  type FleetSite,
} from "./fleet-site.js";
import type { RunResult } from "./runner.js";

const APP = "quartermaster[bot]";
const DASHBOARD = { title: "Quartermaster dashboard", label: "quartermaster-dashboard" };
const A_PERSON = "fleet-operator";

describe("the shipped workflows with a GitHub App token", () => {
  let fleet: TestFleet;
  let forge: FleetForge;

  before(async () => {
    ({ fleet, forge } = await startTwoDriftForge({ hosts: "qma", forge: "qm-app-token-e2e-" }));
  });

  after(async () => {
    await forge?.stop();
    await fleet?.stop();
  });

  const open = (site: FleetSite) => site.double.pulls().filter((p) => p.state === "open");
  const dashboards = (site: FleetSite) =>
    site.double.issues().filter((i) => i.title === DASHBOARD.title);
  /** The accounts the writes since `from` were made by, each once. */
  const writers = (site: FleetSite, from: number) => [
    ...new Set(
      site.double
        .writes()
        .slice(from)
        .map((w) => w.by),
    ),
  ];
  /** Each manifest-review run: its job's result, and the nodes its summary shows. */
  const reviewed = (runs: { result: RunResult }[]) =>
    runs.map(({ result }) => {
      const [job] = result.job("review");
      const summary = job!.steps.find((s) => s.name.startsWith("Declared state"))!.summary;
      return `${job!.result} ${[...summary.matchAll(/^### (\S+)$/gm)].map((m) => m[1]).join(",")}`;
    });

  test("two scheduled runs and a refresh act as the App: its pull requests start manifest-review, its dashboard is found again, a person's look-alike never", async () => {
    const site = await forge.site("fleet-app");
    site.appId = APP_CLIENT_ID;
    site.appKey = APP_PRIVATE_KEY;
    // Before any run, a person opens an issue as the dashboard looks: its title, label and mark.
    const lookAlike = site.double.openIssue(
      {
        title: DASHBOARD.title,
        body: "<!-- quartermaster-dashboard -->\n- [x] open everything deferred\n",
        labels: [DASHBOARD.label],
      },
      A_PERSON,
    );
    const lookAlikeBody = site.double.issues().find((i) => i.number === lookAlike)!.body;

    const first = await site.scheduled();
    assert.equal(failures(first.result), "");
    assert.deepEqual(writers(site, 0), [APP], "every write of the run is the App's");
    assert.deepEqual(
      open(site).map((p) => p.user.login),
      [APP, APP],
    );
    const [dashboard, ...more] = dashboards(site).filter((i) => i.user.login === APP);
    assert.ok(dashboard, "the App opened its dashboard");
    assert.deepEqual(more, []);
    assert.match(
      first.propose.stderr,
      new RegExp(
        `issue #${lookAlike} has the dashboard's label and mark but was opened by "${A_PERSON}", not by the bot \\("quartermaster\\[bot\\]"\\): ignored`,
      ),
    );
    // The App's pull requests start manifest-review (GitHub starts none for a GITHUB_TOKEN's).
    const openedReviews = await site.reviews();
    assert.deepEqual(
      openedReviews.map((r) => `${r.event.action} #${r.event.number} by ${r.event.sender}`),
      open(site).map((p) => `opened #${p.number} by ${APP}`),
    );
    assert.deepEqual(reviewed(openedReviews), ["success db-01", "success db-01"]);

    // An operator edits the comment under the second key on main: its pull request cannot merge
    // any more. The reviewer merges the first; refresh-prs, as the App, rebuilds the second.
    const byKey = (key: string) => open(site).find((p) => p.title.includes(key));
    const [merged, other] = [byKey("tcp_fin_timeout"), byKey("tcp_keepalive_probes")];
    assert.ok(
      merged && other,
      open(site)
        .map((p) => p.title)
        .join("\n"),
    );
    const file = `fleet-manifests/${TWO_DRIFT_FILE}`;
    const text = await site.git("show", `main:${file}`);
    await site.double.pushCommit(
      "main",
      { [file]: `${text.replace("# reviewed in May", "# reviewed in June")}\n` },
      A_PERSON,
    );
    const writes = site.double.writes().length;
    const refresh = await site.mergeAndRefresh(merged.number);
    assert.equal(failures(refresh.result), "");
    assert.equal(refresh.job.result, "success");
    assert.deepEqual(writers(site, writes), [APP]);
    assert.deepEqual(
      open(site).map((p) => p.number),
      [other.number],
    );
    // Rebuilt by the App, the pull request starts manifest-review again.
    const refreshReviews = await site.reviews();
    assert.deepEqual(
      refreshReviews.map((r) => `${r.event.action} #${r.event.number} by ${r.event.sender}`),
      [`synchronize #${other.number} by ${APP}`],
    );
    assert.deepEqual(reviewed(refreshReviews), ["success db-01"]);

    // The next scheduled run finds the App's dashboard and pull request: nothing opened twice.
    const before = site.double.writes().length;
    const second = await site.scheduled();
    assert.equal(failures(second.result), "");
    assert.doesNotMatch(second.propose.stderr, /Error|at .*\.js:\d+/);
    assert.deepEqual(
      site.double
        .writes()
        .slice(before)
        .filter((w) => w.operation === "issues/create" || w.operation === "pulls/create"),
      [],
    );
    assert.deepEqual(
      dashboards(site).map((i) => [i.number, i.user.login, i.state]),
      [
        [lookAlike, A_PERSON, "open"],
        [dashboard.number, APP, "open"],
      ],
    );
    assert.equal(site.double.issues().find((i) => i.number === lookAlike)!.body, lookAlikeBody);
    assert.deepEqual(
      open(site).map((p) => [p.number, p.user.login]),
      [[other.number, APP]],
    );
    assert.deepEqual(writers(site, before), [APP]);
  });

  test("an App whose token cannot be made, or a key without the App, stops the run before any write; without an App the workflow's token opens pull requests that start no workflow", async (t) => {
    const site = await forge.site("fleet-no-app");
    const monitor = await heartbeatMonitor();
    t.after(() => monitor.stop());
    site.heartbeatUrl = monitor.url("fleet");
    const job = (result: RunResult, id: string) => result.job(id)[0]!;
    const step = (result: RunResult, id: string, name: string) =>
      job(result, id).steps.find((s) => s.name === name)!;

    // A key that is not the App's: the token step fails, and the job says what that means.
    site.appId = APP_CLIENT_ID;
    site.appKey =
      "-----BEGIN RSA PRIVATE KEY-----\nanother App's key\n-----END RSA PRIVATE KEY-----\n";
    const badKey = await site.scheduled();
    assert.equal(job(badKey.result, "propose").result, "failure");
    assert.match(
      step(
        badKey.result,
        "propose",
        "GitHub App token, so that the pull requests start manifest-review",
      ).stderr,
      /A JSON web token could not be decoded/,
    );
    const said = step(badKey.result, "propose", "No GitHub App token");
    assert.equal(said.outcome, "failure");
    assert.deepEqual(
      said.annotations.map((a) => [a.level, a.title, a.message]),
      [
        [
          "error",
          "GitHub App",
          "No token for the GitHub App the variable QUARTERMASTER_APP_ID names (the step above says why): nothing was proposed: no pull request, no dashboard. The secret QUARTERMASTER_APP_PRIVATE_KEY must hold a private key of that App, installed on this repository; delete the variable to use the workflow's token.",
        ],
      ],
    );
    assert.equal(badKey.propose.outcome, "skipped");
    assert.deepEqual(site.double.writes(), [], "nothing written");
    // Stopped before propose, the run still tells the monitor it failed, once.
    assert.deepEqual(
      monitor.pings().map((p) => p.split(":")[0]),
      ["POST /ping/fleet/fail"],
    );

    // No App: the workflow's token proposes, and its pull requests start no workflow.
    site.appId = undefined;
    site.appKey = undefined;
    const plain = await site.scheduled();
    assert.equal(failures(plain.result), "");
    assert.deepEqual(writers(site, 0), ["github-actions[bot]"]);
    assert.equal(open(site).length, 2);
    assert.deepEqual(
      site.double.pullEvents().map((e) => `${e.action} by ${e.sender}`),
      ["opened by github-actions[bot]", "opened by github-actions[bot]"],
    );
    assert.deepEqual(await site.reviews(), []);
    const writes = site.double.writes().length;
    assert.deepEqual(
      monitor.pings().map((p) => p.split(":")[0]),
      ["POST /ping/fleet/fail", "POST /ping/fleet"],
    );

    // The App's key kept as a secret with no variable naming the App: refused, not ignored.
    site.appKey = APP_PRIVATE_KEY;
    const keyOnly = await site.mergeAndRefresh(open(site)[0]!.number);
    assert.equal(keyOnly.job.result, "failure");
    assert.deepEqual(
      step(keyOnly.result, "refresh", "A GitHub App key without the App").annotations.map((a) => [
        a.level,
        a.title,
        a.message,
      ]),
      [
        [
          "error",
          "GitHub App",
          "The secret QUARTERMASTER_APP_PRIVATE_KEY is set but the variable QUARTERMASTER_APP_ID is not (a variable of an environment does not reach this job): no pull request was rebuilt, updated or closed. Set the variable to the App's client ID, or delete the secret to use the workflow's token.",
        ],
      ],
    );
    assert.equal(keyOnly.step.outcome, "skipped");
    assert.deepEqual(writers(site, writes), [], "nothing written");
  });
});
