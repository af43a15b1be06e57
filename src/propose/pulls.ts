import type { Forge } from "../forge/forge.js";
import type { PullRecord } from "../forge/records.js";
import { parseMarker, type PullMarker } from "./body.js";
import { BRANCH_PREFIX } from "./branch.js";

// The forge's pull requests read as Quartermaster's proposals: the marker in the body, the bot's
// own commits and comments told from a human's.

/** Ends the comment saying the bot leaves a PR alone, so the next run knows it said so. */
export const LEFT_ALONE_MARK = "<!-- quartermaster-left-alone -->";

export interface ExistingPull extends PullRecord {
  marker?: PullMarker;
  /**
   * Commits on the branch by anyone but the bot; set by the executor for PRs the plan would write
   * to.
   */
  humanCommits?: boolean;
  /** The bot already said it leaves this PR alone. */
  leftAloneNotice?: boolean;
}

/**
 * A pull request as the planner sees it: with its marker when the body ends in one that agrees with
 * the branch.
 */
export function existingPull(record: PullRecord): ExistingPull {
  const marker = parseMarker(record.body, record.branch);
  return marker ? { ...record, marker } : record;
}

/** Every pull request from one of the bot's branches, open and closed. */
export async function botPulls(github: Forge): Promise<ExistingPull[]> {
  return (await github.pulls(BRANCH_PREFIX)).map(existingPull);
}

/** Whether anyone but the bot wrote or committed a commit of PR `number`. */
export async function humanCommits(github: Forge, number: number): Promise<boolean> {
  const bot = github.settings.author.email;
  return (await github.pullCommits(number)).some((c) => c.author !== bot || c.committer !== bot);
}

/**
 * Whether the bot already commented that it leaves `pull` alone. Only its own comments count: the
 * bot is whoever opened its pull request, and anyone else's copy of the mark would silence it.
 */
export async function hasLeftAloneNotice(github: Forge, pull: PullRecord): Promise<boolean> {
  if (pull.author === undefined) return false;
  return (await github.comments(pull.number)).some(
    (c) => c.author === pull.author && c.body.includes(LEFT_ALONE_MARK),
  );
}
