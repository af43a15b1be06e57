// Rules every workflow keeps, read from the files: least privilege, no untrusted text in scripts,
// pinned actions, no trust on first use. The behaviour itself is tested by running them.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { parse } from "yaml";
import { REPO_ROOT } from "../support/cli.js";

const DIR = path.join(REPO_ROOT, ".github/workflows");
type Step = { name?: string; uses?: string; run?: string; with?: Record<string, unknown> };
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
// This project's own CI and release; the others are what a fleet repository runs.
const ours = workflows.filter((w) => !["ci.yml", "release.yml"].includes(w.file));
// Jobs that may write, and nothing else may.
const WRITERS = new Set([
  "drift-audit.yml/propose",
  "refresh-prs.yml/refresh",
  "review-command.yml/command",
  "release.yml/attest",
  "release.yml/publish",
]);
// The composite actions' steps, checked by the same rules as a job's.
const actions = ["action.yml", "ssh/action.yml"].map((file) => ({
  file,
  text: readFileSync(path.join(REPO_ROOT, file), "utf8"),
  action: parse(readFileSync(path.join(REPO_ROOT, file), "utf8")) as {
    runs: { using: string; steps: Step[] };
  },
}));
const jobsAndAction = [
  ...workflows.flatMap(({ file, workflow }) =>
    Object.entries(workflow.jobs).map(([id, job]) => ({ where: `${file}/${id}`, job })),
  ),
  ...actions.map(({ file, action }) => ({ where: file, job: { steps: action.runs.steps } })),
];

test("the Quartermaster workflows are all here", () => {
  assert.deepEqual(ours.map((w) => w.file).sort(), [
    "drift-audit.yml",
    "manifest-review.yml",
    "refresh-prs.yml",
    "review-command.yml",
  ]);
});

