// What propose warns of, when the text it names is someone else's: an issue with the dashboard's
// label and mark opened by another account (the bot's login unset, so learned from GET /user), and
// a state branch last written by someone else. The issue's title and the commit's author name and
// email carry runner commands, @mentions and an HTML comment; through the real CLI, the real git
// server and the GitHub double, no line of stderr or the job summary is a runner command and the
// summary (Markdown) mentions no one.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { DASHBOARD_LABEL } from "../../src/propose/dashboard.js";
import { HISTORY_FILE, STATE_BRANCH } from "../../src/propose/state.js";
import { runCli } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { reportOf } from "../support/reports.js";
import { runnerCommandLines } from "../support/runner-commands.js";

const BOT = "qm-fleet-bot";
const HOSTILE = "::error::x\n  ::warning::y ##[group]z @fleet-admins <!--";
// A login cannot hold any of it: GitHub (and the double, checked against its description) refuses.
const MALLORY = "mallory";

const forge = suiteForge({
  token: "ghp_propose_warnings",
  botLogin: BOT,
  workPrefix: "qm-propose-warnings-",
  files: {
    "fleet-manifests/fleet.yaml": "policy:\n  sysctl: { on_drift: accept }\n",
    "fleet-manifests/nodes/web-01.yaml": "system:\n  sysctl_parameters:\n    vm.swappiness: 10\n",
  },
});

/** `propose` of a clean web-01, writing the job summary; its output and that summary. */
async function propose(name: string) {
  const report = path.join(forge.work, `${name}.json`);
  const clean = { name: "web-01", host: "web-01", status: "clean" as const, durationMs: 3 };
  await writeFile(report, JSON.stringify(reportOf([{ ...clean, drift: [] }])));
  const summaryFile = path.join(forge.work, `${name}-summary.md`);
  await writeFile(summaryFile, "");
  const result = await runCli(
    ["propose", "--report", report, "--summary", summaryFile, ...forge.repoArgs()],
    { env: forge.double.cliEnv() },
  );
  assert.equal(result.exitCode, 0, result.stderr);
  return { ...result, summary: await readFile(summaryFile, "utf8") };
}

describe("propose's warnings name someone else's text escaped", () => {
  it("a planted dashboard and a state branch written by another author: each is named once, no line of stderr or the summary is a runner command, and the summary mentions no one", async () => {
    assert.equal(forge.double.cliEnv().QUARTERMASTER_BOT_LOGIN, undefined);
    const first = await propose("run-1");
    assert.doesNotMatch(first.stderr, /quartermaster:/);
    const own = forge.double.issues()[0]!;
    const planted = forge.double.openIssue(
      {
        title: `Quartermaster dashboard${HOSTILE}`,
        body: own.body ?? "",
        labels: [DASHBOARD_LABEL],
      },
      MALLORY,
    );
    const head = await forge.double.pushCommit(
      STATE_BRANCH,
      { [HISTORY_FILE]: `{"version":1,"nodes":{}}\n` },
      { name: `Eve${HOSTILE}`, email: `eve${HOSTILE}@example.com` },
    );

    const second = await propose("run-2");
    const lines = (words: string) => second.stderr.split("\n").filter((l) => l.includes(words));
    // Each said once, though propose reads the forge again once its turn comes.
    assert.deepEqual(lines("has the dashboard's label"), [
      `quartermaster: issue #${planted} has the dashboard's label and mark but was opened by "${MALLORY}", not by the bot ("${BOT}"): ignored, its ticked boxes open nothing`,
    ]);
    // git keeps no line break or angle bracket in an identity; the bracket of `##[` is escaped.
    const [writer, ...again] = lines("was last written by");
    assert.deepEqual(again, [], second.stderr);
    assert.ok(
      writer!.startsWith(
        `quartermaster: ${STATE_BRANCH} was last written by eve::error::x  ::warning::y ##\\u005bgroup]z @fleet-admins !--@example.com (commit ${head.slice(0, 12)}), not by `,
      ),
      writer,
    );
    for (const [what, text] of [
      ["stderr", second.stderr],
      ["stdout", second.stdout],
      ["the summary", second.summary],
    ] as const)
      assert.deepEqual(runnerCommandLines(text), [], `${what}:\n${text}`);
    // The summary is Markdown: a mention there would notify, a comment hide what follows.
    assert.doesNotMatch(second.summary, /@fleet-admins|<!--/);
    assert.deepEqual(forge.double.violations, []);
  });
});
