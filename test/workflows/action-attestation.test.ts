// action.yml's provenance check, its script run by bash as a runner runs it, with a stand-in `gh`
// on PATH: off by default, after the download and before the install, and a clear failure.
import assert from "node:assert/strict";
import { chmod, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { before, describe, it } from "node:test";
import { execa } from "execa";
import { parse } from "yaml";
import { REPO_ROOT } from "../support/cli.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();
const STEP = "Verify the build provenance";
type Action = {
  inputs: Record<string, { default?: string }>;
  runs: { steps: { name?: string; id?: string; if?: string; run?: string }[] };
};

describe("action.yml verifies the release's build provenance when asked", () => {
  let action: Action;
  let script: string;
  before(async () => {
    action = parse(await readFile(path.join(REPO_ROOT, "action.yml"), "utf8")) as Action;
    script = action.runs.steps.find((s) => s.name === STEP)!.run!;
  });

  /** The step's script with `gh` answering `exit` and `said` (none: no gh on PATH). */
  const verify = async (gh?: { exit: number; said: string }) => {
    const bin = await tree();
    const calls = path.join(bin, "calls");
    if (gh) {
      await writeFile(
        path.join(bin, "gh"),
        `#!/bin/sh\necho "$*" >> "${calls}"\necho '${gh.said}'\nexit ${gh.exit}\n`,
      );
      await chmod(path.join(bin, "gh"), 0o755);
    }
    const run = await execa("bash", ["-e", "-c", script], {
      cwd: await tree({ "quartermaster-0.1.0.tgz": "tarball" }),
      reject: false,
      extendEnv: false,
      env: {
        PATH: `${bin}:/usr/bin:/bin`,
        TARBALL: "quartermaster-0.1.0.tgz",
        REPOSITORY: "OWNER/quartermaster",
        GH_TOKEN: "token",
      },
    });
    return { run, calls: await readFile(calls, "utf8").catch(() => "") };
  };

  it("is off by default, and runs after the download, before the install", () => {
    assert.equal(action.inputs["verify-attestation"]?.default, "false");
    const step = action.runs.steps.find((s) => s.name === STEP)!;
    assert.equal(step.if, "inputs.verify-attestation == 'true'");
    const names = action.runs.steps.map((s) => s.name ?? s.id);
    assert.ok(names.indexOf("Download the release") < names.indexOf(STEP), names.join(", "));
    assert.ok(
      names.indexOf(STEP) < names.indexOf("Check the SHA-256 and install"),
      names.join(", "),
    );
  });

  it("asks gh for an attestation signed by the repository's release workflow", async () => {
    const { run, calls } = await verify({ exit: 0, said: "Verification succeeded!" });
    assert.equal(run.exitCode, 0, run.stdout + run.stderr);
    assert.equal(
      calls,
      "attestation verify quartermaster-0.1.0.tgz --repo OWNER/quartermaster --signer-workflow OWNER/quartermaster/.github/workflows/release.yml\n",
    );
  });

  it("fails, saying why in gh's words, when the tarball has no such attestation", async () => {
    const { run } = await verify({ exit: 1, said: "Error: no attestations found" });
    assert.equal(run.exitCode, 1);
    assert.match(
      run.stdout,
      /^::error::quartermaster-0\.1\.0\.tgz has no build provenance from OWNER\/quartermaster's release workflow, not installed: Error: no attestations found$/m,
    );
  });

  it("fails with what to do when gh is not on the runner", async () => {
    const { run } = await verify();
    assert.equal(run.exitCode, 1);
    assert.match(
      run.stdout,
      /^::error::verify-attestation needs the GitHub CLI \(gh\) on the runner/m,
    );
  });
});
