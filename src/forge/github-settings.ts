// How Quartermaster reaches GitHub: the repository, the token and the bot's identity, from the
// environment GitHub Actions provides.
import { ForgeError } from "../errors.js";
import { visible } from "../text/escape.js";
import { wholeNumber } from "../whole-number.js";

export interface GitHubSettings {
  apiUrl: string;
  owner: string;
  repo: string;
  token: string;
  /** Name and email on the commits Quartermaster makes: any other author is a human. */
  author: { name: string; email: string };
  /**
   * The login the token acts as, when given (`QUARTERMASTER_BOT_LOGIN`): GitHub tells a user's token
   * its login (GET /user), never an App's or Actions' token.
   */
  botLogin?: string;
  /** Milliseconds per second of a retry wait (Octokit's default 1000); tests shorten it. */
  retryAfterBaseValue?: number;
  /**
   * Least time between two write requests. Unset keeps Octokit's spacing (1 s between writes,
   * 3 s between notifying ones), as GitHub asks of content-creating requests.
   */
  writeSpacingMs?: number;
  /**
   * The largest blob the bot writes (`QUARTERMASTER_MAX_BLOB_BYTES`): a state file that would be
   * larger is kept in parts. GitHub refuses a blob over 100 MiB; tests set a small limit.
   */
  maxBlobBytes: number;
}

/** Well under GitHub's 100 MiB per blob, and under the 40 MiB its Git Data API was seen to take. */
export const DEFAULT_MAX_BLOB_BYTES = 16 * 1024 * 1024;

/** GitHub's login rules, and an App's `name[bot]`. */
export const GITHUB_LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$/;

export const BOT_AUTHOR = {
  name: "Quartermaster",
  email: "quartermaster[bot]@users.noreply.github.com",
};

/**
 * Settings from the environment GitHub Actions provides (GITHUB_API_URL works for GitHub Enterprise
 * Server).
 */
export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): GitHubSettings {
  const repository = env.GITHUB_REPOSITORY;
  const token = env.GITHUB_TOKEN;
  if (!repository || !/^[^/]+\/[^/]+$/.test(repository))
    throw new ForgeError("GITHUB_REPOSITORY must be set to owner/repo");
  if (!token)
    throw new ForgeError(
      "GITHUB_TOKEN must be set to a token that may push branches and open pull requests",
    );
  const [owner, repo] = repository.split("/") as [string, string];
  const botLogin = env.QUARTERMASTER_BOT_LOGIN || undefined;
  if (botLogin !== undefined && !GITHUB_LOGIN.test(botLogin))
    throw new ForgeError(
      `QUARTERMASTER_BOT_LOGIN must be a GitHub login (an App's is <app-slug>[bot]), not "${visible(botLogin)}"`,
    );
  return {
    apiUrl: env.GITHUB_API_URL ?? "https://api.github.com",
    owner,
    repo,
    token,
    author: BOT_AUTHOR,
    ...(botLogin !== undefined && { botLogin }),
    retryAfterBaseValue: whole(env, "QUARTERMASTER_RETRY_AFTER_BASE_MS", "milliseconds"),
    writeSpacingMs: whole(env, "QUARTERMASTER_WRITE_SPACING_MS", "milliseconds"),
    maxBlobBytes: whole(env, "QUARTERMASTER_MAX_BLOB_BYTES", "bytes", 1) ?? DEFAULT_MAX_BLOB_BYTES,
  };
}

function whole(env: NodeJS.ProcessEnv, name: string, unit: string, least = 0): number | undefined {
  const text = env[name];
  if (text === undefined || text === "") return undefined;
  const value = wholeNumber(text);
  if (value === undefined || value < least)
    throw new ForgeError(
      `${name} must be a whole number of ${unit}${least ? ` (at least ${least})` : ""}, not "${visible(text)}"`,
    );
  return value;
}
