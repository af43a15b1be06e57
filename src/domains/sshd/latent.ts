import type { Cause, Latent } from "../cause.js";
import { isoTime, notAHostTime } from "../file-times.js";
import type { SettingLine, SshdLive } from "./parse.js";

// sshd reads its configuration once, when it starts (a session gets it from the listener, never
// from disk): a file changed since then is applied by the next restart, not by the running sshd.

// The start time (boot time plus ticks) and mtimes are whole seconds on two clocks: a file counts
// as changed after the start only past this much, so an sshd started right after an edit is not
// flagged.
const CLOCK_SLACK_S = 2;

const where = (line: SettingLine) => `${line.file}:${line.line}`;
const sets = (line: SettingLine) => `${where(line)} sets ${line.keyword} ${line.value}`;

/**
 * When the listening sshd last read its files: its start, or its last reload (the pid file it
 * rewrote then), whichever is later.
 */
function readAt(live: SshdLive): { at: number; reloaded: boolean } | undefined {
  const { startedAt, reloadedAt } = live.listener ?? {};
  const valid = (t: number | undefined): t is number =>
    t !== undefined && notAHostTime(t) === undefined;
  if (valid(reloadedAt) && (!valid(startedAt) || reloadedAt > startedAt))
    return { at: reloadedAt, reloaded: true };
  return valid(startedAt) ? { at: startedAt, reloaded: false } : undefined;
}

/** The files read that changed after the listening sshd last read them, oldest first. */
export function changedSinceStart(live: SshdLive): [file: string, mtime: number][] {
  const started = readAt(live)?.at;
  if (started === undefined) return [];
  return [...live.changed]
    .filter(([, mtime]) => mtime > started + CLOCK_SLACK_S && notAHostTime(mtime) === undefined)
    .sort(([, a], [, b]) => a - b);
}

/**
 * A keyword the running sshd applies otherwise than its files now say: a line setting it is in a
 * file changed after the listener started. The running sshd applies what it read then, which no
 * file holds any more, so the audit takes it to be the declared value; a reload or restart applies `files`,
 * what `sshd -T` reads now. Undefined when every line setting it is as sshd read it.
 */
export function sshdLatent(
  live: SshdLive,
  key: string,
  files: string | string[] | null,
): { latent: Latent; detail: string } | undefined {
  const newer = new Map(changedSinceStart(live));
  const line = (live.setBy.get(key) ?? []).find((l) => newer.has(l.file));
  const read = readAt(live);
  if (!line || !read) return undefined;
  return {
    latent: {
      after: "restart",
      becomes: files,
      because: `${sets(line)} (changed at ${isoTime(newer.get(line.file)!)}, after sshd ${read.reloaded ? "was reloaded" : "started"})`,
    },
    detail: `sshd (pid ${live.listener!.pid}) ${read.reloaded ? "was last reloaded" : "started"} at ${isoTime(read.at)}, before ${line.file} changed: it applies what it read then, and a reload or restart applies what sshd -T reads now`,
  };
}

/**
 * What the files show of why a keyword has its live value: the first line setting it to that value
 * (sshd keeps a keyword's first value). When and by whom its file was written, the host's record
 * tells (cause.ts); until then the cause is unknown, with the line.
 */
export function settingCause(live: SshdLive, key: string, got: string[]): Cause | undefined {
  const value = got.join(" ").toLowerCase();
  const line = (live.setBy.get(key) ?? []).find(
    (l) => l.value.trim().split(/\s+/).join(" ").toLowerCase() === value,
  );
  return line && { kind: "unknown", evidence: sets(line) };
}
