// Runs a workflow file's jobs the way GitHub Actions would, on this machine: jobs in `needs`
// order, matrices expanded, each `run:` step in `bash -e -o pipefail` with its own
// GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH and GITHUB_STEP_SUMMARY files, artifacts as
// directories. The `uses:` actions it emulates are listed in ACTIONS; any other one fails, unless
// it is a composite action or a reusable workflow of a repository in `repositories`: those run from
// that repository's files, as GitHub runs another repository's action.yml and workflows.
import { cp, mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { parse as parseYaml } from "yaml";
import { condition, interpolate, toText, type Contexts, type Value } from "./expressions.js";

// GitHub's limits, checked on every step and job.
export const SUMMARY_BYTES_PER_STEP = 1024 * 1024;
export const ANNOTATIONS_PER_STEP = 10;
export const ANNOTATIONS_PER_JOB = 50;

export interface Annotation {
  level: "error" | "warning" | "notice";
  file?: string;
  line?: number;
  title?: string;
  message: string;
}

export interface StepResult {
  name: string;
  outcome: "success" | "failure" | "skipped";
  exitCode?: number;
  stdout: string;
  stderr: string;
  summary: string;
  annotations: Annotation[];
  /** A composite action's own steps. */
  steps?: StepResult[];
}

export interface JobResult {
  /** `audit (shard: 2)` for a matrix instance. */
  name: string;
  id: string;
  /** The runner labels the job asked for (`runs-on`, evaluated). */
  runsOn: string[];
  result: "success" | "failure" | "skipped";
  permissions: Record<string, string>;
  outputs: Record<string, string>;
  steps: StepResult[];
}

export interface RunResult {
  jobs: JobResult[];
  artifacts: string;
  /** Broken GitHub limits: summary size, annotation counts. Empty when the run kept to them. */
  limitViolations: string[];
  job(id: string): JobResult[];
}

export interface RunOptions {
  workflow: string;
  event: { name: string; payload: Record<string, unknown> };
  /** The inputs context: typed values, as workflow_dispatch and workflow_call give them. */
  inputs?: Record<string, Value>;
  repository: { fullName: string; barePath: string; sha: string; ref: string };
  /** github.token of a job granted any write permission, and of one that may only read. */
  tokens: { write: string; read: string };
  secrets?: Record<string, string>;
  vars?: Record<string, string>;
  apiUrl: string;
  serverUrl: string;
  /** Scratch directory for workspaces, runner temp dirs and artifacts. */
  workDir: string;
  /**
   * The GitHub App installed on the repository: actions/create-github-app-token answers its
   * client ID and private key with `token`, for the App `slug`, and any other pair as GitHub does.
   */
  app?: { clientId: string; privateKey: string; token: string; slug: string };
  /** Set on the runner machine itself, beside what Actions sets. */
  machineEnv?: Record<string, string>;
  /** The labels of this machine's runner; a job whose `runs-on` asks for another fails the run. */
  labels?: string[];
  /**
   * Other repositories by `owner/name`, each a local directory: their action.yml and
   * .github/workflows/ are what `uses: owner/name@ref` and `uses: owner/name/.github/workflows/x.yml@ref`
   * run.
   */
  repositories?: Record<string, string>;
  /** Where actions/cache keeps its entries; shared by the runs given the same directory. */
  cacheDir?: string;
  /**
   * The repository's environments by name: their secrets, and the branches their deployment
   * branch policy allows (every branch when absent). A job naming an environment that is not here
   * runs in a new, empty one, as GitHub creates an environment a workflow names.
   */
  environments?: Record<string, { secrets?: Record<string, string>; branches?: string[] }>;
}

const HOSTED_LABELS = ["ubuntu-24.04"];

type Workflow = {
  on?: {
    workflow_call?: {
      inputs?: Record<string, { type: string; default?: Value; required?: boolean }>;
      secrets?: Record<string, { required?: boolean }>;
    };
  };
  env?: Record<string, string>;
  jobs: Record<string, Job>;
};
type Job = {
  name?: string;
  needs?: string | string[];
  if?: string | boolean;
  "runs-on"?: string | string[];
  /** A reusable workflow: `owner/name/.github/workflows/file.yml@ref`. */
  uses?: string;
  with?: Record<string, Value>;
  secrets?: "inherit" | Record<string, string>;
  permissions?: Record<string, string>;
  outputs?: Record<string, string>;
  environment?: string | { name: string; url?: string };
  strategy?: { matrix: string | Record<string, unknown>; "fail-fast"?: boolean };
  env?: Record<string, string>;
  steps: Step[];
};
type Step = {
  id?: string;
  name?: string;
  if?: string | boolean;
  uses?: string;
  with?: Record<string, string | number | boolean>;
  run?: string;
  env?: Record<string, string>;
  "working-directory"?: string;
  shell?: string;
};

const JOB_KEYS = new Set([
  "name",
  "needs",
  "if",
  "runs-on",
  "timeout-minutes",
  "permissions",
  "outputs",
  "environment",
  "strategy",
  "env",
  "steps",
  "concurrency",
  "uses",
  "with",
  "secrets",
]);
const STEP_KEYS = new Set([
  "id",
  "name",
  "if",
  "uses",
  "with",
  "run",
  "env",
  "working-directory",
  "shell",
]);

interface StepContext {
  with: Record<string, string>;
  workspace: string;
  temp: string;
  options: RunOptions;
  outputs: Record<string, string>;
  /** Registers what the action does after the job's steps (a post step), if the job succeeded. */
  post: (run: () => Promise<void>) => void;
  /** Puts a directory first on PATH for the job's next steps, as GITHUB_PATH does. */
  addPath: (dir: string) => void;
}

/**
 * The actions this runner emulates, by name: each at the commit the workflows pin (`uses:
 * name@sha`), the release that commit is named for, and the inputs of that release it emulates.
 */
export const ACTIONS: Record<
  string,
  { sha: string; version: string; inputs: string[]; run: (ctx: StepContext) => Promise<void> }
> = {
  "actions/checkout": {
    sha: "3d3c42e5aac5ba805825da76410c181273ba90b1",
    version: "v7.0.1",
    inputs: ["persist-credentials", "fetch-depth", "ref"],
    run: async ({ with: w, workspace, options }) => {
      await execa("git", [
        "clone",
        "--quiet",
        "--no-checkout",
        options.repository.barePath,
        workspace,
      ]);
      await execa("git", [
        "-C",
        workspace,
        "checkout",
        "--quiet",
        "--detach",
        w.ref || options.repository.sha,
      ]);
    },
  },
  "actions/setup-node": {
    sha: "820762786026740c76f36085b0efc47a31fe5020",
    version: "v7.0.0",
    inputs: ["node-version", "cache", "package-manager-cache"],
    run: async ({ with: w, addPath }) => {
      // The runner's tool cache: this machine's Node and those QUARTERMASTER_TEST_NODES lists.
      const wanted = w["node-version"]!;
      const found = await nodeOf(wanted);
      if (!found)
        throw new Error(
          `setup-node ${wanted}: this runner has Node ${process.version} and no Node ${wanted} in QUARTERMASTER_TEST_NODES`,
        );
      addPath(found);
    },
  },
  "actions/upload-artifact": {
    sha: "bbbca2ddaa5d8feaa63e36b76fdaad77386f024f",
    version: "v7.0.0",
    inputs: ["name", "path", "if-no-files-found", "retention-days"],
    run: async ({ with: w, workspace, options }) => {
      const target = path.join(options.workDir, "artifacts", w.name!);
      if (await exists(target))
        throw new Error(`artifact ${w.name} already exists (v4 artifacts are immutable)`);
      const source = path.resolve(workspace, w.path!);
      if (!(await exists(source))) {
        if (w["if-no-files-found"] === "error") throw new Error(`no files at ${w.path}`);
        return;
      }
      await mkdir(target, { recursive: true });
      const isDir = (await stat(source)).isDirectory();
      await cp(source, isDir ? target : path.join(target, path.basename(source)), {
        recursive: true,
      });
    },
  },
  "actions/download-artifact": {
    sha: "3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c",
    version: "v8.0.1",
    inputs: ["name", "pattern", "path"],
    run: async ({ with: w, workspace, options }) => {
      const root = path.join(options.workDir, "artifacts");
      const dest = path.resolve(workspace, w.path ?? ".");
      if (w.name) {
        if (!(await exists(path.join(root, w.name)))) throw new Error(`no artifact ${w.name}`);
        await cp(path.join(root, w.name), dest, { recursive: true });
        return;
      }
      const pattern = new RegExp(
        `^${(w.pattern ?? "*").replace(/[.+?^${}()|[\]\\]/g, "\\$&").replaceAll("*", ".*")}$`,
      );
      const names = (await exists(root))
        ? (await readdir(root)).filter((n) => pattern.test(n))
        : [];
      for (const name of names)
        await cp(path.join(root, name), path.join(dest, name), { recursive: true });
    },
  },
  "actions/cache": {
    sha: "27d5ce7f107fe9357f9df03efb73ab90386fccae",
    version: "v5.0.5",
    inputs: ["path", "key"],
    run: async ({ with: w, workspace, options, outputs, post }) => {
      const entry = path.join(
        options.cacheDir ?? path.join(options.workDir, "cache"),
        encodeURIComponent(w.key!),
      );
      const target = path.resolve(workspace, w.path!);
      if (await exists(entry)) {
        await cp(entry, target, { recursive: true });
        outputs["cache-hit"] = "true";
        return;
      }
      outputs["cache-hit"] = "false";
      // Saved at the end of the job, as actions/cache's post step does; an entry is never replaced.
      post(async () => {
        if ((await exists(target)) && !(await exists(entry)))
          await cp(target, entry, { recursive: true });
      });
    },
  },
  "actions/create-github-app-token": {
    sha: "1b10c78c7865c340bc4f6099eb2f838309f1e8c3",
    version: "v3.1.1",
    inputs: ["client-id", "private-key"],
    run: async ({ with: w, options, outputs }) => {
      if (!w["private-key"]) throw new Error("Input required and not supplied: private-key");
      const { app } = options;
      if (!app) throw new Error("create-github-app-token: this test installed no GitHub App");
      if (w["client-id"] !== app.clientId || w["private-key"] !== app.privateKey) {
        // GitHub refuses a JWT not signed by the App's key; the action tries four times, then fails.
        const refusal = "A JSON web token could not be decoded - https://docs.github.com/rest";
        const repo = options.repository.fullName.split("/")[1]!;
        throw new Error(
          [1, 2, 3, 4]
            .map((n) => `Failed to create token for "${repo}" (attempt ${n}): ${refusal}\n`)
            .join("") + refusal,
        );
      }
      outputs.token = app.token;
      // The App acts as `<app-slug>[bot]`.
      outputs["app-slug"] = app.slug;
    },
  },
};

/**
 * The directory of a `node` of version `wanted` (`24`, `20.12`), as setup-node puts it
 * first on PATH: this process's own, or one of the bin directories QUARTERMASTER_TEST_NODES lists (`:` apart).
 */
async function nodeOf(wanted: string): Promise<string | undefined> {
  const dirs = [
    path.dirname(process.execPath),
    ...(process.env.QUARTERMASTER_TEST_NODES ?? "").split(":").filter(Boolean),
  ];
  for (const dir of dirs) {
    const version = await execa(path.join(dir, "node"), ["--version"], { reject: false });
    if (version.exitCode === 0 && `${version.stdout}.`.startsWith(`v${wanted}.`)) return dir;
  }
  return undefined;
}

async function exists(file: string): Promise<boolean> {
  return (await stat(file).catch(() => undefined)) !== undefined;
}

/** `name=value` lines and `name<<DELIMITER` blocks, as GITHUB_OUTPUT and GITHUB_ENV hold them. */
export function parseKeyValueFile(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!line) continue;
    const block = /^([^=<]+)<<(.+)$/.exec(line);
    if (block) {
      const end = lines.indexOf(block[2]!, i + 1);
      if (end < 0) throw new Error(`unterminated ${block[2]} block for ${block[1]}`);
      values[block[1]!] = lines.slice(i + 1, end).join("\n");
      i = end;
      continue;
    }
    const eq = line.indexOf("=");
    if (eq < 0) throw new Error(`not name=value: ${line}`);
    values[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return values;
}

const unescapeData = (s: string) =>
  s.replaceAll("%0D", "\r").replaceAll("%0A", "\n").replaceAll("%25", "%");
const unescapeProperty = (s: string) =>
  unescapeData(s.replaceAll("%3A", ":").replaceAll("%2C", ","));

/** The annotations a step's output asks for, parsed as the runner parses workflow commands. */
export function parseAnnotations(stdout: string): Annotation[] {
  const annotations: Annotation[] = [];
  for (const line of stdout.split("\n")) {
    const m = /^::(error|warning|notice)(?: ([^:]*))?::(.*)$/.exec(line);
    if (!m) continue;
    const props = Object.fromEntries(
      (m[2] ?? "")
        .split(",")
        .filter(Boolean)
        .map((p) => [p.slice(0, p.indexOf("=")), unescapeProperty(p.slice(p.indexOf("=") + 1))]),
    );
    annotations.push({
      level: m[1] as Annotation["level"],
      message: unescapeData(m[3]!),
      ...(props.file !== undefined && { file: props.file }),
      ...(props.line !== undefined && { line: Number(props.line) }),
      ...(props.title !== undefined && { title: props.title }),
    });
  }
  return annotations;
}

function order(jobs: Record<string, Job>): string[] {
  const done: string[] = [];
  const visit = (id: string, stack: string[]) => {
    if (done.includes(id)) return;
    if (stack.includes(id)) throw new Error(`needs cycle: ${[...stack, id].join(" -> ")}`);
    const job = jobs[id];
    if (!job) throw new Error(`needs names no job "${id}"`);
    for (const need of [job.needs ?? []].flat()) visit(need, [...stack, id]);
    done.push(id);
  };
  for (const id of Object.keys(jobs)) visit(id, []);
  return done;
}

function expandMatrix(matrix: Value): Record<string, Value>[] {
  if (!matrix || typeof matrix !== "object" || Array.isArray(matrix))
    throw new Error(`matrix must be a map, not ${JSON.stringify(matrix)}`);
  let combos: Record<string, Value>[] = [{}];
  for (const [key, values] of Object.entries(matrix)) {
    if (key === "include" || key === "exclude")
      throw new Error("matrix include/exclude are not emulated");
    if (!Array.isArray(values) || values.length === 0)
      throw new Error(`matrix ${key} must be a non-empty list (GitHub fails the run otherwise)`);
    combos = combos.flatMap((combo) => values.map((v) => ({ ...combo, [key]: v })));
  }
  return combos;
}

/**
 * The environment a hosted runner starts from: this machine's, without anything Actions would set.
 */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(GITHUB_|RUNNER_|NODE_TEST_CONTEXT$|NODE_OPTIONS$)/.test(k)) continue;
    env[k] = v;
  }
  return env;
}

