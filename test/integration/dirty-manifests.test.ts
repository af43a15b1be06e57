// A report says when the manifests it audited were not all committed: its revision alone would
// name a commit that does not hold what was checked.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import type { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { removeTree, writeTree } from "../support/tree.js";

describe("a manifest tree with uncommitted changes", () => {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map(removeTree)));

  it("is flagged in the JSON report, the text summary and the Markdown; a committed tree is not", async () => {
    const repo = await writeTree({
      "fleet-manifests/nodes/localhost.yaml": "system:\n  sysctl_parameters: {}\n",
    });
    dirs.push(repo);
    const git = (...args: string[]) =>
      execa("git", ["-c", "user.name=t", "-c", "user.email=t@example.net", ...args], { cwd: repo });
    await git("init", "-q");
    await git("add", ".");
    await git("commit", "-qm", "manifests");
    const audit = async (format: string) =>
      runCli(["audit", "--local", "--nodes", "localhost", "--format", format], { cwd: repo });

    const clean = JSON.parse((await audit("json")).stdout) as Report;
    assert.equal(clean.manifestDirty, undefined);
    assert.match(clean.manifestRevision ?? "", /^[0-9a-f]{40}$/);

    await writeFile(
      path.join(repo, "fleet-manifests/nodes/localhost.yaml"),
      "system:\n  kernel_version: '0.0.0-edited'\n",
    );
    const dirty = JSON.parse((await audit("json")).stdout) as Report;
    assert.equal(dirty.manifestDirty, true);
    assert.equal(dirty.manifestRevision, clean.manifestRevision);
    assert.match(
      (await audit("text")).stdout,
      /; the manifests audited have uncommitted changes$/m,
    );
    assert.match(
      (await audit("markdown")).stdout,
      /at manifest revision `[0-9a-f]{12}` with uncommitted changes/,
    );
  });
});
