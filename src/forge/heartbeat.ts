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
 * How a URL the user passed is named in a message: its scheme and host only. Its user and password
 * are credentials, and so may its path be (a monitor's ping id is its secret).
 */
export function urlForMessages(url: string): string {
  try {
    const { protocol, host } = new URL(url);
    return `${protocol}//${host}/…`;
  } catch {
    return "(not a URL)";
  }
}

/**
 * The request a URL's user and password ask for: the URL without them, and Basic authorization
 * with them (fetch refuses a URL holding credentials).
 */
function heartbeatRequest(url: string): { url: string; headers: Record<string, string> } {
  const parsed = new URL(url);
  if (parsed.username === "" && parsed.password === "") return { url, headers: {} };
  const user = safeDecode(parsed.username);
  const password = safeDecode(parsed.password);
  parsed.username = "";
  parsed.password = "";
  const basic = Buffer.from(`${user}:${password}`).toString("base64");
  return { url: parsed.href, headers: { authorization: `Basic ${basic}` } };
}

const safeDecode = (text: string) => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/** The words of a failed request, never with the address it went to. */
function reasonOf(error: unknown, urls: readonly string[]): string {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : undefined;
  let reason = error instanceof Error ? error.message : String(error);
  if (cause) reason = `${reason}: ${cause.message}`;
  for (const url of urls) {
    reason = reason.replaceAll(url, urlForMessages(url));
    // Its parts, as a message may quote them alone or decoded.
    const { username, password, pathname, search } = new URL(url);
    for (const part of [username, password, `${pathname}${search}`])
      for (const form of new Set([part, safeDecode(part)]))
        if (form.length > 1) reason = reason.replaceAll(form, "…");
  }
  return reason;
}

/**
 * Pings the monitor; returns the warning to print when it did not answer. That costs a line on
 * stderr, never the run: the missing ping is what the monitor will notice.
 */
export async function pingHeartbeat(url: string, failed: boolean): Promise<string | undefined> {
  const target = heartbeatTarget(url, failed);
  try {
    const request = heartbeatRequest(target);
    const response = await fetch(request.url, {
      method: "POST",
      headers: request.headers,
      body: failed ? "quartermaster run failed" : "quartermaster run ok",
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    await response.body?.cancel();
    return response.ok
      ? undefined
      : `--heartbeat-url ${urlForMessages(url)} answered ${response.status}`;
  } catch (error) {
    const reason = reasonOf(error, [target, url, new URL(target).href]);
    return `--heartbeat-url ${urlForMessages(url)} unreachable (${visible(reason)})`;
  }
}