export async function runWorkflow(options: RunOptions): Promise<RunResult> {
  const workflow = parseYaml(await readFile(options.workflow, "utf8")) as Workflow;
  const run: WorkflowRun = { options, jobs: [], limitViolations: [], instances: 0, eventPath: "" };
  await mkdir(path.join(options.workDir, "artifacts"), { recursive: true });
  run.eventPath = path.join(options.workDir, "event.json");
  await writeFile(run.eventPath, JSON.stringify(options.event.payload));
  const [owner] = options.repository.fullName.split("/");
  const github = {
    event_name: options.event.name,
    event: options.event.payload as Value,
    repository: options.repository.fullName,
    repository_owner: owner!,
    sha: options.repository.sha,
    ref: options.repository.ref,
    api_url: options.apiUrl,
    server_url: options.serverUrl,
    run_id: "1",
  };
  await runJobs(run, workflow, {
    github,
    inputs: options.inputs ?? {},
    secrets: options.secrets ?? {},
  });
  return {
    jobs: run.jobs,
    artifacts: path.join(options.workDir, "artifacts"),
    limitViolations: run.limitViolations,
    job: (id) => run.jobs.filter((j) => j.id === id),
  };
}

/** What the jobs of a run, and of the workflows it calls, share. */
interface WorkflowRun {
  options: RunOptions;
  jobs: JobResult[];
  limitViolations: string[];
  /** Jobs started so far: each gets its own directory. */
  instances: number;
  eventPath: string;
}

