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

/** Seconds since the epoch as an ISO 8601 time, as a report shows them. */
export const isoTime = (seconds: number) => new Date(seconds * 1000).toISOString();
