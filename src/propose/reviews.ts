import { ForgeError } from "../errors.js";
import type { Forge } from "../forge/forge.js";
import type { Unasked } from "../forge/records.js";
import { codeSpan } from "../text/markdown.js";
import { visible } from "../text/escape.js";
import { botPulls } from "./pulls.js";

// Owners a run could not ask to review: listed on the dashboard, so the next run asks them again
// (a PR is asked once when opened, and GitHub keeps no record of a refused request).

/** An owner not asked to review pull request `number`, and why. */
export interface PendingReview extends Unasked {
  number: number;
}

// Owners are `[A-Za-z0-9._/-]` (the manifest schema): safe inside an HTML comment as they are.
const MARK = /<!-- ask: (\d+) ([A-Za-z0-9._/-]+) -->\s*$/gm;

/** The dashboard's line for one owner not asked, with the mark the next run reads it back by. */
export const pendingRow = (p: PendingReview) =>
  `- #${p.number}: ${codeSpan(p.owner)}, ${codeSpan(p.reason, 200)} <!-- ask: ${p.number} ${p.owner} -->`;

/** The owners the dashboard says were not asked, by the run that wrote it. */
export function pendingReviews(dashboard: string): { number: number; owner: string }[] {
  return [...dashboard.matchAll(MARK)].map((m) => ({ number: Number(m[1]), owner: m[2]! }));
}

/** The run's own refusals: owners of the pull requests it opened that it could not ask. */
export const refusedOnOpen = (
  outcomes: readonly { number?: number; unasked?: readonly Unasked[] }[],
): PendingReview[] =>
  outcomes.flatMap((o) =>
    o.number === undefined ? [] : (o.unasked ?? []).map((u) => ({ number: o.number!, ...u })),
  );

/**
 * Asks again the owners an earlier run could not ask, on pull requests still open; those still not
 * asked. A pull request GitHub cannot list keeps its owners pending.
 */
export async function askAgain(
  github: Forge,
  pending: readonly { number: number; owner: string }[],
): Promise<PendingReview[]> {
  if (!pending.length) return [];
  let open: Set<number>;
  try {
    open = new Set((await botPulls(github)).filter((p) => p.state === "open").map((p) => p.number));
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    return pending.map((p) => ({ ...p, reason: error.message }));
  }
  const still: PendingReview[] = [];
  for (const { number, owner } of pending.filter((p) => open.has(p.number)))
    for (const unasked of await github.requestReviewers(number, [owner]))
      still.push({ number, ...unasked });
  return still;
}

/** What to warn of for an owner not asked. */
export const describePending = (p: PendingReview) =>
  `${visible(`could not ask ${p.owner} to review #${p.number}: ${p.reason}`)}; the next run asks again`;