type JobOutcome = { result: JobResult["result"]; outputs: Record<string, string> };

/** A workflow's jobs in `needs` order; returns each job's result by id. */
async function runJobs(
  run: WorkflowRun,
  workflow: Workflow,
  given: {
    github: Record<string, Value>;
    inputs: Record<string, Value>;
    secrets: Record<string, string>;
  },
): Promise<Map<string, JobOutcome>> {
  const { options } = run;
  const results = new Map<string, JobOutcome>();
  for (const id of order(workflow.jobs)) {
    const job = workflow.jobs[id]!;
    for (const key of Object.keys(job))
      if (!JOB_KEYS.has(key)) throw new Error(`job ${id}: "${key}" is not emulated`);
    const needs = [job.needs ?? []].flat();
    const needsContext = Object.fromEntries(
      needs.map((n) => [n, { result: results.get(n)!.result, outputs: results.get(n)!.outputs }]),
    ) as Value;
    const permissions = job.permissions ?? {};
    const token = Object.values(permissions).includes("write")
      ? options.tokens.write
      : options.tokens.read;
    const jobContexts: Contexts = {
      github: { ...given.github, token, workspace: "", job: id },
      inputs: given.inputs,
      secrets: { GITHUB_TOKEN: token, ...given.secrets },
      vars: options.vars ?? {},
      needs: needsContext,
    };
    const needsOk = needs.every((n) => results.get(n)!.result === "success");
    if (!condition(job.if, jobContexts, { success: needsOk })) {
      if (!job.uses)
        run.jobs.push({
          name: id,
          id,
          runsOn: [],
          result: "skipped",
          permissions,
          outputs: {},
          steps: [],
        });
      results.set(id, { result: "skipped", outputs: {} });
      continue;
    }
    if (job.uses && job.environment !== undefined)
      throw new Error(`job ${id}: a job that calls a reusable workflow cannot name an environment`);
    const environment = jobEnvironment(job, jobContexts, options);
    if (environment.refused) {
      run.jobs.push({
        name: id,
        id,
        runsOn: [],
        result: "failure",
        permissions,
        outputs: {},
        steps: [environment.refused],
      });
      results.set(id, { result: "failure", outputs: {} });
      continue;
    }
    jobContexts.secrets = {
      ...(jobContexts.secrets as Record<string, string>),
      ...environment.secrets,
    };
    if (job.uses) {
      const called = await callWorkflow(run, job, jobContexts, given);
      results.set(id, { result: called, outputs: {} });
      continue;
    }
    const combos = job.strategy
      ? expandMatrix(resolveMatrix(job.strategy.matrix, jobContexts))
      : [undefined];
    const instances: JobResult[] = [];
    for (const matrix of combos) {
      const dir = path.join(options.workDir, "jobs", `${id}-${run.instances++}`);
      const workspace = path.join(dir, "workspace");
      const temp = path.join(dir, "temp");
      await mkdir(workspace, { recursive: true });
      await mkdir(temp, { recursive: true });
      const contexts: Contexts = {
        ...jobContexts,
        github: { ...(jobContexts.github as Record<string, Value>), workspace },
        matrix: matrix ?? {},
        runner: { temp, os: "Linux" },
        steps: {},
        env: {},
      };
      const name = matrix
        ? `${id} (${Object.entries(matrix)
            .map(([k, v]) => `${k}: ${toText(v)}`)
            .join(", ")})`
        : id;
      const result = await runJob(job, {
        id,
        name,
        permissions,
        runsOn: runnerLabels(job, contexts, options, name),
        workspace,
        temp,
        contexts,
        eventPath: run.eventPath,
        options,
        limitViolations: run.limitViolations,
        workflowEnv: workflow.env ?? {},
      });
      instances.push(result);
      run.jobs.push(result);
    }
    const failed = instances.some((r) => r.result === "failure");
    results.set(id, { result: failed ? "failure" : "success", outputs: instances.at(-1)!.outputs });
  }
  return results;
}

