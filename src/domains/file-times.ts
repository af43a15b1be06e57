// When files changed and when the host booted, as a probe prints them: a domain tells a change
// since boot (a marker of this boot, a persisted file not applied yet) from one before it.

/** `stat -c '%Y %n'` output: each file's mtime, seconds since the epoch. */
export function parseChanged(text: string): Map<string, number> {
  const changed = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = /^(\d{1,15}) (\/.*)$/.exec(line);
    if (m) changed.set(m[2]!, Number(m[1]));
  }
  return changed;
}

/** The `btime` line of /proc/stat: the boot time, seconds since the epoch. */
export function parseBootTime(text: string): number | undefined {
  const m = /^btime (\d{1,15})$/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/**
 * How far a host's clock may run ahead of the auditor's and its times still be read as times: a
 * host without NTP drifts by minutes, never by a day.
 */
export const HOST_CLOCK_TOLERANCE_S = 24 * 60 * 60;

/**
 * Why a time the host gave (seconds since the epoch) is not one, or undefined when it is: a
 * number no date holds, or later than the audit (`now`, epoch milliseconds) by more than the
 * tolerance. A file's owner can set its mtime anywhere on tmpfs; a host's clock can be wrong.
 */
export function notAHostTime(seconds: number, now: number = Date.now()): string | undefined {
  if (!Number.isSafeInteger(seconds) || seconds < 0) return "not a time";
  if (seconds > Math.floor(now / 1000) + HOST_CLOCK_TOLERANCE_S)
    return "later than the audit by more than a day";
  return undefined;
}

/** Seconds since the epoch as an ISO 8601 time, as a report shows them; checked by `notAHostTime` first. */
export const isoTime = (seconds: number) => new Date(seconds * 1000).toISOString();

/** What a cause says when the host's time for it is not a time: `what` names the time, `shown` is it. */
export const untimedEvidence = (what: string, shown: string, why: string) =>
  `${what} ${shown}, is ${why}: the host's clock or records cannot be trusted for this change`;
