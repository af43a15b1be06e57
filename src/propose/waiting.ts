import { z } from "zod";
import type { GitHub } from "../forge/github.js";

// When each deferred pull request first waited, kept between runs on the bot's state branch (no
// pull request), so the per-run budget opens the longest-waiting first.

export const STATE_BRANCH = "quartermaster-state";
const WAITING_FILE = "deferred.json";
const Waiting = z.record(z.string(), z.string());

/** Branch -> when its PR was first deferred, as the last run left it; empty when there is none. */
export async function readWaiting(github: GitHub): Promise<Map<string, string>> {
  const text = await github.readFile(
    STATE_BRANCH,
    WAITING_FILE,
    "reading the deferred pull requests",
  );
  if (text === undefined) return new Map();
  // The branch is the bot's, but anyone with write access can push to it: read it as data.
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    return new Map();
  }
  const parsed = Waiting.safeParse(json);
  return parsed.success ? new Map(Object.entries(parsed.data)) : new Map();
}

/**
 * Keeps `waiting` for the next run on the state branch (one commit on `base`), unless it is
 * unchanged.
 */
export async function writeWaiting(
  github: GitHub,
  waiting: ReadonlyMap<string, string>,
  previous: ReadonlyMap<string, string>,
  base: string,
): Promise<void> {
  const same =
    waiting.size === previous.size &&
    [...waiting].every(([branch, since]) => previous.get(branch) === since);
  if (same) return;
  const text = `${JSON.stringify(Object.fromEntries([...waiting].sort(([a], [b]) => (a < b ? -1 : 1))), null, 2)}\n`;
  await github.setBranch(
    STATE_BRANCH,
    await github.commitFiles(
      base,
      { [WAITING_FILE]: text },
      "Quartermaster: pull requests deferred by the per-run budget",
    ),
  );
}
