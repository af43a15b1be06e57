import { io } from "../io.js";
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { ForgeError, UsageError } from "../../errors.js";
import { GitHub, settingsFromEnv } from "../../forge/github.js";
import { loadFleet } from "../../manifest/load.js";
import { branchIdentity } from "../../propose/branch.js";
import { describeAction, executePlan, planWithForge } from "../../propose/execute.js";
import { proposalInput } from "../../propose/input.js";
import { botPulls, type ExistingPull } from "../../propose/pulls.js";
import type { Report } from "../../report/schema.js";
import { visible } from "../../text/escape.js";
import { codeSpan, nodeSpans } from "../../text/markdown.js";
import { ExitBit } from "../exit.js";
import { parseFlags, textFlag, type Config } from "../flags.js";
import {
  DEFAULT_CONCURRENCY,
  MANIFEST_FLAGS,
  resolveManifestDir,
  SSH_CONFIG_FLAG,
  TIMEOUT_FLAG,
} from "../options.js";
import { auditExitCode, runAudit } from "./audit.js";

// The parts of GitHub's issue_comment event a review command needs.
const CommentEventSchema = z.object({
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

type CommentEvent = z.infer<typeof CommentEventSchema>;

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

async function readEvent(file: string): Promise<CommentEvent> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    // The file cannot be read (a system error) or is not JSON (a SyntaxError): the caller's
    // mistake.
    if (!(error instanceof Error)) throw error;
    throw new UsageError(`cannot read the event ${file}: ${error.message}`);
  }
  const parsed = CommentEventSchema.safeParse(json);
  if (!parsed.success)
    throw new UsageError(
      `${file} is not an issue_comment event: ${parsed.error.issues[0]!.path.join(".") || "the event"}: ${parsed.error.issues[0]!.message}`,
    );
  return parsed.data;
}

const REVIEW_FLAGS = {
  ...MANIFEST_FLAGS,
  event: textFlag("FILE", "the GitHub event payload (default: $GITHUB_EVENT_PATH)"),
  "ssh-config": SSH_CONFIG_FLAG,
  timeout: TIMEOUT_FLAG,
};

type ReviewConfig = Config<typeof REVIEW_FLAGS> & { event: string };

/** `review`'s argv as its config: every flag read and checked, nothing read or opened yet. */
function reviewConfig(argv: string[]): ReviewConfig {
  const { config } = parseFlags("review", argv, REVIEW_FLAGS);
  const event = config.event ?? io().env.GITHUB_EVENT_PATH;
  if (!event)
    throw new UsageError("review needs --event FILE (GitHub Actions sets GITHUB_EVENT_PATH)");
  return { ...config, event };
}

// Replies quote logins, branches and error messages: printed escaped, never as a workflow command.
const say = (line: string) => io().stdout.write(`${visible(line, { multiline: true })}\n`);

/** The forge, from the workflow's settings: one missing is the workflow's mistake (exit 2). */
function forge(): GitHub {
  try {
    return new GitHub(settingsFromEnv(io().env));
  } catch (error) {
    // As for propose: a usage error, not a failed action.
    if (error instanceof ForgeError) throw new UsageError(error.message);
    throw error;
  }
}

type Reply = (text: string) => Promise<void>;

/** A pull request Quartermaster opened: its marker says which nodes and drift. */
type MarkedPull = ExistingPull & Required<Pick<ExistingPull, "marker">>;

/**
 * The accept PR a `/quartermaster` command asks to reject, once it is known the commenter may,
 * the command is `reject` and the PR is Quartermaster's open accept PR; else the reason replied.
 */
async function pullToReject(
  github: GitHub,
  event: CommentEvent,
  command: string,
  reply: Reply,
): Promise<MarkedPull | undefined> {
  const login = event.comment.user.login;
  if (!(await github.canWrite(login))) {
    await reply(
      `@${login}: only people with write access to this repository can use /quartermaster commands.`,
    );
    return undefined;
  }
  if (command !== "reject") {
    // The comment's own words are quoted in a code span, cut short: no mention, markup or comment.
    const said = command
      ? `unknown command ${codeSpan(`/quartermaster ${command}`, 60)}`
      : "no command";
    await reply(
      `@${login}: ${said}. On an accept pull request, \`/quartermaster reject\` closes it and records a remediation ticket.`,
    );
    return undefined;
  }
  // The decision applies to exactly this PR: what it is comes from its branch name (no host chooses
  // it).
  const pull = (await botPulls(github)).find((p) => p.number === event.issue.number);
  const kind = pull ? branchIdentity(pull.branch)?.kind : undefined;
  if (!pull?.marker || !kind) {
    await reply(
      `@${login}: this is not a pull request Quartermaster opened; there is nothing to reject.`,
    );
    return undefined;
  }
  if (kind !== "accept") {
    await reply(
      `@${login}: only accept pull requests can be rejected. Close this ${kind} pull request without merging if it should not land.`,
    );
    return undefined;
  }
  if (pull.state !== "open") {
    await reply(`@${login}: this pull request is already ${pull.merged ? "merged" : "closed"}.`);
    return undefined;
  }
  return { ...pull, marker: pull.marker };
}

