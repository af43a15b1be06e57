// Every flag that takes a whole number reads it one way, through the real CLI: decimal digits only,
// and anything else (a negative number, 1e2, 0x10, "", 1.5) is a usage error naming the flag.
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { runCli } from "../support/cli.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();

describe("whole-number flags", () => {
  let dir: string;
  before(async () => {
    dir = await tree({ "nodes/web-01.yaml": "{}\n" });
  });

  const manifests = ["--manifests", "."];
  const cases: [string[], string, string][] = [
    [["audit", ...manifests], "concurrency", "-1"],
    [["audit", ...manifests], "timeout", "0x10"],
    [["audit", ...manifests], "concurrency", "0"],
    [["snapshot", "--node", "web-01", ...manifests], "timeout", "-5"],
    [["plan-shards", ...manifests], "shards", "1e2"],
    [["plan-shards", ...manifests], "shards", "0x10"],
    [["plan-shards", ...manifests], "shards", ""],
    [["plan-shards", ...manifests], "shards", "-1"],
    [["plan-shards", ...manifests], "nodes-per-shard", "-3"],
    [["report", "--report", "r.json", "--format", "markdown"], "max-bytes", "1.5"],
    [["propose", "--report", "r.json", ...manifests], "max-new-prs", "-1"],
    [["propose", "--report", "r.json", ...manifests], "max-new-prs", "1e2"],
    [["diff", "--category", "files", ...manifests], "concurrency", "3.0"],
    [["adopt", "--inventory", "hosts"], "timeout", "1.5"],
    [["watch", "--local", ...manifests], "interval", "1e2"],
    [["review", "--event", "event.json", ...manifests], "timeout", "0x10"],
    [["manifest-diff", "--base", "HEAD", ...manifests], "max-bytes", "1e4"],
  ];
  for (const [command, flag, value] of cases) {
    it(`${command[0]} --${flag} ${JSON.stringify(value)} is a usage error naming the flag`, async () => {
      const result = await runCli([...command, `--${flag}`, value], {
        cwd: dir,
      });
      assert.equal(result.exitCode, 2, result.stderr);
      assert.match(
        result.stderr,
        new RegExp(
          `^quartermaster: --${flag} takes a whole number .*, not "${value.replace(".", "\\.")}"$`,
          "m",
        ),
      );
      assert.doesNotMatch(result.stderr, /ambiguous|^\s+at /m);
    });
  }

  it("a flag is checked before the manifests are read or a repository is pulled", async () => {
    for (const where of [
      ["--manifests", "/nonexistent-manifests"],
      ["--repo", "https://git.invalid/fleet.git"],
    ]) {
      const result = await runCli(["audit", ...where, "--shard", "1/2", "--timeout", "1e2"], {
        cwd: dir,
      });
      assert.equal(result.exitCode, 2, result.stderr);
      assert.match(
        result.stderr,
        /^quartermaster: --timeout takes a whole number of at least 1, not "1e2"$/m,
      );
    }
  });

  it("a whole number is taken, 0 where the flag allows it", async () => {
    const result = await runCli(["plan-shards", "--shards", "0", "--nodes-per-shard", "007"], {
      cwd: dir,
    });
    assert.equal(result.exitCode, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), { count: 1, shards: [1], nodes: 1 });
  });
});
