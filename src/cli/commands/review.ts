import { readFile } from "node:fs/promises";
import { z } from "zod";
import { ForgeError, UsageError } from "../../errors.js";
import { GitHub, settingsFromEnv } from "../../forge/github.js";
import { loadFleet } from "../../manifest/load.js";
import { branchIdentity } from "../../propose/branch.js";
import { describeAction, executePlan, planWithForge } from "../../propose/execute.js";
import { proposalInput } from "../../propose/input.js";
import { botPulls } from "../../propose/pulls.js";
import { visible } from "../../text/escape.js";
import { codeSpan, nodeSpans } from "../../text/markdown.js";
import { ExitBit } from "../exit.js";
import { MANIFEST_OPTIONS, parse, resolveManifestDir } from "../options.js";
import { auditExitCode, runAudit } from "./audit.js";

// The parts of GitHub's issue_comment event a review command needs.
const CommentEvent = z.object({
  issue: z.object({
    number: z.number().int().positive(),
    /** Present (an object) when the issue is a pull request. */
    pull_request: z.looseObject({}).optional(),
  }),
  comment: z.object({
    body: z.string().nullable(),
    // GitHub's login rules (and an App's `name[bot]`): a reply mentions it.
    user: z.object({ login: z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$/) }),
  }),
});

const COMMAND = /^\/quartermaster(?=\s|$)(?:\s+(\S+))?/;

/**
 * The sub-command of a `/quartermaster …` first line, "" for a bare `/quartermaster`, undefined for
 * any other comment.
 */
export function reviewCommandOf(body: string | null): string | undefined {
  const first = (body ?? "").replace(/^(?:[ \t]*\r?\n)+/, "").split(/\r?\n/, 1)[0]!;
  // Indented four spaces or a tab, the line is a code block, shown, not said.
  if (!/^ {0,3}\S/.test(first)) return undefined;
  const match = COMMAND.exec(first.trim());
  return match ? (match[1] ?? "") : undefined;
}

async function readEvent(file: string) {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    // The file cannot be read (a system error) or is not JSON (a SyntaxError): the caller's
    // mistake.
    if (!(error instanceof Error)) throw error;
    throw new UsageError(`cannot read the event ${file}: ${error.message}`);
  }
  const parsed = CommentEvent.safeParse(json);
  if (!parsed.success)
    throw new UsageError(
      `${file} is not an issue_comment event: ${parsed.error.issues[0]!.path.join(".") || "the event"}: ${parsed.error.issues[0]!.message}`,
    );
  return parsed.data;
}

/**
 * `/quartermaster reject` on an accept PR, from someone with write access: close it at once and
 * record the remediation ticket now. The ticket states live values, so the PR's nodes are audited
 * again and the planner runs as it would on the next scheduled run, which sees the closed PR as a
 * rejection; only the ticket for this PR's drift is carried out.
 */
