// A review run: `/quartermaster reject` on an accept PR, from someone with write access, closes it
// and records the remediation ticket for its drift now, auditing its nodes again.
import { loadFleet } from "../manifest/load.js";
import type { Forge } from "../forge/forge.js";
import { branchIdentity } from "../propose/branch.js";
import { describeAction, executePlan } from "../propose/execute.js";
import { gatherPulls } from "../propose/gather.js";
import { planActions } from "../propose/run-plan.js";
import { proposalInput } from "../propose/input.js";
import { botPulls, type ExistingPull } from "../propose/pulls.js";
import { readHistory, readNodeLists } from "../propose/state.js";
import type { Report } from "../report/schema.js";
import { visible } from "../text/escape.js";
import { codeSpan, nodeSpans } from "../text/markdown.js";
import { DEFAULT_CONCURRENCY, runAudit } from "./audit.js";
import { resolveManifestDir, type ManifestSource } from "./fleet.js";

/** A `/quartermaster` command on a pull request, and how to audit its nodes. */
export interface ReviewRequest {
  /** The commenter. */
  login: string;
  /** The pull request commented on. */
  pull: number;
  /** The sub-command ("" for a bare `/quartermaster`). */
  command: string;
  source: ManifestSource;
  timeout: number | undefined;
  sshConfig: string | undefined;
  /** Shows a line of what the run does (a planned action). */
  say: (line: string) => void;
}

/** What recording the ticket came to: no report when none of the PR's nodes is left to audit. */
export interface TicketOutcome {
  report?: Report;
  /** An action failed: the next scheduled run records the ticket. */
  failed: boolean;
}

/** Nodes a reply names before it counts the rest: a comment over 65,536 characters is refused. */
const REPLY_NODES = 50;

/** Posts a reply on the pull request (and shows it). */
export type Reply = (text: string) => Promise<void>;

/** A pull request Quartermaster opened: its marker says which nodes and drift. */
type MarkedPull = ExistingPull & Required<Pick<ExistingPull, "marker" | "nodes">>;

/**
 * The accept PR a `/quartermaster` command asks to reject, once it is known the commenter may,
 * the command is `reject` and the PR is Quartermaster's open accept PR; else the reason replied.
 */
async function pullToReject(
  github: Forge,
  request: ReviewRequest,
  reply: Reply,
): Promise<MarkedPull | undefined> {
  const { login, command } = request;
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
  const { lists } = await readNodeLists(github);
  const pull = (await botPulls(github, lists)).find((p) => p.number === request.pull);
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
  if (!pull.nodes) {
    await reply(
      `@${login}: this pull request names its nodes by a digest whose list is not on the state branch, so they cannot be audited now. Close it without merging instead: the next scheduled run records a remediation ticket for its drift.`,
    );
    return undefined;
  }
  return { ...pull, marker: pull.marker, nodes: pull.nodes };
}

/**
 * Audits the PR's nodes still in the manifests and carries out only the ticket recording this
 * PR's rejection, replying what came of it; the exit code.
 */
async function recordTicket(
  github: Forge,
  request: ReviewRequest,
  pull: MarkedPull,
  reply: Reply,
): Promise<TicketOutcome> {
  const manifestDir = await resolveManifestDir(request.source);
  const known = new Set((await loadFleet(manifestDir)).nodes.map((n) => n.name));
  const nodes = pull.nodes.filter((name) => known.has(name));
  if (!nodes.length) {
    await reply(
      `None of this pull request's nodes (${nodeSpans(pull.nodes, REPLY_NODES)}) is in the manifests any more: no ticket to record.`,
    );
    return { failed: false };
  }
  // The history the scheduled audit reads: causes since each node's last audit, a pending rollout
  // told from drift, and since when the drift is seen.
  const history = await readHistory(github);
  for (const why of history.dropped)
    request.say(`the audit history: ${why}; that entry is left out`);
  const { report } = await runAudit(
    {
      source: { manifests: manifestDir, repo: undefined, ref: undefined, cacheDir: undefined },
      nodes,
      categories: undefined,
      local: false,
      concurrency: DEFAULT_CONCURRENCY,
      timeout: request.timeout,
      sshConfig: request.sshConfig,
      shard: undefined,
    },
    history,
  );
  const { input, revision } = await proposalInput(manifestDir);
  // Only the ticket recording this PR's rejection; no budget: it is one PR a person asked for.
  const planned = { ...input, report, maxNewPrs: undefined };
  const actions = planActions(await gatherPulls(github), planned).filter(
    (a) =>
      (a.type === "open" || a.type === "update") &&
      a.kind === "ticket" &&
      a.replaces === pull.branch,
  );
  for (const action of actions) request.say(describeAction(action));
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
  return { report, failed: failed.length > 0 };
}

/** Why no ticket was recorded: one is open already, or the drift is gone (or unseen). */
async function noTicketReason(
  github: Forge,
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
  return `The drift this pull request accepted is no longer on ${nodeSpans(nodes, REPLY_NODES)} as it was${unaudited.length ? ` (not audited: ${unaudited.join(", ")})` : ""}, so no ticket was recorded; the next scheduled audit proposes what is there then.`;
}

/**
 * The review of one `/quartermaster` command: replies why not, or closes the accept PR and records
 * its remediation ticket; undefined when nothing was rejected.
 */
export async function runReview(
  github: Forge,
  request: ReviewRequest,
  reply: Reply,
): Promise<TicketOutcome | undefined> {
  const pull = await pullToReject(github, request, reply);
  if (!pull) return undefined;
  // Closed first: the rejection stands even if recording the ticket fails, and the next scheduled
  // run records it then.
  await reply(
    `Rejected by @${request.login}: closing without merging. Quartermaster records a remediation ticket for this drift instead, and never reopens this pull request.`,
  );
  await github.closePull(pull.number);
  await github.deleteBranch(pull.branch);
  return recordTicket(github, request, pull, reply);
}