test("no permissions at the top; each job is granted its own, and only the propose, refresh and review jobs write", () => {
  for (const { file, workflow } of workflows.filter((w) => w.file !== "ci.yml")) {
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
  for (const { where, job } of jobsAndAction)
    for (const step of job.steps)
      if (step.run) assert.doesNotMatch(step.run, /\$\{\{/, `${where}: ${step.run}`);
});

test("checkouts never keep credentials, and actions are pinned by commit SHA", () => {
  for (const { where, job } of jobsAndAction)
    for (const step of job.steps.filter((s) => s.uses)) {
      assert.match(
        step.uses!,
        /^[\w.-]+\/[\w.-]+(\/[\w.-]+)?@[0-9a-f]{40}$/,
        `${where}: ${step.uses}`,
      );
      if (step.uses!.startsWith("actions/checkout@"))
        assert.equal(step.with?.["persist-credentials"], false, where);
    }
});

test("the fleet workflows are callable, run where the caller says, and install a release through the action", () => {
  for (const { file, action } of actions) assert.equal(action.runs.using, "composite", file);
  for (const { file, workflow } of ours) {
    const call = workflow.on.workflow_call as { inputs: Record<string, unknown> } | undefined;
    assert.ok(call, `${file} has no workflow_call`);
    for (const input of ["runs-on", "node-version", "quartermaster-version"])
      assert.ok(input in call.inputs, `${file}: no ${input} input`);
    for (const [id, job] of Object.entries(workflow.jobs)) {
      assert.match(
        String((job as { "runs-on"?: string })["runs-on"]),
        /inputs\.runs-on/,
        `${file}/${id}`,
      );
      // The heartbeat pings with curl alone (action.yml's own download needs it): the install may
      // be what failed the run.
      if (`${file}/${id}` === "drift-audit.yml/heartbeat") {
        assert.ok(!job.steps.some((s) => s.uses), `${file}/${id} runs nothing but curl`);
        continue;
      }
      const install = job.steps.find((s) => s.name === "Install Quartermaster");
      assert.match(install?.uses ?? "", /^[\w.-]+\/quartermaster@[0-9a-f]{40}$/, `${file}/${id}`);
      assert.ok(!job.steps.some((s) => /\bnpm ci\b|\bnpx\b/.test(s.run ?? "")), `${file}/${id}`);
    }
  }
});

test("the fleet workflows install the release package.json names, as release.yml checks", () => {
  const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as {
    version: string;
  };
  for (const { file, text } of ours) {
    // A pinned action's release, in the comment after its SHA, is that action's own.
    const own = text.replace(/^.*uses: (?![\w.-]+\/quartermaster[@/]).*$/gm, "");
    // One commit of this repository's actions, as release.yml checks against the tag's history.
    const pins = new Set(
      [...text.matchAll(/uses: [\w.-]+\/quartermaster(?:\/ssh)?@(\w+)/g)].map((m) => m[1]),
    );
    assert.equal(pins.size, 1, `${file}: ${[...pins].join(", ")}`);
    assert.deepEqual([...new Set(own.match(/v\d+\.\d+\.\d+[\w.-]*/g))], [`v${version}`], file);
  }
});

test("pull requests are reviewed with pull_request, never pull_request_target", () => {
  for (const { file, workflow } of workflows)
    assert.ok(!("pull_request_target" in workflow.on), file);
  const { on } = workflows.find((w) => w.file === "manifest-review.yml")!.workflow;
  assert.deepEqual(Object.keys(on), ["pull_request", "workflow_call"]);
  assert.deepEqual(on.pull_request, { paths: ["fleet-manifests/**"] });
});

test("drift-audit runs off the hour, never cancels a running audit, and never learns host keys", () => {
  const { workflow, text } = workflows.find((w) => w.file === "drift-audit.yml")!;
  const [schedule] = workflow.on.schedule as { cron: string }[];
  assert.notEqual(schedule!.cron.split(" ")[0], "0");
  assert.equal(workflow.concurrency!["cancel-in-progress"], false);
  assert.ok(["workflow_dispatch", "workflow_call"].every((e) => e in workflow.on));
  for (const { file, text: t } of [...ours, ...actions])
    assert.doesNotMatch(t, /ssh-keyscan|StrictHostKeyChecking[= ]+(no|accept-new)/, file);
  // Its SSH comes from the ssh action, which checks host keys strictly.
  assert.match(text, /uses: [\w.-]+\/quartermaster\/ssh@[0-9a-f]{40} # v[\d.]+\n/);
  assert.match(actions.find((a) => a.file === "ssh/action.yml")!.text, /StrictHostKeyChecking yes/);
});

test("the release cache is keyed by repository, version and pinned digest", () => {
  const { action } = actions.find((a) => a.file === "action.yml")!;
  const cache = action.runs.steps.find((s) => s.uses?.startsWith("actions/cache@"));
  const key = String(cache?.with?.key);
  for (const part of ["steps.release.outputs.repository", "inputs.version", "inputs.sha256"])
    assert.ok(key.includes(part), `${key} leaves out ${part}`);
});

test("release.yml attests the tarball and the executable before publishing them, and only its attest job may sign", () => {
  const { workflow } = workflows.find((w) => w.file === "release.yml")!;
  const jobs = workflow.jobs as Record<string, Job & { needs?: string | string[] }>;
  // The OIDC token and the attestations API, for the attest job alone.
  for (const [id, job] of Object.entries(jobs))
    assert.deepEqual(
      Object.keys(job.permissions!).filter((p) => ["id-token", "attestations"].includes(p)),
      id === "attest" ? ["id-token", "attestations"] : [],
      id,
    );
  assert.deepEqual(jobs.attest!.permissions, {
    contents: "read",
    "id-token": "write",
    attestations: "write",
  });
  assert.deepEqual(jobs.build!.permissions, { contents: "read" });
  assert.deepEqual(jobs.publish!.permissions, { contents: "write" });
  // build uploads, attest attests what it downloads, publish waits for both.
  assert.equal(jobs.attest!.needs, "build");
  assert.deepEqual(jobs.publish!.needs, ["build", "attest"]);
  const uses = (job: Job) => job.steps.map((s) => s.uses?.split("@")[0] ?? s.name);
  assert.deepEqual(uses(jobs.attest!), [
    "actions/download-artifact",
    "actions/attest-build-provenance",
  ]);
  const subjects = String(jobs.attest!.steps[1]!.with?.["subject-path"]).trim().split("\n");
  assert.deepEqual(subjects, [
    "${{ runner.temp }}/release/quartermaster-*.tgz",
    "${{ runner.temp }}/release/quartermaster-linux-x64",
  ]);
  assert.deepEqual(uses(jobs.publish!), [
    "actions/download-artifact",
    "Create the GitHub release with its assets",
  ]);
  const built = uses(jobs.build!);
  assert.ok(
    built.indexOf("SHA-256 of each artifact") < built.indexOf("actions/upload-artifact"),
    built.join(", "),
  );
});
