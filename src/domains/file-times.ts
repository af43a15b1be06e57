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

/** One path the probe's one stat took (`ProbeContext.stat`), a link as a link. */
export interface Stated {
  mtime: number;
  owner: string;
  /** `f` file, `d` directory, `l` link, `o` other. */
  type: string;
  /** A link's target, as the link holds it. */
  target?: string;
}

/**
 * An ask's lines of the probe's one stat: each path's, and whether a line could not be read (`?`: a
 * name or target holding a newline; a time that is no number).
 */
export function parseStated(text: string): { stated: Map<string, Stated>; unreadable: boolean } {
  const stated = new Map<string, Stated>();
  let unreadable = false;
  let last: Stated | undefined;
  for (const line of text.split("\n")) {
    const m = /^(\S+) (\S+) ([fdlo]) (\/.*)$/.exec(line);
    if (m) {
      last = { mtime: Number(m[1]), owner: m[2]!, type: m[3]! };
      if (!/^\d{1,15}$/.test(m[1]!)) unreadable = true;
      else stated.set(m[4]!, last);
    } else if (line.startsWith("-> ") && last?.type === "l") last.target = line.slice(3);
    else if (line !== "") unreadable = true;
  }
  return { stated, unreadable };
}

/** Links followed at most this often, as the kernel does (MAXSYMLINKS). */
const MAX_LINKS = 40;

/** A link's target as a path: against the link's directory when relative, `.` and `..` taken lexically. */
export function linkTarget(link: string, target: string): string {
  const joined = target.startsWith("/")
    ? target
    : `${link.slice(0, link.lastIndexOf("/"))}/${target}`;
  const path: string[] = [];
  for (const part of joined.split("/"))
    if (part === "..") path.pop();
    else if (part !== "" && part !== ".") path.push(part);
  return `/${path.join("/")}`;
}

/**
 * When each stat'ed path's contents last changed: its own mtime, or for a link its target's, where
 * the target (followed lexically, link after link) is itself among the stat'ed paths. The rule: a
 * link's time is its target's line or unknown, never the link's own (when it was made); `untimed`
 * says a path's is unknown (a target stat'ed by no line, a dangling or looping link, a line the
 * host could not send), and then no claim may rest on "no file changed".
 */
export function contentTimes(stat: { stated: Map<string, Stated>; unreadable: boolean }): {
  changed: Map<string, number>;
  untimed?: true;
} {
  const changed = new Map<string, number>();
  let untimed = stat.unreadable;
  for (const [path, entry] of stat.stated) {
    let at: Stated | undefined = entry;
    let name = path;
    for (let hops = 0; at?.type === "l" && hops < MAX_LINKS; hops++) {
      name = at.target === undefined ? "" : linkTarget(name, at.target);
      at = stat.stated.get(name);
    }
    if (at === undefined || at.type === "l") untimed = true;
    else changed.set(path, at.mtime);
  }
  return { changed, ...(untimed && { untimed: true as const }) };
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
