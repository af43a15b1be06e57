import fs from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import git from "isomorphic-git";
import { ManifestError, ManifestErrors, UsageError } from "../../errors.js";
import { GitHub, settingsFromEnv } from "../../forge/github.js";
import { loadFleet } from "../../manifest/load.js";
import { describeAction, executePlan, planWithForge } from "../../propose/execute.js";
import { plan } from "../../propose/plan.js";
import { Report } from "../../report/schema.js";
import { ExitBit } from "../exit.js";
import { MANIFEST_OPTIONS, parse, resolveManifestDir } from "../options.js";

/** The audit report a propose run works from: already on disk before any forge call. */
async function readReport(file: string): Promise<Report> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new ManifestErrors([new ManifestError(`cannot read the report: ${(error as Error).message}`, { file })]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ManifestErrors([new ManifestError(`not a JSON report (write it with --format json): ${(error as Error).message}`, { file })]);
  }
  const parsed = Report.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ManifestErrors([new ManifestError(`not a Quartermaster report (schemaVersion 1): ${issue.path.join(".")}: ${issue.message}`, { file })]);
  }
  return parsed.data;
}

async function readTree(dir: string, root: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const entry of await fs.promises.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.ya?ml$/.test(entry.name)) continue;
    const abs = path.join(entry.parentPath, entry.name);
    files.set(path.relative(root, abs), await readFile(abs, "utf8"));
  }
  return files;
}

export async function proposeCommand(argv: string[]): Promise<number> {
  const { values } = parse("propose", argv, {
    ...MANIFEST_OPTIONS,
    report: { type: "string" },
    base: { type: "string" },
    "dry-run": { type: "boolean", default: false },
  });
  if (!values.report) throw new UsageError("propose needs --report FILE (an audit report written with --format json)");
  const report = await readReport(values.report);
  const manifestDir = await resolveManifestDir(values);
  let repoRoot: string;
  let revision: string;
  try {
    repoRoot = await git.findRoot({ fs, filepath: manifestDir });
    revision = await git.resolveRef({ fs, dir: repoRoot, ref: "HEAD" });
  } catch {
    throw new UsageError(`${manifestDir} is not inside a git checkout: propose commits on top of the manifests' commit`);
  }
  const manifestsPath = path.relative(repoRoot, manifestDir) || ".";
  const fleet = await loadFleet(manifestDir, { displayPrefix: manifestsPath });
  const input = { report, nodes: fleet.nodes, tickets: fleet.tickets, files: await readTree(manifestDir, repoRoot), manifestsPath };

  let github: GitHub | undefined;
  try {
    github = new GitHub(settingsFromEnv());
  } catch (error) {
    if (!values["dry-run"]) throw new UsageError((error as Error).message);
    process.stderr.write(`quartermaster: ${(error as Error).message}; planning as if no pull request exists yet\n`);
  }
  const actions = github ? await planWithForge(github, input) : plan({ ...input, pulls: [] });
  for (const action of actions) process.stdout.write(`${values["dry-run"] ? "would " : ""}${describeAction(action)}\n`);
  if (!actions.length) process.stdout.write("nothing to propose: every pull request is up to date\n");
  if (values["dry-run"] || !github || !actions.length) return 0;

  const base = { branch: values.base ?? (await github.defaultBranch()), sha: revision };
  const outcomes = await executePlan(github, actions, base);
  const failed = outcomes.filter((o) => !o.ok);
  for (const outcome of outcomes) {
    if (outcome.number) process.stdout.write(`opened #${outcome.number} ${outcome.action.type === "open" ? outcome.action.branch : ""}\n`);
  }
  for (const failure of failed) process.stderr.write(`quartermaster: ${describeAction(failure.action)}: ${failure.error}\n`);
  if (failed.length) {
    process.stderr.write(`${failed.length} of ${outcomes.length} actions failed; the next run retries them (the report is unchanged on disk)\n`);
    return ExitBit.unaudited;
  }
  return 0;
}

