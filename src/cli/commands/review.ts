import { io } from "../io.js";
import { readFile } from "node:fs/promises";
import * as z from "zod";
import { UsageError } from "../../errors.js";
import { GitHub, GITHUB_LOGIN } from "../../forge/github.js";
import { visible } from "../../text/escape.js";
import { auditExitCode, ExitBit } from "../exit.js";
import { parseFlags, textFlag } from "../flags.js";
import {
  githubSettings,
  MANIFEST_FLAGS,
  manifestSource,
  SSH_CONFIG_FLAG,
  TIMEOUT_FLAG,
} from "../options.js";
import { runReview, type Reply, type ReviewRequest } from "../../runs/review.js";

// The parts of GitHub's issue_comment event a review command needs.
const CommentEventSchema = z.object({
  issue: z.object({
    number: z.number().int().positive(),
    /** Present (an object) when the issue is a pull request. */
    pull_request: z.looseObject({}).optional(),
  }),
  comment: z.object({
    body: z.string().nullable(),
    // A reply mentions it.
    user: z.object({ login: z.string().regex(GITHUB_LOGIN) }),
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
  event: {
    ...textFlag("FILE", "the GitHub event payload (default: $GITHUB_EVENT_PATH)"),
    env: "GITHUB_EVENT_PATH",
    required: { message: "review needs --event FILE (GitHub Actions sets GITHUB_EVENT_PATH)" },
  },
  "ssh-config": SSH_CONFIG_FLAG,
  timeout: TIMEOUT_FLAG,
};

// Replies quote logins, branches and error messages: printed escaped, never as a workflow command.
const say = (line: string) => io().stdout.write(`${visible(line, { multiline: true })}\n`);

/**
 * `review`'s argv, event and environment as its config, nothing pulled or probed yet: undefined
 * when the event holds no `/quartermaster` command on a pull request (no forge is needed then);
 * else the request and the forge's settings, one missing being the workflow's mistake (exit 2).
 */
async function reviewConfig(argv: string[]) {
  const { config } = parseFlags("review", argv, REVIEW_FLAGS);
  const event = await readEvent(config.event);
  const command = reviewCommandOf(event.comment.body);
  if (command === undefined || event.issue.pull_request === undefined) return undefined;
  const request: ReviewRequest = {
    login: event.comment.user.login,
    pull: event.issue.number,
    command,
    source: manifestSource(config),
    timeout: config.timeout,
    sshConfig: config["ssh-config"],
    say,
  };
  return { request, github: githubSettings() };
}

/**
 * `/quartermaster reject` on an accept PR, from someone with write access: close it at once and
 * record the remediation ticket now. The ticket states live values, so the PR's nodes are audited
 * again and the planner runs as it would on the next scheduled run, which sees the closed PR as a
 * rejection; only the ticket for this PR's drift is carried out.
 */
export async function reviewCommand(argv: string[]): Promise<number> {
  const config = await reviewConfig(argv);
  if (config === undefined) {
    say("no /quartermaster command on a pull request: nothing to do");
    return 0;
  }
  const { request } = config;
  const github = new GitHub(config.github);
  const reply: Reply = async (text) => {
    await github.comment(request.pull, text);
    say(text);
  };
  const outcome = await runReview(github, request, reply);
  if (!outcome?.report) return 0;
  return outcome.failed ? ExitBit.unaudited : auditExitCode(outcome.report) & ExitBit.unaudited;
}