/**
 * The environment a job names, evaluated: its secrets, which take the place of secrets of the same
 * name, or the failed step GitHub shows when the deployment branch policy refuses the branch. An
 * empty name is no environment. The branch is the pull request's head for pull_request events
 * (GitHub checks the head branch there), else the ref the run is on; a tag is no branch.
 */
function jobEnvironment(
  job: Job,
  contexts: Contexts,
  options: RunOptions,
): { secrets: Record<string, string>; refused?: StepResult } {
  const asked = typeof job.environment === "object" ? job.environment.name : job.environment;
  const name = asked === undefined ? "" : toText(interpolate(asked, contexts));
  if (name === "") return { secrets: {} };
  const env = options.environments?.[name] ?? {};
  const event = options.event;
  const head = (event.payload.pull_request as { head?: { ref?: string } } | undefined)?.head?.ref;
  const branch = event.name.startsWith("pull_request")
    ? head
    : /^refs\/heads\/(.+)$/.exec(options.repository.ref)?.[1];
  if (env.branches && (branch === undefined || !env.branches.includes(branch)))
    return {
      secrets: {},
      refused: {
        name: `environment ${name}`,
        outcome: "failure",
        stdout: "",
        stderr: `Branch "${branch ?? options.repository.ref}" is not allowed to deploy to ${name} due to environment protection rules.`,
        summary: "",
        annotations: [],
      },
    };
  return { secrets: env.secrets ?? {} };
}

