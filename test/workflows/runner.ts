// Runs a workflow file's jobs the way GitHub Actions would, on this machine: jobs in `needs`
// order, matrices expanded, each `run:` step in `bash -e -o pipefail` with its own
// GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH and GITHUB_STEP_SUMMARY files, artifacts as
// directories. The `uses:` actions it emulates are listed in ACTIONS; any other one fails.
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
}

export interface JobResult {
  /** `audit (shard: 2)` for a matrix instance. */
  name: string;
  id: string;
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
  /** actions/create-github-app-token answers with this token. */
  appToken?: string;
  /** Set on the runner machine itself, beside what Actions sets. */
  machineEnv?: Record<string, string>;
}

type Workflow = {
  env?: Record<string, string>;
  jobs: Record<string, Job>;
};
type Job = {
  name?: string;
  needs?: string | string[];
  if?: string | boolean;
  permissions?: Record<string, string>;
  outputs?: Record<string, string>;
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
  "strategy",
  "env",
  "steps",
  "concurrency",
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
}

/** The actions this runner emulates, by name without version; the major version is checked. */
const ACTIONS: Record<
  string,
  { version: string; inputs: string[]; run: (ctx: StepContext) => Promise<void> }
> = {
  "actions/checkout": {
    version: "v4",
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
    version: "v4",
    inputs: ["node-version", "cache"],
    run: async ({ with: w }) => {
      // This machine's Node is the runner's; the version the workflow asks for must be it.
      if (`v${w["node-version"]}` !== process.version.split(".")[0])
        throw new Error(
          `setup-node ${w["node-version"]}, but this machine runs ${process.version}`,
        );
    },
  },
  "actions/upload-artifact": {
    version: "v4",
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
    version: "v4",
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
  "actions/create-github-app-token": {
    version: "v1",
    inputs: ["app-id", "private-key"],
    run: async ({ with: w, options, outputs }) => {
      if (!w["app-id"] || !w["private-key"] || !options.appToken)
        throw new Error(
          "create-github-app-token: app-id, private-key and a test app token are needed",
        );
      outputs.token = options.appToken;
    },
  },
};

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
  const jobResults: JobResult[] = [];
  const limitViolations: string[] = [];
  const results = new Map<
    string,
    { result: JobResult["result"]; outputs: Record<string, string> }
  >();
  await mkdir(path.join(options.workDir, "artifacts"), { recursive: true });
  const eventPath = path.join(options.workDir, "event.json");
  await writeFile(eventPath, JSON.stringify(options.event.payload));
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

  let instance = 0;
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
      github: { ...github, token, workspace: "", job: id },
      inputs: options.inputs ?? {},
      secrets: { GITHUB_TOKEN: token, ...options.secrets },
      vars: options.vars ?? {},
      needs: needsContext,
    };
    const needsOk = needs.every((n) => results.get(n)!.result === "success");
    if (!condition(job.if, jobContexts, { success: needsOk })) {
      const skipped: JobResult = {
        name: id,
        id,
        result: "skipped",
        permissions,
        outputs: {},
        steps: [],
      };
      jobResults.push(skipped);
      results.set(id, { result: "skipped", outputs: {} });
      continue;
    }
    const combos = job.strategy
      ? expandMatrix(resolveMatrix(job.strategy.matrix, jobContexts))
      : [undefined];
    const instances: JobResult[] = [];
    for (const matrix of combos) {
      const dir = path.join(options.workDir, "jobs", `${id}-${instance++}`);
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
        workspace,
        temp,
        contexts,
        eventPath,
        options,
        limitViolations,
        workflowEnv: workflow.env ?? {},
      });
      instances.push(result);
      jobResults.push(result);
    }
    const failed = instances.some((r) => r.result === "failure");
    results.set(id, { result: failed ? "failure" : "success", outputs: instances.at(-1)!.outputs });
  }
  return {
    jobs: jobResults,
    artifacts: path.join(options.workDir, "artifacts"),
    limitViolations,
    job: (id) => jobResults.filter((j) => j.id === id),
  };
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
  workspace: string;
  temp: string;
  contexts: Contexts;
  eventPath: string;
  options: RunOptions;
  limitViolations: string[];
  workflowEnv: Record<string, string>;
}

