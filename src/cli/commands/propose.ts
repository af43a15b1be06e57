import { UsageError } from "../../errors.js";
import { GitHub, settingsFromEnv } from "../../forge/github.js";
import { describeAction, executePlan, planWithForge } from "../../propose/execute.js";
import { proposalInput } from "../../propose/input.js";
import { plan } from "../../propose/plan.js";
import { readReport } from "../../report/read.js";
import { ExitBit } from "../exit.js";
import { MANIFEST_OPTIONS, parse, resolveManifestDir } from "../options.js";

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
  const { input, revision } = await proposalInput(manifestDir, report);

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