/** The labels `runs-on` asks for; a runner without all of them would never pick the job up. */
function runnerLabels(job: Job, contexts: Contexts, options: RunOptions, name: string): string[] {
  const asked = job["runs-on"];
  if (asked === undefined) throw new Error(`${name}: no runs-on`);
  const value = typeof asked === "string" ? interpolate(asked, contexts) : asked;
  const labels = [value].flat().map((v) => toText(v));
  const offered = options.labels ?? HOSTED_LABELS;
  const missing = labels.filter((l) => !offered.includes(l));
  if (labels.length === 0 || missing.length > 0)
    throw new Error(
      `${name}: runs-on ${JSON.stringify(value)}: no runner has ${JSON.stringify(missing)} (this one has ${JSON.stringify(offered)})`,
    );
  return labels;
}

/**
 * `owner/name@ref` or `owner/name/path@ref` of a repository in `repositories`, if it is one: a
 * workflow file or an action's folder (`""` for the root) in that repository.
 */
function otherRepository(
  uses: string,
  options: RunOptions,
): { dir: string; file: string; ref: string; repository: string } | undefined {
  const m = /^([\w.-]+\/[\w.-]+)(?:\/(.+))?@(.+)$/.exec(uses);
  const dir = m && options.repositories?.[m[1]!];
  return dir ? { dir, file: m[2] ?? "", ref: m[3]!, repository: m[1]! } : undefined;
}

/**
 * A job that calls a reusable workflow: its `with` checked against the workflow_call inputs (names,
 * types, required), its secrets passed or inherited, then the called workflow's jobs, which land in
 * the run's jobs under their own ids.
 */
