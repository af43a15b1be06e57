import { visible } from "../text/escape.js";

// The heartbeat: one request to an external monitor (healthchecks.io, Cronitor, Uptime Kuma) at the
// end of each run, so a run that never starts is noticed where nothing else would go red.

const TIMEOUT_MS = 10_000;

/** The address a run's end pings: `url`, with `/fail` appended when the run failed. */
export const heartbeatTarget = (url: string, failed: boolean): string =>
  failed ? `${url.replace(/\/+$/, "")}/fail` : url;

/** Whether `url` is one a heartbeat can go to: http or https, nothing else. */
export function isHeartbeatUrl(url: string): boolean {
  try {
    return ["http:", "https:"].includes(new URL(url).protocol);
  } catch {
    return false;
  }
}

/**
 * Pings the monitor; returns the warning to print when it did not answer. That costs a line on
 * stderr, never the run: the missing ping is what the monitor will notice.
 */
export async function pingHeartbeat(url: string, failed: boolean): Promise<string | undefined> {
  const target = heartbeatTarget(url, failed);
  try {
    const response = await fetch(target, {
      method: "POST",
      body: failed ? "quartermaster run failed" : "quartermaster run ok",
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    await response.body?.cancel();
    return response.ok ? undefined : `--heartbeat-url answered ${response.status}`;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return `--heartbeat-url unreachable (${visible(reason)})`;
  }
}
