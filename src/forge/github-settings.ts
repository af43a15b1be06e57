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
}

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
    retryAfterBaseValue: millis(env, "QUARTERMASTER_RETRY_AFTER_BASE_MS"),
    writeSpacingMs: millis(env, "QUARTERMASTER_WRITE_SPACING_MS"),
  };
}

function millis(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const text = env[name];
  if (text === undefined || text === "") return undefined;
  const value = wholeNumber(text);
  if (value === undefined)
    throw new ForgeError(`${name} must be a whole number of milliseconds, not "${text}"`);
  return value;
}
