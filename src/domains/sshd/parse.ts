import { ProbeParseError } from "../../errors.js";
import { parseBootTime, parseChanged } from "../file-times.js";

/** The most `sshd -T` lines, and lines setting a keyword, the probe sends back. */
export const MAX_LINES = 500;

// The probe's section, parsed: `sshd -T`'s effective settings for the wanted keywords, the lines of
// the configuration files that set them (from `sshd -T -ddd`), the files sshd read, when each
// changed, and when the listening sshd started.

/** The probe's line between the lines sshd read at its start and those of the Match blocks it applies. */
export const MATCH_PHASE = "match";

/** Clock ticks per second of /proc/PID/stat's start time: USER_HZ, 100 on every Linux ABI. */
export const USER_HZ = 100;

/** A line of a configuration file that sets a keyword, as `sshd -T -ddd` reports parsing it. */
export interface SettingLine {
  /** The file, or the main configuration file for a line sshd re-read to apply a Match block. */
  file: string;
  line: number;
  /** The keyword as the file writes it (`PasswordAuthentication`). */
  keyword: string;
  value: string;
  /** Set by a Match block applied for the declared connection, which overrides the others. */
  match?: true;
}

export interface SshdLive {
  /** Lowercase keyword -> its values, one per line `sshd -T` printed for it, in its order. */
  settings: Map<string, string[]>;
  /** Lowercase keyword -> the lines of the configuration files setting it, in parse order. */
  setBy: Map<string, SettingLine[]>;
  /** The configuration file sshd was given (`-f` of the running sshd, else the default). */
  config: string;
  /** The files sshd read and the directories of its `Include` globs, with their mtimes. */
  changed: Map<string, number>;
  /**
   * The sshd listening in the host's network namespace, when one runs: when it started, and when it
   * last rewrote its pid file (each start, a reload's re-exec included, which keeps the pid and
   * its start time).
   */
  listener?: { pid: number; startedAt?: number; reloadedAt?: number };
  /** The node's last successful audit, seconds since the epoch, when the history tells it. */
  auditedAt?: number;
  /** Keywords whose `sshd -T` lines the probe's bound cut: not compared. */
  cut: Set<string>;
  unknown: string[];
}

/** The re-read of the main file to apply Match blocks, as `sshd -ddd` names it. */
const REPROCESS = "reprocess config";

/** `passwordauthentication no` lines: keyword -> values in order. */
export function parseSettings(text: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  for (const line of text.split("\n")) {
    if (!line) continue;
    const m = /^([a-z][a-z0-9]*)(?: (.*))?$/.exec(line);
    if (!m)
      throw new ProbeParseError(
        "sshd",
        `not an sshd -T line: ${JSON.stringify(line.slice(0, 80))}`,
      );
    const values = settings.get(m[1]!);
    const value = (m[2] ?? "").trim();
    if (values) values.push(value);
    else settings.set(m[1]!, [value]);
  }
  return settings;
}

/** `FILE:LINE setting Keyword value` lines (sshd -ddd's, its `debug3: ` cut): keyword -> lines. */
export function parseSettingLines(text: string, config: string): Map<string, SettingLine[]> {
  const setBy = new Map<string, SettingLine[]>();
  let match = false;
  for (const line of text.split("\n")) {
    if (line === MATCH_PHASE) match = true;
    const m = /^(.+):(\d{1,9}) setting ([A-Za-z][A-Za-z0-9]*)(?: (.*))?$/.exec(line);
    if (!m) continue;
    const keyword = m[3]!;
    const file = m[1] === REPROCESS ? config : m[1]!;
    const key = keyword.toLowerCase();
    const lines = setBy.get(key) ?? [];
    lines.push({
      file,
      line: Number(m[2]),
      keyword,
      value: (m[4] ?? "").trim(),
      ...(match && { match: true as const }),
    });
    setBy.set(key, lines);
  }
  return setBy;
}

/**
 * When the listening sshd started, seconds since the epoch: the boot time plus the 22nd field of
 * its /proc/PID/stat (ticks since boot), read after the command name, which may hold anything.
 */
export function startedAt(stat: string, bootedAt: number | undefined): number | undefined {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = fields[19];
  if (bootedAt === undefined || ticks === undefined || !/^\d{1,15}$/.test(ticks)) return undefined;
  return bootedAt + Math.floor(Number(ticks) / USER_HZ);
}

/** LogLevel words as `sshd -T` prints them, where it prints another. */
const LOG_LEVEL_PRINTED: Record<string, string> = { QUIET: "SILENT", DEBUG1: "DEBUG" };

/**
 * The LogLevel sshd -T prints without `-ddd` (which makes it print its own, DEBUG3): a Match
 * block's for the declared connection, else the first line setting it, else sshd's default.
 */
function configuredLogLevel(setBy: Map<string, SettingLine[]>): string {
  const lines = setBy.get("loglevel") ?? [];
  const word = (lines.find((l) => l.match) ?? lines[0])?.value.toUpperCase() ?? "INFO";
  return Object.hasOwn(LOG_LEVEL_PRINTED, word) ? LOG_LEVEL_PRINTED[word]! : word;
}

/** The `state` part: `key value` lines the probe's shell and awk print. */
function parseState(text: string): { state: Map<string, string>; cut: Set<string> } {
  const state = new Map<string, string>();
  const cut = new Set<string>();
  for (const line of text.split("\n")) {
    const space = line.indexOf(" ");
    if (space <= 0) continue;
    const [key, value] = [line.slice(0, space), line.slice(space + 1)];
    if (key === "cut") cut.add(value);
    else state.set(key, value);
  }
  return { state, cut };
}

export function parseSshd(parts: Map<string, string>): SshdLive {
  const { state, cut } = parseState(parts.get("state") ?? "");
  const config = state.get("config");
  if (config === undefined) throw new ProbeParseError("sshd", "no configuration file named");
  const pid = state.get("listener");
  const number = (key: string) => {
    const value = state.get(key);
    return value !== undefined && /^\d{1,15}$/.test(value) ? Number(value) : undefined;
  };
  const bootedAt = parseBootTime(parts.get("boot") ?? "");
  const started = pid && startedAt(parts.get("stat") ?? "", bootedAt);
  const audited = number("audited");
  const settings = parseSettings(parts.get("config") ?? "");
  const setBy = parseSettingLines(parts.get("set") ?? "", config);
  if (settings.has("loglevel")) settings.set("loglevel", [configuredLogLevel(setBy)]);
  const changed = parseChanged(parts.get("changed") ?? "");
  // The probe stats the pid file only where it holds the listener's pid; it is no file sshd reads.
  const pidFile = state.get("pidfile");
  const reloaded = pidFile === undefined ? undefined : changed.get(pidFile);
  if (pidFile !== undefined) changed.delete(pidFile);
  return {
    settings,
    setBy,
    config,
    changed,
    ...(pid !== undefined &&
      /^\d{1,9}$/.test(pid) && {
        listener: {
          pid: Number(pid),
          ...(started !== undefined && started !== "" && { startedAt: started }),
          ...(reloaded !== undefined && { reloadedAt: reloaded }),
        },
      }),
    ...(audited !== undefined && { auditedAt: audited }),
    cut,
    unknown: [...cut].map(
      (key) => `sshd -T prints more than ${MAX_LINES} lines: ${key} is cut, not compared`,
    ),
  };
}
