// An Octokit with the same plugins as production and test-sized waits: retries and secondary
// rate limits still go through the real plugin code, in milliseconds instead of seconds.
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { Octokit } from "@octokit/rest";

const ProductionOctokit = Octokit.plugin(retry, throttling);
export type TestOctokit = InstanceType<typeof ProductionOctokit>;

type ThrottleGroup = NonNullable<
  NonNullable<ConstructorParameters<typeof ProductionOctokit>[0]>["throttle"]
>["write"];

/**
 * Throttling's write and notification groups space requests 1-3 s apart; tests run them at once.
 */
const NO_SPACING = {
  key: () => ({
    schedule: <T>(_options: unknown, job: (...args: unknown[]) => T, ...args: unknown[]) =>
      job(...args),
  }),
} as unknown as ThrottleGroup;

export interface SeenLimit {
  retryAfter: number;
  method: string;
  url: string;
}

export function testOctokit(options: { baseUrl: string; auth: string; retries?: number }): {
  octokit: TestOctokit;
  secondaryLimits: SeenLimit[];
} {
  const secondaryLimits: SeenLimit[] = [];
  const octokit = new ProductionOctokit({
    baseUrl: options.baseUrl,
    auth: options.auth,
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    // 403 stays out of the retry plugin so the throttling plugin sees secondary rate limits.
    retry: {
      retryAfterBaseValue: 5,
      doNotRetry: [400, 401, 403, 404, 410, 422, 451],
      retries: options.retries ?? 3,
    },
    throttle: {
      retryAfterBaseValue: 5,
      write: NO_SPACING,
      notifications: NO_SPACING,
      onSecondaryRateLimit: (retryAfter, request, _octokit, retryCount) => {
        secondaryLimits.push({ retryAfter, method: request.method, url: request.url });
        return retryCount < 2;
      },
      onRateLimit: (_retryAfter, _request, _octokit, retryCount) => retryCount < 2,
    },
  });
  return { octokit, secondaryLimits };
}
