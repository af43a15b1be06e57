import { z } from "zod";
import type { GitHub } from "../forge/github.js";
import { STATE_BRANCH } from "./state.js";

// When each deferred pull request first waited, kept between runs on the bot's state branch (no
// pull request), so the per-run budget opens the longest-waiting first.

export const WAITING_FILE = "deferred.json";
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

/** The deferral queue as the state branch keeps it: branches sorted, so unchanged is the same text. */
export function waitingText(waiting: ReadonlyMap<string, string>): string {
  return `${JSON.stringify(Object.fromEntries([...waiting].sort(([a], [b]) => (a < b ? -1 : 1))), null, 2)}\n`;
}