async function callWorkflow(
  run: WorkflowRun,
  job: Job,
  contexts: Contexts,
  caller: { github: Record<string, Value>; secrets: Record<string, string> },
): Promise<JobOutcome["result"]> {
  const target = otherRepository(job.uses!, run.options);
  if (!target || !target.file.startsWith(".github/workflows/"))
    throw new Error(`uses ${job.uses}: not a workflow of a repository this runner knows`);
  const called = parseYaml(await readFile(path.join(target.dir, target.file), "utf8")) as Workflow;
  const call = called.on?.workflow_call;
  if (!call) throw new Error(`${job.uses} has no workflow_call trigger`);
  const inputs: Record<string, Value> = {};
  for (const [name, spec] of Object.entries(call.inputs ?? {})) {
    const given = job.with?.[name];
    if (given === undefined) {
      if (spec.required) throw new Error(`${job.uses}: required input ${name} not given`);
      inputs[name] =
        spec.default ?? (spec.type === "boolean" ? false : spec.type === "number" ? 0 : "");
      continue;
    }
    const value = typeof given === "string" ? interpolate(given, contexts) : given;
    if (typeof value !== spec.type)
      throw new Error(
        `${job.uses}: input ${name} must be a ${spec.type}, got ${JSON.stringify(value)}`,
      );
    inputs[name] = value;
  }
  for (const name of Object.keys(job.with ?? {}))
    if (!call.inputs?.[name]) throw new Error(`${job.uses}: no input ${name}`);
  const secrets =
    job.secrets === "inherit"
      ? { ...caller.secrets }
      : Object.fromEntries(
          Object.entries(job.secrets ?? {}).map(([k, v]) => [k, toText(interpolate(v, contexts))]),
        );
  for (const [name, spec] of Object.entries(call.secrets ?? {}))
    if (spec.required && !secrets[name])
      throw new Error(`${job.uses}: required secret ${name} not given`);
  const results = await runJobs(run, called, { github: caller.github, inputs, secrets });
  return [...results.values()].some((r) => r.result === "failure") ? "failure" : "success";
}

/** `matrix: ${{ fromJSON(…) }}` whole, or a map whose lists may each be an expression. */
function resolveMatrix(matrix: string | Record<string, unknown>, contexts: Contexts): Value {
  if (typeof matrix === "string") return interpolate(matrix, contexts);
  return Object.fromEntries(
    Object.entries(matrix).map(([k, v]) => [
      k,
      typeof v === "string" ? interpolate(v, contexts) : (v as Value),
    ]),
  );
}

interface JobRun {
  id: string;
  name: string;
  permissions: Record<string, string>;
  runsOn: string[];
  workspace: string;
  temp: string;
  contexts: Contexts;
  eventPath: string;
  options: RunOptions;
  limitViolations: string[];
  workflowEnv: Record<string, string>;
}

/** What a job's steps, and the steps of the composite actions they use, share. */
interface JobState {
  run: JobRun;
  steps: StepResult[];
  envFromFiles: Record<string, string>;
  pathFromFiles: string[];
  annotations: number;
  /** Post steps of the actions used, run after the last step. */
  posts: (() => Promise<void>)[];
  /** Files written with the step index in their name. */
  index: number;
}

async function runJob(job: Job, run: JobRun): Promise<JobResult> {
  const { contexts, workspace } = run;
  const state: JobState = {
    run,
    steps: [],
    envFromFiles: {},
    pathFromFiles: [],
    annotations: 0,
    posts: [],
    index: 0,
  };
  const env = {
    ...evalEnv(run.workflowEnv, contexts),
    ...evalEnv(job.env, contexts),
  };
  const success = await runSteps(job.steps, contexts, env, state, "");
  if (success) for (const post of state.posts.reverse()) await post();
  if (state.annotations > ANNOTATIONS_PER_JOB)
    run.limitViolations.push(
      `${run.name}: ${state.annotations} annotations, GitHub shows ${ANNOTATIONS_PER_JOB} per job`,
    );
  contexts.env = { ...env, ...state.envFromFiles };
  const outputs = success
    ? Object.fromEntries(
        Object.entries(job.outputs ?? {}).map(([k, v]) => [k, toText(interpolate(v, contexts))]),
      )
    : {};
  await rm(path.join(workspace, "node_modules"), { recursive: true, force: true });
  return {
    name: run.name,
    id: run.id,
    runsOn: run.runsOn,
    result: success ? "success" : "failure",
    permissions: run.permissions,
    outputs,
    steps: state.steps,
  };
}

const evalEnv = (env: Record<string, string> | undefined, contexts: Contexts) =>
  Object.fromEntries(
    Object.entries(env ?? {}).map(([k, v]) => [k, toText(interpolate(String(v), contexts))]),
  );

