// A host whose declared file holds runner commands in the forms the Actions runner also acts on:
// `##[error]` anywhere in a line, `::error::` after a no-break space. Over real ssh, through the
// real CLI: no command prints a line the runner would act on (test/support/runner-commands.ts
// reads output as the runner does), and snapshot still declares the file's contents exactly.
// Needs root.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
import { parse } from "yaml";
import { runCli, type CliResult } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { pyyamlLoad } from "../support/pyyaml.js";
import { runnerCommandLines } from "../support/runner-commands.js";
import { scratchTrees } from "../support/tree.js";

const MOTD = "/etc/qm-runner/motd";
const LIVE = "welcome\n##[error]x\n\u00a0::error::x\n";
const tree = scratchTrees();

function assertRunnerSafe(result: CliResult, what: string): void {
  const acted = runnerCommandLines(`${result.stdout}\n${result.stderr}`);
  assert.deepEqual(acted, [], `${what} prints lines the runner acts on`);
  assert.doesNotMatch(result.stderr, /^\s+at /m, `${what}: a stack trace reached the user`);
}

describe("runner commands in a host's file", () => {
  let fleet: TestFleet;
  let manifests: string;
  let report: string;
  const cli = (args: string[]) =>
    runCli([...args, "--manifests", manifests, "--ssh-config", fleet.sshConfig]);

  before(async () => {
    fleet = await startFleet([
      { name: "runner-01", files: { [MOTD]: { contents: LIVE, mode: "0644" } } },
    ]);
    manifests = await tree({
      "nodes/runner-01.yaml": `files:\n  - { path: ${MOTD}, contents: "welcome\\n" }\n`,
    });
    // propose commits on top of the manifests' commit.
    const git = (...args: string[]) =>
      execa("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], {
        cwd: manifests,
      });
    await git("init", "-q");
    await git("add", ".");
    await git("commit", "-qm", "manifests");
    report = path.join(await tree({}), "report.json");
  });
  after(() => fleet?.stop());

  test("audit --verbose in text, markdown and events", async () => {
    for (const format of ["text", "markdown", "events"]) {
      const result = await cli(["audit", "--format", format, "--verbose"]);
      assert.equal(result.exitCode, 1, result.stdout + result.stderr);
      assertRunnerSafe(result, `audit --format ${format}`);
    }
    const saved = await cli(["audit", "--format", "json", "--out", report]);
    assert.equal(saved.exitCode, 1, saved.stderr);
  });

  test("report from the saved JSON, and JSON on stdout still reads back as the host's text", async () => {
    for (const format of ["text", "markdown", "json", "junit"]) {
      const result = await runCli(["report", "--report", report, "--format", format]);
      assert.equal(result.exitCode, 0, result.stderr);
      assertRunnerSafe(result, `report --format ${format}`);
      if (format === "json") {
        const [node] = (JSON.parse(result.stdout) as { nodes: { drift: { live: unknown }[] }[] })
          .nodes;
        assert.equal(node!.drift[0]!.live, LIVE);
      }
    }
  });

  test("diff --category files --verbose", async () => {
    const result = await cli(["diff", "--category", "files", "--verbose"]);
    assert.equal(result.exitCode, 1, result.stderr);
    assertRunnerSafe(result, "diff");
    assert.match(result.stdout, /^\+##\\u005berror\]x$/m, "the line is shown, defused");
  });

  test("propose --dry-run", async () => {
    const result = await runCli(
      ["propose", "--dry-run", "--report", report, "--manifests", manifests],
      { env: { GITHUB_REPOSITORY: "", GITHUB_TOKEN: "" } },
    );
    assert.equal(result.exitCode, 0, result.stderr);
    assertRunnerSafe(result, "propose --dry-run");
    assert.match(result.stdout, /would open/);
  });

  test("snapshot declares the file exactly, in YAML every reader reads alike", async () => {
    const result = await cli(["snapshot", "--node", "runner-01", "--category", "files"]);
    assert.equal(result.exitCode, 0, result.stderr);
    assertRunnerSafe(result, "snapshot");
    const spec = parse(result.stdout) as { files: { path: string; contents: string }[] };
    assert.equal(spec.files.find((f) => f.path === MOTD)?.contents, LIVE);
    const [py] = await pyyamlLoad([result.stdout]);
    assert.ok(py && "value" in py, `PyYAML refused: ${py && "error" in py ? py.error : ""}`);
    assert.equal(JSON.stringify(py.value), JSON.stringify(spec));
  });

  test("validate names a contributor's key holding them without printing a runner line", async () => {
    const dir = await tree({
      "nodes/web-01.yaml": `${JSON.stringify({ "##[error]x": 1, "\u00a0::error::x": 2 })}\n`,
    });
    const result = await runCli(["validate", "--manifests", dir]);
    assert.equal(result.exitCode, 2, result.stderr);
    assertRunnerSafe(result, "validate");
    assert.match(result.stderr, /##\\u005berror\]x/, result.stderr);
  });
});
