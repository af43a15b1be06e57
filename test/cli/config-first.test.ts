import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { runCli } from "../support/cli.js";

// A repository no pull can reach: had the CLI pulled it, the error would name the pull.
const UNREACHABLE = ["--repo", "https://git.invalid/fleet.git"];
const NO_PULL = /git\.invalid/;

describe("a command's config is settled before anything is pulled or probed", () => {
  it("a wrong --ssh-config is reported by its flag, not by the pull of an unreachable repository", async () => {
    for (const args of [
      ["audit", ...UNREACHABLE],
      ["snapshot", "--node", "web-01", ...UNREACHABLE],
      ["diff", "--category", "sysctl", ...UNREACHABLE],
    ]) {
      const result = await runCli([...args, "--ssh-config", "/nonexistent-ssh-config"]);
      assert.equal(result.exitCode, 2, result.stderr);
      assert.match(
        result.stderr,
        /^quartermaster: --ssh-config: no such file: \/nonexistent-ssh-config$/m,
      );
      assert.doesNotMatch(result.stderr, NO_PULL);
    }
  });

  it("a missing token for --state-from-repo is reported before the manifests are pulled", async () => {
    const result = await runCli(["audit", ...UNREACHABLE, "--state-from-repo"], {
      env: { GITHUB_REPOSITORY: "acme/fleet", GITHUB_TOKEN: "" },
    });
    assert.equal(result.exitCode, 2, result.stderr);
    assert.match(result.stderr, /^quartermaster: --state-from-repo: GITHUB_TOKEN must be set/m);
    assert.doesNotMatch(result.stderr, NO_PULL);
  });

  it("a missing token for --history-from-repo is reported before the report is read", async () => {
    const result = await runCli(
      ["report", "--report", "/nonexistent-report.json", "--format", "html", "--history-from-repo"],
      { env: { GITHUB_REPOSITORY: "acme/fleet", GITHUB_TOKEN: "" } },
    );
    assert.equal(result.exitCode, 2, result.stderr);
    assert.match(result.stderr, /^quartermaster: --history-from-repo: GITHUB_TOKEN must be set/m);
    assert.doesNotMatch(result.stderr, /nonexistent-report/);
  });

  it("flags that exclude each other, or one a command needs, are said before any pull", async () => {
    for (const [args, message] of [
      [["audit", ...UNREACHABLE, "--shard", "1/2", "--local"], /--shard splits a fleet/],
      [["snapshot", ...UNREACHABLE], /snapshot needs --local or --node NAME/],
      [["diff", ...UNREACHABLE, "--category", "sysctl", "--node", "a", "--nodes", "b"], /not both/],
      [
        ["audit", ...UNREACHABLE, "--state", "history.json", "--state-from-repo"],
        /two sources of one history/,
      ],
      [
        ["report", "--report", "report.json", "--history", "runs.json", "--history-from-repo"],
        /two sources of one history/,
      ],
      [
        ["propose", ...UNREACHABLE, "--report", "report.json", "--report-from-repo"],
        /two sources of one report/,
      ],
      [["propose", ...UNREACHABLE], /propose needs --report FILE .* or --report-from-repo/],
    ] as const) {
      const result = await runCli([...args]);
      assert.equal(result.exitCode, 2, result.stderr);
      assert.match(result.stderr, message);
      assert.doesNotMatch(result.stderr, NO_PULL);
    }
  });

  it("review takes its event from GITHUB_EVENT_PATH when --event is not given", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "qm-config-first-"));
    const event = path.join(dir, "event.json");
    await writeFile(
      event,
      JSON.stringify({
        issue: { number: 7 },
        comment: { body: "thanks", user: { login: "octocat" } },
      }),
    );
    const fromEnv = await runCli(["review"], { env: { GITHUB_EVENT_PATH: event } });
    assert.equal(fromEnv.exitCode, 0, fromEnv.stderr);
    assert.match(fromEnv.stdout, /no \/quartermaster command on a pull request: nothing to do/);
    const without = await runCli(["review"], { env: { GITHUB_EVENT_PATH: "" } });
    assert.equal(without.exitCode, 2);
    assert.match(
      without.stderr,
      /review needs --event FILE \(GitHub Actions sets GITHUB_EVENT_PATH\)/,
    );
  });
});