async function runJob(job: Job, run: JobRun): Promise<JobResult> {
  const { contexts, options, workspace, temp } = run;
  const github = contexts.github as Record<string, string>;
  const steps: StepResult[] = [];
  const stepsContext = contexts.steps as Record<string, Value>;
  const envFromFiles: Record<string, string> = {};
  const pathFromFiles: string[] = [];
  let success = true;
  let jobAnnotations = 0;
  const evalEnv = (env: Record<string, string> | undefined) =>
    Object.fromEntries(
      Object.entries(env ?? {}).map(([k, v]) => [k, toText(interpolate(String(v), contexts))]),
    );
  const env = { ...evalEnv(run.workflowEnv), ...evalEnv(job.env) };

  for (const [index, step] of job.steps.entries()) {
    for (const key of Object.keys(step))
      if (!STEP_KEYS.has(key))
        throw new Error(`${run.name} step ${index + 1}: "${key}" is not emulated`);
    const name = step.name ?? step.uses ?? step.run!.split("\n", 1)[0]!;
    contexts.env = { ...env, ...envFromFiles };
    if (!condition(step.if, contexts, { success })) {
      steps.push({
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
    const files = {
      GITHUB_OUTPUT: path.join(temp, `_output_${index}`),
      GITHUB_ENV: path.join(temp, `_env_${index}`),
      GITHUB_PATH: path.join(temp, `_path_${index}`),
      GITHUB_STEP_SUMMARY: path.join(temp, `_summary_${index}`),
    };
    for (const file of Object.values(files)) await writeFile(file, "");
    const stepEnv = { ...contexts.env, ...evalEnv(step.env) } as Record<string, string>;
    let outputs: Record<string, string> = {};
    let result: StepResult;
    if (step.uses) {
      const [action, version] = step.uses.split("@") as [string, string];
      const emulated = ACTIONS[action];
      if (!emulated)
        throw new Error(`${run.name}: uses ${step.uses} is not emulated by this runner`);
      if (version !== emulated.version)
        throw new Error(
          `${run.name}: ${step.uses}: the runner emulates ${action}@${emulated.version}`,
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
        await emulated.run({ with: w, workspace, temp, options, outputs });
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
      if ((step.shell ?? "bash") !== "bash")
        throw new Error(`${run.name}: shell ${step.shell} is not emulated`);
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
          ...files,
          ...stepEnv,
          PATH: [...pathFromFiles, process.env.PATH].join(":"),
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
      Object.assign(envFromFiles, parseKeyValueFile(await readFile(files.GITHUB_ENV, "utf8")));
      pathFromFiles.unshift(
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
      jobAnnotations += result.annotations.length;
    }
    steps.push(result);
    if (step.id)
      stepsContext[step.id] = { outcome: result.outcome, conclusion: result.outcome, outputs };
    if (result.outcome === "failure") success = false;
  }
  if (jobAnnotations > ANNOTATIONS_PER_JOB)
    run.limitViolations.push(
      `${run.name}: ${jobAnnotations} annotations, GitHub shows ${ANNOTATIONS_PER_JOB} per job`,
    );
  contexts.env = { ...env, ...envFromFiles };
  const outputs = success
    ? Object.fromEntries(
        Object.entries(job.outputs ?? {}).map(([k, v]) => [k, toText(interpolate(v, contexts))]),
      )
    : {};
  await rm(path.join(workspace, "node_modules"), { recursive: true, force: true });
  return {
    name: run.name,
    id: run.id,
    result: success ? "success" : "failure",
    permissions: run.permissions,
    outputs,
    steps,
  };
}