/**
 * Audits the PR's nodes still in the manifests and carries out only the ticket recording this
 * PR's rejection, replying what came of it; the exit code.
 */
async function recordTicket(
  github: GitHub,
  config: ReviewConfig,
  pull: MarkedPull,
  reply: Reply,
): Promise<number> {
  const manifestDir = await resolveManifestDir(config);
  const known = new Set((await loadFleet(manifestDir)).nodes.map((n) => n.name));
  const nodes = pull.marker.nodes.filter((name) => known.has(name));
  if (!nodes.length) {
    await reply(
      `None of this pull request's nodes (${nodeSpans(pull.marker.nodes, Infinity)}) is in the manifests any more: no ticket to record.`,
    );
    return 0;
  }
  const { report } = await runAudit({
    manifests: manifestDir,
    repo: undefined,
    ref: undefined,
    "cache-dir": undefined,
    nodes,
    category: undefined,
    local: false,
    concurrency: DEFAULT_CONCURRENCY,
    timeout: config.timeout,
    "ssh-config": config["ssh-config"],
    shard: undefined,
  });
  const { input, revision } = await proposalInput(manifestDir, report);
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
  if (opened) await reply(`Recorded the remediation ticket in #${opened.number}.`);
  else if (failed.length)
    await reply(
      `Recording the remediation ticket failed (${failed.map((f) => `\`${visible(f.error ?? "").replaceAll("`", "'")}\``).join("; ")}); the next scheduled run records it.`,
    );
  else if (actions.length)
    await reply(`The remediation ticket pull request for this drift was brought up to date.`);
  else await reply(await noTicketReason(github, pull.marker.signature, nodes, report));
  return failed.length ? ExitBit.unaudited : auditExitCode(report) & ExitBit.unaudited;
}

/** Why no ticket was recorded: one is open already, or the drift is gone (or unseen). */
async function noTicketReason(
  github: GitHub,
  signature: string,
  nodes: readonly string[],
  report: Report,
): Promise<string> {
  const open = (await botPulls(github)).find(
    (p) => p.state === "open" && p.marker?.kind === "ticket" && p.marker.signature === signature,
  );
  if (open) return `A remediation ticket for this drift is already open in #${open.number}.`;
  const unaudited = report.nodes
    .filter((n) => n.status !== "clean" && n.status !== "drift")
    .map((n) => `${codeSpan(n.name)} (${n.status})`);
  return `The drift this pull request accepted is no longer on ${nodeSpans(nodes, Infinity)} as it was${unaudited.length ? ` (not audited: ${unaudited.join(", ")})` : ""}, so no ticket was recorded; the next scheduled audit proposes what is there then.`;
}

/**
 * `/quartermaster reject` on an accept PR, from someone with write access: close it at once and
 * record the remediation ticket now. The ticket states live values, so the PR's nodes are audited
 * again and the planner runs as it would on the next scheduled run, which sees the closed PR as a
 * rejection; only the ticket for this PR's drift is carried out.
 */
export async function reviewCommand(argv: string[]): Promise<number> {
  const config = reviewConfig(argv);
  const event = await readEvent(config.event);
  const command = reviewCommandOf(event.comment.body);
  if (command === undefined || event.issue.pull_request === undefined) {
    say("no /quartermaster command on a pull request: nothing to do");
    return 0;
  }
  const github = forge();
  const reply: Reply = async (text) => {
    await github.comment(event.issue.number, text);
    say(text);
  };
  const pull = await pullToReject(github, event, command, reply);
  if (!pull) return 0;
  // Closed first: the rejection stands even if recording the ticket fails, and the next scheduled
  // run records it then.
  await reply(
    `Rejected by @${event.comment.user.login}: closing without merging. Quartermaster records a remediation ticket for this drift instead, and never reopens this pull request.`,
  );
  await github.closePull(pull.number);
  await github.deleteBranch(pull.branch);
  return recordTicket(github, config, pull, reply);
}
