// Rules every workflow keeps, read from the files: least privilege, no untrusted text in scripts,
// pinned actions, no trust on first use. The behaviour itself is tested by running them.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { parse } from "yaml";
import { REPO_ROOT } from "../support/cli.js";

const DIR = path.join(REPO_ROOT, ".github/workflows");
type Step = { uses?: string; run?: string; with?: Record<string, unknown> };
type Job = { permissions?: Record<string, string>; steps: Step[] };
type Workflow = {
  on: Record<string, unknown>;
  permissions?: unknown;
  concurrency?: { group: string; "cancel-in-progress": boolean };
  jobs: Record<string, Job>;
};
const workflows = readdirSync(DIR)
  .filter((f) => f.endsWith(".yml"))
  .map((file) => ({
    file,
    text: readFileSync(path.join(DIR, file), "utf8"),
    workflow: parse(readFileSync(path.join(DIR, file), "utf8")) as Workflow,
  }));
const ours = workflows.filter((w) => w.file !== "ci.yml");
// Jobs that may write, and nothing else may.
const WRITERS = new Set(["drift-audit.yml/propose", "review-command.yml/command"]);

test("the Quartermaster workflows are all here", () => {
  assert.deepEqual(ours.map((w) => w.file).sort(), [
    "drift-audit.yml",
    "manifest-review.yml",
    "review-command.yml",
  ]);
});

test("no permissions at the top; each job is granted its own, and only the propose and review jobs write", () => {
  for (const { file, workflow } of ours) {
    assert.deepEqual(workflow.permissions, {}, file);
    for (const [id, job] of Object.entries(workflow.jobs)) {
      assert.ok(job.permissions, `${file}/${id} has no permissions of its own`);
      const writes = Object.values(job.permissions).includes("write");
      assert.equal(
        writes,
        WRITERS.has(`${file}/${id}`),
        `${file}/${id}: ${JSON.stringify(job.permissions)}`,
      );
    }
  }
});

test("no expression is expanded inside a script: values reach run steps through env, quoted", () => {
  for (const { file, workflow } of workflows) {
    for (const [id, job] of Object.entries(workflow.jobs)) {
      for (const step of job.steps)
        if (step.run) assert.doesNotMatch(step.run, /\$\{\{/, `${file}/${id}: ${step.run}`);
    }
  }
});

test("checkouts never keep credentials, and actions are pinned at least by major version", () => {
  for (const { file, workflow } of workflows) {
    for (const [id, job] of Object.entries(workflow.jobs)) {
      for (const step of job.steps.filter((s) => s.uses)) {
        assert.match(
          step.uses!,
          /^[\w.-]+\/[\w.-]+@(v\d+|[0-9a-f]{40})$/,
          `${file}/${id}: ${step.uses}`,
        );
        if (step.uses!.startsWith("actions/checkout@"))
          assert.equal(step.with?.["persist-credentials"], false, `${file}/${id}`);
      }
    }
  }
});

test("pull requests are reviewed with pull_request, never pull_request_target", () => {
  for (const { file, workflow } of workflows)
    assert.ok(!("pull_request_target" in workflow.on), file);
  assert.deepEqual(workflows.find((w) => w.file === "manifest-review.yml")!.workflow.on, {
    pull_request: { paths: ["fleet-manifests/**"] },
  });
});

test("drift-audit runs off the hour, never cancels a running audit, and never learns host keys", () => {
  const { workflow, text } = workflows.find((w) => w.file === "drift-audit.yml")!;
  const [schedule] = workflow.on.schedule as { cron: string }[];
  assert.notEqual(schedule!.cron.split(" ")[0], "0");
  assert.equal(workflow.concurrency!["cancel-in-progress"], false);
  assert.ok(["workflow_dispatch", "workflow_call"].every((e) => e in workflow.on));
  for (const { file, text: t } of ours)
    assert.doesNotMatch(t, /ssh-keyscan|StrictHostKeyChecking[= ]+(no|accept-new)/, file);
  assert.match(text, /StrictHostKeyChecking yes/);
});
