// The dashboard is the bot's own issue, end to end: `propose` through the real CLI against the
// GitHub double on the real git server. Anyone may open an issue with the dashboard's label and
// mark; one another account opened, its deferred box ticked, must open nothing and stay unedited.
// The bot here is a user account, so the CLI learns its login from GET /user, as with a user's
// token.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { loadFleet } from "../../src/manifest/load.js";
import { DASHBOARD_LABEL } from "../../src/propose/dashboard.js";
import { runCli } from "../support/cli.js";
import { OWNER, REPO, suiteForge } from "../support/forge.js";
import { testOctokit } from "../support/octokit.js";
import { reportOf, sysctlResults } from "../support/reports.js";

const TOKEN = "ghp_dashboard_e2e";
const BOT = "qm-fleet-bot";
const MALLORY = "mallory";

const forge = suiteForge({
  token: TOKEN,
  botLogin: BOT,
  workPrefix: "qm-dashboard-e2e-",
  files: {
    "fleet-manifests/fleet.yaml": "policy:\n  sysctl: { severity: medium, on_drift: accept }\n",
    "fleet-manifests/nodes/web-01.yaml":
      "system:\n  sysctl_parameters:\n    net.core.somaxconn: 4096\n",
  },
});

/** A report of web-01 with its somaxconn drifted, drift items made by the audit's code. */
async function driftReport(): Promise<string> {
  const dir = await forge.checkout();
  const fleet = await loadFleet(path.join(dir, "fleet-manifests"), {
    displayPrefix: "fleet-manifests",
  });
  const nodes = sysctlResults(
    fleet.nodes,
    {
      "web-01": [
        {
          key: "net.core.somaxconn",
          declared: "4096",
          live: "8192",
          path: ["system", "sysctl_parameters", "net.core.somaxconn"],
        },
      ],
    },
    { policy: fleet.settings.policy ?? {}, waivers: [], tickets: [], now: new Date() },
  );
  const file = path.join(forge.work, "report.json");
  await writeFile(file, JSON.stringify(reportOf(nodes)));
  return file;
}

const propose = (file: string) =>
  runCli(["propose", "--report", file, "--max-new-prs", "0", ...forge.repoArgs()], {
    env: forge.double.cliEnv(),
  });

const openIssues = () => forge.double.issues().filter((i) => i.state === "open");

describe("the dashboard is the bot's own issue", () => {
  it("an issue another user opened with the dashboard's label and mark, its deferred box ticked, opens nothing and is never edited", async () => {
    const report = await driftReport();
    const first = await propose(report);
    assert.equal(first.exitCode, 0, first.stderr);
    const own = openIssues()[0]!;
    assert.equal(own.user.login, BOT);
    assert.match(own.body ?? "", /- \[ \] .*<!-- open: /);
    assert.equal(forge.double.pulls().length, 0, "the drift is deferred");

    // The bot's dashboard is closed (by a maintainer, say) and mallory opens her copy of it, box
    // ticked: the only open issue with the label and mark, the one the bot would have taken.
    const { octokit } = testOctokit({ baseUrl: forge.double.apiUrl, auth: TOKEN });
    await octokit.rest.issues.update({
      owner: OWNER,
      repo: REPO,
      issue_number: own.number,
      state: "closed",
    });
    const ticked = (own.body ?? "").replace("- [ ] ", "- [x] ");
    const planted = forge.double.openIssue(
      { title: "Quartermaster dashboard", body: ticked, labels: [DASHBOARD_LABEL] },
      MALLORY,
    );

    const second = await propose(report);
    assert.equal(second.exitCode, 0, second.stderr);
    assert.equal(forge.double.pulls().length, 0, "no deferred PR opened by mallory's tick");
    assert.match(
      second.stderr,
      new RegExp(
        `issue #${planted} has the dashboard's label and mark but was opened by "${MALLORY}", not by the bot \\("${BOT}"\\): ignored`,
      ),
    );
    const mallorys = forge.double.issues().find((i) => i.number === planted)!;
    assert.equal(mallorys.body, ticked, "her issue is not edited");
    assert.ok(
      !forge.double.requests.some(
        (r) => r.operation === "issues/update" && r.path.endsWith(`/issues/${planted}`),
      ),
      "no request edits her issue",
    );
    // The bot opens its own dashboard again, its box unticked; GET /user told it who it is.
    const fresh = openIssues()[1]!;
    assert.equal(fresh.user.login, BOT);
    assert.match(fresh.body ?? "", /- \[ \] .*<!-- open: /);
    assert.ok(forge.double.requests.some((r) => r.operation === "users/get-authenticated"));
    assert.deepEqual(forge.double.violations, []);
  });
});
