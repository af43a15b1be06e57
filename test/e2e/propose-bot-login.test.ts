// propose on a token that cannot say who it is (an App's, or a workflow's GITHUB_TOKEN) with
// QUARTERMASTER_BOT_LOGIN unset: the run says so before it writes anything, on the first run (no
// dashboard yet) as on every later one. Through the real CLI, the real git server and the GitHub
// double, which answers GET /user for such a token with 403 as GitHub does.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { runCli } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { reportOf } from "../support/reports.js";

const forge = suiteForge({
  token: "ghs_propose_bot_login",
  botLogin: "github-actions[bot]",
  workPrefix: "qm-propose-bot-login-",
  files: {
    "fleet-manifests/fleet.yaml": "policy:\n  sysctl: { on_drift: accept }\n",
    "fleet-manifests/nodes/web-01.yaml": "system:\n  sysctl_parameters:\n    vm.swappiness: 10\n",
  },
});

const SAID =
  "an App's or Actions' token does not say who it is: set QUARTERMASTER_BOT_LOGIN to the login it acts as";

describe("propose without the bot's login on a token that cannot tell it", () => {
  it("stops before any write with the same words on every run, the first included", async () => {
    const report = path.join(forge.work, "report.json");
    const drifted = {
      name: "web-01",
      host: "web-01",
      status: "drift" as const,
      durationMs: 3,
      drift: [
        {
          domain: "sysctl" as const,
          key: "vm.swappiness",
          declared: 10,
          live: 60,
          severity: "medium" as const,
          onDrift: "accept" as const,
          path: ["system", "sysctl_parameters", "vm.swappiness"],
          fingerprint: "f".repeat(16),
          source: { file: "fleet-manifests/nodes/web-01.yaml", line: 3 },
          remediation: "sysctl -w vm.swappiness=10",
        },
      ],
    };
    await writeFile(report, JSON.stringify(reportOf([drifted])));
    const env = { ...forge.double.cliEnv(), QUARTERMASTER_BOT_LOGIN: "" };
    const said: string[] = [];
    for (const run of [1, 2]) {
      const result = await runCli(["propose", "--report", report, ...forge.repoArgs()], { env });
      assert.notEqual(result.exitCode, 0, `run ${run}: ${result.stdout}`);
      assert.ok(result.stderr.includes(SAID), `run ${run}: ${result.stderr}`);
      assert.doesNotMatch(result.stderr, /at .*\.[jt]s:\d+/);
      said.push(`${result.exitCode} ${result.stderr}`);
      assert.deepEqual(
        forge.double.writes().map((w) => `${w.method} ${w.path}`),
        [],
        `run ${run} wrote`,
      );
    }
    assert.equal(said[1], said[0], "the same answer every run");
    // With the login given, the same report opens its pull request and the dashboard.
    const given = await runCli(["propose", "--report", report, ...forge.repoArgs()], {
      env: forge.double.cliEnv(),
    });
    assert.equal(given.exitCode, 0, given.stderr);
    assert.equal(forge.double.pulls().length, 1);
    assert.equal(forge.double.issues().length, 1);
  });
});