export async function reviewCommand(argv: string[]): Promise<number> {
  const { values } = parse("review", argv, {
    ...MANIFEST_OPTIONS,
    event: { type: "string" },
    "ssh-config": { type: "string" },
    timeout: { type: "string" },
  });
  const eventFile = values.event ?? process.env.GITHUB_EVENT_PATH;
  if (!eventFile)
    throw new UsageError("review needs --event FILE (GitHub Actions sets GITHUB_EVENT_PATH)");
  const event = await readEvent(eventFile);
  const command = reviewCommandOf(event.comment.body);
  // Replies quote logins, branches and error messages: printed escaped, never as a workflow
  // command.
  const say = (line: string) => process.stdout.write(`${visible(line, { multiline: true })}\n`);
  if (command === undefined || event.issue.pull_request === undefined) {
    say("no /quartermaster command on a pull request: nothing to do");
    return 0;
  }
  let github: GitHub;
  try {
    github = new GitHub(settingsFromEnv());
  } catch (error) {
    // A setting missing is the workflow's mistake, as for propose: exit 2, not a failed action.
    if (error instanceof ForgeError) throw new UsageError(error.message);
    throw error;
  }
  const number = event.issue.number;
  const login = event.comment.user.login;
  const reply = async (text: string) => {
    await github.comment(number, text);
    say(text);
  };
  if (!(await github.canWrite(login))) {
    await reply(
      `@${login}: only people with write access to this repository can use /quartermaster commands.`,
    );
    return 0;
  }
  if (command !== "reject") {
    // The comment's own words are quoted in a code span, cut short: no mention, markup or comment.
    const said = command
      ? `unknown command ${codeSpan(`/quartermaster ${command}`, 60)}`
      : "no command";
    await reply(
      `@${login}: ${said}. On an accept pull request, \`/quartermaster reject\` closes it and records a remediation ticket.`,
    );
    return 0;
  }
  // The decision applies to exactly this PR: what it is comes from its branch name (no host chooses
  // it).
  const pull = (await botPulls(github)).find((p) => p.number === number);
  const kind = pull ? branchIdentity(pull.branch)?.kind : undefined;
  if (!pull?.marker || !kind) {
    await reply(
      `@${login}: this is not a pull request Quartermaster opened; there is nothing to reject.`,
    );
    return 0;
  }
  if (kind !== "accept") {
    await reply(
      `@${login}: only accept pull requests can be rejected. Close this ${kind} pull request without merging if it should not land.`,
    );
    return 0;
  }
  if (pull.state !== "open") {
    await reply(`@${login}: this pull request is already ${pull.merged ? "merged" : "closed"}.`);
    return 0;
  }

  // Closed first: the rejection stands even if recording the ticket fails, and the next scheduled
  // run records it then.
  await reply(
    `Rejected by @${login}: closing without merging. Quartermaster records a remediation ticket for this drift instead, and never reopens this pull request.`,
  );
  await github.closePull(number);
  await github.deleteBranch(pull.branch);

  const manifestDir = await resolveManifestDir(values);
  const known = new Set((await loadFleet(manifestDir)).nodes.map((n) => n.name));
  const nodes = pull.marker.nodes.filter((name) => known.has(name));
  if (!nodes.length) {
    await reply(
      `None of this pull request's nodes (${nodeSpans(pull.marker.nodes, Infinity)}) is in the manifests any more: no ticket to record.`,
    );
    return 0;
  }
  const { report } = await runAudit({
    ...values,
    repo: undefined,
    ref: undefined,
    manifests: manifestDir,
    nodes: nodes.join(","),
    local: false,
    verbose: false,
    color: false,
    "no-color": false,
  });
  const { input, revision } = await proposalInput(manifestDir, report);
  const signature = pull.marker.signature;
  // Only the ticket recording this PR's rejection; no budget: it is one PR a person asked for.
  const actions = (await planWithForge(github, { ...input, maxNewPrs: undefined })).actions.filter(
    (a) =>
      (a.type === "open" || a.type === "update") &&
      a.kind === "ticket" &&
      a.replaces === pull.branch,
  );
  for (const action of actions) say(describeAction(action));
  const outcomes = await executePlan(github, actions, {
    branch: await github.defaultBranch(),
    sha: revision,
  });
  const opened = outcomes.find((o) => o.ok && o.number !== undefined);
  const failed = outcomes.filter((o) => !o.ok);
  const unaudited = report.nodes
    .filter((n) => n.status !== "clean" && n.status !== "drift")
    .map((n) => `${codeSpan(n.name)} (${n.status})`);
  if (opened) await reply(`Recorded the remediation ticket in #${opened.number}.`);
  else if (failed.length)
    await reply(
      `Recording the remediation ticket failed (${failed.map((f) => `\`${visible(f.error ?? "").replaceAll("`", "'")}\``).join("; ")}); the next scheduled run records it.`,
    );
  else if (actions.length)
    await reply(`The remediation ticket pull request for this drift was brought up to date.`);
  else {
    const open = (await botPulls(github)).find(
      (p) => p.state === "open" && p.marker?.kind === "ticket" && p.marker.signature === signature,
    );
    await reply(
      open
        ? `A remediation ticket for this drift is already open in #${open.number}.`
        : `The drift this pull request accepted is no longer on ${nodeSpans(nodes, Infinity)} as it was${unaudited.length ? ` (not audited: ${unaudited.join(", ")})` : ""}, so no ticket was recorded; the next scheduled audit proposes what is there then.`,
    );
  }
  return failed.length ? ExitBit.unaudited : auditExitCode(report) & ExitBit.unaudited;
}
