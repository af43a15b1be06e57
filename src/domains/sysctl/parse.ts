/** The kernel prints vector values tab-separated; a manifest writes them with spaces. */
export function normalizeValue(value: string): string {
  return value.trim().split(/\s+/).join(" ");
}

export interface PersistedValue {
  value: string;
  file: string;
  /** The line of `file` that sets it, 1-based. */
  line: number;
}

export interface SysctlLive {
  /** name -> runtime value, from /proc/sys */
  runtime: Map<string, string>;
  /** name -> value the boot-time configuration applies, and the file that wins */
  persisted: Map<string, PersistedValue>;
  /** file -> its mtime, seconds since the epoch: when a persisted file last changed */
  changed: Map<string, number>;
  /** Some persisted file's content time is unknown (a link whose target no line gives): no claim rests on "none changed". */
  untimed?: true;
  /** The boot time (`btime` in /proc/stat), seconds since the epoch; absent if unreadable */
  bootedAt?: number;
  /** The node's last successful audit, seconds since the epoch, when the audit keeps a history */
  auditedAt?: number;
}

/** `grep -H ''` output over /proc/sys files: `/proc/sys/net/core/somaxconn:4096`. */
export function parseRuntimeSysctl(text: string): Map<string, string> {
  const values = new Map<string, string[]>();
  for (const line of text.split("\n")) {
    const m = /^\/proc\/sys\/([^:]+):(.*)$/.exec(line);
    if (!m) continue;
    const name = m[1]!.replaceAll("/", ".");
    const lines = values.get(name);
    if (lines) lines.push(m[2]!);
    else values.set(name, [m[2]!]);
  }
  return new Map([...values].map(([name, lines]) => [name, normalizeValue(lines.join(" "))]));
}

/**
 * The sysctl.d directories `sysctl --system` reads, highest priority first: the probe greps them.
 */
export const PERSISTED_DIRS = [
  "/etc/sysctl.d",
  "/run/sysctl.d",
  "/usr/local/lib/sysctl.d",
  "/usr/lib/sysctl.d",
  "/lib/sysctl.d",
];
const DIR_PRIORITY = PERSISTED_DIRS.map((dir) => `${dir}/`);

/**
 * `grep -H -n` output over sysctl.conf and sysctl.d files (`file:line:text`, or `file:` alone for a
 * file that sets nothing wanted). Applies them as `sysctl --system`
 * does: a file name in an earlier directory masks the same name in later ones, files run in
 * name order, and /etc/sysctl.conf comes last.
 */
export function parsePersistedSysctl(text: string): Map<string, PersistedValue> {
  const byFile = new Map<string, [line: number, text: string][]>();
  for (const line of text.split("\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const file = line.slice(0, colon);
    if (!file.startsWith("/")) continue;
    const lines = byFile.get(file) ?? [];
    const numbered = /^(\d+):(.*)$/.exec(line.slice(colon + 1));
    if (numbered) lines.push([Number(numbered[1]), numbered[2]!]);
    byFile.set(file, lines);
  }
  const chosen = new Map<string, string>(); // basename -> path
  for (const file of byFile.keys()) {
    const dir = DIR_PRIORITY.findIndex((d) => file.startsWith(d));
    if (dir === -1) continue;
    const base = file.slice(DIR_PRIORITY[dir]!.length);
    const current = chosen.get(base);
    const currentDir =
      current === undefined ? Infinity : DIR_PRIORITY.findIndex((d) => current.startsWith(d));
    if (dir < currentDir) chosen.set(base, file);
  }
  const order = [...chosen.keys()].sort().map((base) => chosen.get(base)!);
  if (byFile.has("/etc/sysctl.conf")) order.push("/etc/sysctl.conf");
  const persisted = new Map<string, PersistedValue>();
  for (const file of order) {
    for (const [number, raw] of byFile.get(file)!) {
      const line = raw.trim();
      if (!line || line.startsWith("#") || line.startsWith(";")) continue;
      const m = /^-?\s*([^=\s]+)\s*=\s*(.*)$/.exec(line);
      if (!m) continue;
      const name = m[1]!.replaceAll("/", ".");
      if (name.includes("*")) continue; // globs apply to many keys; not a declaration of one value
      persisted.set(name, { value: normalizeValue(m[2]!), file, line: number });
    }
  }
  return persisted;
}
