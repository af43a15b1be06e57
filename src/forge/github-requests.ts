// One client for GitHub's API: Octokit with retries, throttling and quiet request logs, its errors
// turned into ForgeError naming the request at this edge.
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { Octokit } from "@octokit/rest";
import { ForgeError } from "../errors.js";
import { visible } from "../text/escape.js";
import type { GitHubSettings } from "./github-settings.js";

const BotOctokit = Octokit.plugin(retry, throttling);

export type BotClient = InstanceType<typeof BotOctokit>;

function spacedWrites(spacing: number) {
  let last = Promise.resolve();
  const limiter = {
    schedule<T>(_options: unknown, job: () => Promise<T>): Promise<T> {
      const turn = last.then(() => job());
      last = turn.then(
        () => new Promise((resolve) => setTimeout(resolve, spacing)),
        () => new Promise((resolve) => setTimeout(resolve, spacing)),
      );
      return turn;
    },
  };
  return { key: () => limiter };
}

/** The HTTP status of a failed request, when the server answered (Octokit's RequestError). */
function httpStatus(error: Error): number | undefined {
  return "status" in error && typeof error.status === "number" ? error.status : undefined;
}

/**
 * GitHub's own words for a failure (`{"message": ...}` in the response, with the messages of its
 * `errors`, where a 422 says what was invalid), else the error's.
 */
function apiMessage(error: Error): string {
  const data =
    "response" in error && error.response instanceof Object && "data" in error.response
      ? error.response.data
      : undefined;
  if (!(data instanceof Object && "message" in data && typeof data.message === "string"))
    return error.message;
  const details =
    "errors" in data && Array.isArray(data.errors)
      ? data.errors.flatMap((e: unknown) =>
          e instanceof Object && "message" in e && typeof e.message === "string" ? [e.message] : [],
        )
      : [];
  return [data.message, ...details].join(": ");
}

/** Octokit's errors become ForgeError naming the request, so a failure says what it was doing. */
export async function call<T>(what: string, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    // Octokit's RequestError, or the network's error before any answer: both are the forge's.
    if (!(error instanceof Error)) throw error;
    const status = httpStatus(error);
    throw new ForgeError(
      `GitHub API: ${what} failed${status ? ` (HTTP ${status})` : ""}: ${apiMessage(error)}`,
      { status, cause: error },
    );
  }
}

/** `request`'s answer, or undefined when the forge says there is no such thing (404). */
export async function unlessMissing<T>(
  what: string,
  request: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await call(what, request);
  } catch (error) {
    if (error instanceof ForgeError && error.status === 404) return undefined;
    throw error;
  }
}

// Octokit logs every failed request ("GET /repos/…/contents/deferred.json - 404 with id …") on
// stderr. Failures become ForgeError, which says what was being done, and a 404 is often expected
// (no state branch yet): the request log lines are dropped; Octokit's other warnings still show.
const REQUEST_LOG_LINE = /^[A-Z]+ \S+ - \d+ with id /;
const OCTOKIT_LOG = {
  debug: () => {},
  info: () => {},
  warn: (message: string) => process.stderr.write(`quartermaster: ${visible(String(message))}\n`),
  error: (message: string) => {
    if (!REQUEST_LOG_LINE.test(String(message)))
      process.stderr.write(`quartermaster: ${visible(String(message))}\n`);
  },
};

/** The client for these settings: Octokit's retries and throttling, its request log quiet. */
export function botClient(settings: GitHubSettings): BotClient {
  return new BotOctokit({
    baseUrl: settings.apiUrl,
    auth: settings.token,
    userAgent: "quartermaster",
    log: OCTOKIT_LOG,
    retry: {
      retryAfterBaseValue: settings.retryAfterBaseValue ?? 1000,
      doNotRetry: [400, 401, 403, 404, 410, 422, 451],
    },
    throttle: {
      ...(settings.retryAfterBaseValue !== undefined && {
        retryAfterBaseValue: settings.retryAfterBaseValue,
      }),
      ...(settings.writeSpacingMs !== undefined && {
        write: spacedWrites(settings.writeSpacingMs) as never,
        notifications: spacedWrites(settings.writeSpacingMs) as never,
      }),
      // The primary limit resets on the hour: wait for it only when the reset is near.
      onRateLimit: (after: number, _options: unknown, _octokit: unknown, retryCount: number) =>
        after <= 300 && retryCount < 3,
      onSecondaryRateLimit: (
        _after: number,
        _options: unknown,
        _octokit: unknown,
        retryCount: number,
      ) => retryCount < 3,
    },
  });
}
