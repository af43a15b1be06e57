import type { Forge } from "../forge/forge.js";
import type { PullRecord } from "../forge/records.js";
import { BRANCH_PREFIX } from "./branch.js";
import { parseMarker, type PullMarker } from "./marker.js";
import { markedNodes, type NodeLists } from "./node-lists.js";

// The forge's pull requests read as Quartermaster's proposals: the marker in the body, the bot's
// own commits and comments told from a human's.

/** Ends the comment saying the bot leaves a PR alone, so the next run knows it said so. */
export const LEFT_ALONE_MARK = "<!-- quartermaster-left-alone -->";

export interface ExistingPull extends PullRecord {
  marker?: PullMarker;
  /** Every node its marker names; undefined when they are named by a digest whose list is lost. */
  nodes?: readonly string[];
  /**
   * Commits on the branch by anyone but the bot; set by the executor for PRs the plan would write
   * to.
   */
  humanCommits?: boolean;
  /** The bot already said it leaves this PR alone. */
  leftAloneNotice?: boolean;
  /** GitHub cannot merge it into its base as it is (a merge moved what it was built on). */
  conflicts?: boolean;
}

/**
 * A pull request as the planner sees it: with its marker when the body ends in one that agrees with
 * the branch, and the marker's nodes (from `lists` when it names them by digest).
 */
export function existingPull(record: PullRecord, lists: NodeLists = new Map()): ExistingPull {
  const marker = parseMarker(record.body, record.branch);
  if (!marker) return record;
  const nodes = markedNodes(marker, lists);
  return { ...record, marker, ...(nodes && { nodes }) };
}

/** Every pull request from one of the bot's branches, open and closed. */
export async function botPulls(github: Forge, lists?: NodeLists): Promise<ExistingPull[]> {
  return (await github.pulls(BRANCH_PREFIX)).map((record) => existingPull(record, lists));
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