/**
 * Runs steps in order with `contexts` (a job's, or a composite action's own, whose steps context
 * and inputs are its own); `prefix` names a composite action's steps after the step that used it.
 * Returns whether every step that ran succeeded.
 */
async function runSteps(
  steps: Step[],
  contexts: Contexts,
  env: Record<string, string>,
  state: JobState,
  prefix: string,
  actionPath?: string,
): Promise<boolean> {
  const { run } = state;
  const { options, workspace, temp } = run;
  const github = contexts.github as Record<string, string>;
  const stepsContext = contexts.steps as Record<string, Value>;
  let success = true;
  for (const [position, step] of steps.entries()) {
    for (const key of Object.keys(step))
      if (!STEP_KEYS.has(key))
        throw new Error(`${run.name} step ${position + 1}: "${key}" is not emulated`);
    const name = prefix + (step.name ?? step.uses ?? step.run!.split("\n", 1)[0]!);
    contexts.env = { ...env, ...state.envFromFiles };
    if (!condition(step.if, contexts, { success })) {
      state.steps.push({
        name,
        outcome: "skipped",
        stdout: "",
        stderr: "",
        summary: "",
        annotations: [],
      });
      if (step.id)
        stepsContext[step.id] = { outcome: "skipped", conclusion: "skipped", outputs: {} };
      continue;
    }
    const index = state.index++;
    const files = {
      GITHUB_OUTPUT: path.join(temp, `_output_${index}`),
      GITHUB_ENV: path.join(temp, `_env_${index}`),
      GITHUB_PATH: path.join(temp, `_path_${index}`),
      GITHUB_STEP_SUMMARY: path.join(temp, `_summary_${index}`),
    };
    for (const file of Object.values(files)) await writeFile(file, "");
    const stepEnv = { ...contexts.env, ...evalEnv(step.env, contexts) } as Record<string, string>;
    let outputs: Record<string, string> = {};
    let result: StepResult;
    const composite = step.uses ? otherRepository(step.uses, options) : undefined;
    if (composite) {
      ({ result, outputs } = await runComposite(step, name, composite, contexts, stepEnv, state));
    } else if (step.uses) {
      const [action, ref] = step.uses.split("@") as [string, string];
      const emulated = ACTIONS[action];
      if (!emulated)
        throw new Error(`${run.name}: uses ${step.uses} is not emulated by this runner`);
      if (ref !== emulated.sha)
        throw new Error(
          `${run.name}: ${step.uses}: the runner emulates ${action}@${emulated.sha} (${emulated.version})`,
        );
      const w = Object.fromEntries(
        Object.entries(step.with ?? {}).map(([k, v]) => [
          k,
          toText(interpolate(String(v), contexts)),
        ]),
      );
      for (const key of Object.keys(w))
        if (!emulated.inputs.includes(key))
          throw new Error(`${run.name}: ${action} input "${key}" is not emulated`);
      try {
        await emulated.run({
          with: w,
          workspace,
          temp,
          options,
          outputs,
          post: (p) => state.posts.push(p),
          addPath: (dir) => state.pathFromFiles.unshift(dir),
        });
        result = { name, outcome: "success", stdout: "", stderr: "", summary: "", annotations: [] };
      } catch (error) {
        result = {
          name,
          outcome: "failure",
          stdout: "",
          stderr: (error as Error).message,
          summary: "",
          annotations: [],
        };
      }
    } else {
      const script = path.join(temp, `_step_${index}.sh`);
      await writeFile(script, toText(interpolate(step.run!, contexts)));
      // A composite action's run steps must name their shell.
      if ((step.shell ?? (actionPath ? undefined : "bash")) !== "bash")
        throw new Error(`${run.name}: ${name}: shell ${step.shell} is not emulated`);
      const cwd = step["working-directory"]
        ? path.resolve(workspace, toText(interpolate(step["working-directory"], contexts)))
        : workspace;
      const child = await execa("bash", ["--noprofile", "--norc", "-e", "-o", "pipefail", script], {
        cwd,
        reject: false,
        extendEnv: false,
        env: {
          ...baseEnv(),
          ...options.machineEnv,
          CI: "true",
          GITHUB_ACTIONS: "true",
          GITHUB_WORKSPACE: workspace,
          GITHUB_EVENT_NAME: github.event_name!,
          GITHUB_EVENT_PATH: run.eventPath,
          GITHUB_REPOSITORY: github.repository!,
          GITHUB_REPOSITORY_OWNER: github.repository_owner!,
          GITHUB_SHA: github.sha!,
          GITHUB_REF: github.ref!,
          GITHUB_API_URL: options.apiUrl,
          GITHUB_SERVER_URL: options.serverUrl,
          GITHUB_RUN_ID: "1",
          GITHUB_JOB: run.id,
          RUNNER_TEMP: temp,
          RUNNER_OS: "Linux",
          ...(actionPath && { GITHUB_ACTION_PATH: actionPath }),
          ...files,
          ...stepEnv,
          PATH: [...state.pathFromFiles, process.env.PATH].join(":"),
        },
      });
      const summary = await readFile(files.GITHUB_STEP_SUMMARY, "utf8");
      result = {
        name,
        outcome: child.exitCode === 0 ? "success" : "failure",
        exitCode: child.exitCode ?? -1,
        stdout: child.stdout,
        stderr: child.stderr,
        summary,
        annotations: parseAnnotations(child.stdout),
      };
      outputs = parseKeyValueFile(await readFile(files.GITHUB_OUTPUT, "utf8"));
      Object.assign(
        state.envFromFiles,
        parseKeyValueFile(await readFile(files.GITHUB_ENV, "utf8")),
      );
      state.pathFromFiles.unshift(
        ...(await readFile(files.GITHUB_PATH, "utf8")).split("\n").filter(Boolean).reverse(),
      );
      const bytes = Buffer.byteLength(summary, "utf8");
      if (bytes > SUMMARY_BYTES_PER_STEP)
        run.limitViolations.push(
          `${run.name} / ${name}: step summary is ${bytes} bytes, over GitHub's 1 MiB`,
        );
      for (const level of ["error", "warning", "notice"] as const) {
        const count = result.annotations.filter((a) => a.level === level).length;
        if (count > ANNOTATIONS_PER_STEP)
          run.limitViolations.push(
            `${run.name} / ${name}: ${count} ${level} annotations, GitHub shows ${ANNOTATIONS_PER_STEP} per step`,
          );
      }
      state.annotations += result.annotations.length;
    }
    state.steps.push(result);
    if (step.id)
      stepsContext[step.id] = { outcome: result.outcome, conclusion: result.outcome, outputs };
    if (result.outcome === "failure") success = false;
  }
  return success;
}

type ActionYaml = {
  inputs?: Record<string, { required?: boolean; default?: string }>;
  outputs?: Record<string, { value: string }>;
  runs: { using: string; steps: Step[] };
};

/**
 * A composite action of another repository: checked out under the runner's _actions/OWNER/NAME/REF
 * (its action.yml), its inputs checked, its steps run with their own steps and inputs contexts.
 */
async function runComposite(
  step: Step,
  name: string,
  target: { dir: string; file: string; ref: string; repository: string },
  contexts: Contexts,
  env: Record<string, string>,
  state: JobState,
): Promise<{ result: StepResult; outputs: Record<string, string> }> {
  const { run } = state;
  const metadata = path.join(target.dir, target.file, "action.yml");
  const action = parseYaml(await readFile(metadata, "utf8")) as ActionYaml;
  if (action.runs.using !== "composite")
    throw new Error(`${step.uses}: only composite actions are emulated`);
  const actionPath = path.join(
    run.temp,
    "..",
    "_actions",
    target.repository,
    target.ref,
    target.file,
  );
  await mkdir(actionPath, { recursive: true });
  await cp(metadata, path.join(actionPath, "action.yml"));
  const given = Object.fromEntries(
    Object.entries(step.with ?? {}).map(([k, v]) => [k, toText(interpolate(String(v), contexts))]),
  );
  for (const key of Object.keys(given))
    if (!action.inputs?.[key]) throw new Error(`${run.name}: ${step.uses} has no input "${key}"`);
  const inputs: Record<string, Value> = {};
  for (const [key, spec] of Object.entries(action.inputs ?? {})) {
    if (spec.required && !given[key])
      throw new Error(`${run.name}: ${step.uses}: required input "${key}" not given`);
    inputs[key] = given[key] ?? spec.default ?? "";
  }
  const own: Contexts = {
    ...contexts,
    github: { ...(contexts.github as Record<string, Value>), action_path: actionPath },
    inputs,
    steps: {},
  };
  delete own.secrets;
  const first = state.steps.length;
  const success = await runSteps(action.runs.steps, own, env, state, `${name} / `, actionPath);
  const outputs = Object.fromEntries(
    Object.entries(action.outputs ?? {}).map(([k, o]) => [k, toText(interpolate(o.value, own))]),
  );
  const inner = state.steps.splice(first);
  const result: StepResult = {
    name,
    outcome: success ? "success" : "failure",
    stdout: inner.map((s) => s.stdout).join(""),
    stderr: inner.map((s) => `${s.name}: ${s.outcome}\n${s.stderr}`).join("\n"),
    summary: inner.map((s) => s.summary).join(""),
    annotations: inner.flatMap((s) => s.annotations),
    steps: inner,
  };
  return { result, outputs };
}
