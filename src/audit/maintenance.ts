import { partsByLabel, type ProbeContext } from "../domains/domain.js";

export const DEFAULT_MAINTENANCE_MARKER = "/run/quartermaster/maintenance";

// A marker's reason is its first line: read at most this many bytes of it, show at most
// MARKER_REASON_CHARS.
const MARKER_READ_BYTES = 512;
const MARKER_REASON_CHARS = 200;

// Package manager locks: held while dpkg/apt, rpm/dnf or apk change the system.
const PACKAGE_LOCKS = [
  "/var/lib/dpkg/lock-frontend",
  "/var/lib/dpkg/lock",
  "/var/lib/rpm/.rpm.lock",
  "/lib/apk/db/lock",
];

// Reads `name dev inode` lines first, then prints each /proc/locks line with a `maj:min:inode`
// field whose inode is one of theirs (a superset of what parseMaintenance matches, dev and all).
const HELD_LINES = [
  'NR == FNR { w[":" $NF] = 1; next }',
  "{ for (i = 1; i <= NF; i++) if (match($i, /:[0-9]+$/) && (substr($i, RSTART) in w)) { print; next } }",
].join(" ");

/** Reads the maintenance marker and which package-manager lock files are held, without root. */
export function maintenanceProbe(marker: string, ctx: ProbeContext): string {
  const file = ctx.quote(marker);
  return [
    `[ -e ${file} ] && printf 'marker %s\\n' ${file}`,
    ctx.mark("reason"),
    // Only a regular file, never through a symlink (it could point at a secret) nor a fifo (it
    // would block).
    `[ -f ${file} ] && [ ! -h ${file} ] && head -c ${MARKER_READ_BYTES} -- ${file} 2>/dev/null`,
    ctx.mark("locks"),
    // No lock at all (a builtin read of /proc/locks finds no line): nothing to look up, no process.
    "locks=; read -r qm_l 2>/dev/null < /proc/locks &&",
    `  locks=$(stat -c '%n %d %i' -- ${PACKAGE_LOCKS.join(" ")} 2>/dev/null)`,
    `[ -z "$locks" ] || printf '%s\\n' "$locks"`,
    ctx.mark("held"),
    // /proc/locks names a lock by major:minor:inode; a lock on one of the files above means a
    // package manager runs. Only lines naming one of their inodes are sent: a busy host holds many
    // locks.
    `[ -z "$locks" ] || printf '%s\\n' "$locks" | awk '${HELD_LINES}' - /proc/locks 2>/dev/null`,
    "true",
  ].join("\n");
}

/** Why the node is in maintenance, or undefined. */
export function parseMaintenance(output: string, parts: [string, string][]): string | undefined {
  const sections = partsByLabel("maintenance", parts);
  // The marker line is printed first, before the marker's own text could be.
  const marker = /^marker (.+)$/m.exec(output);
  if (marker) {
    const reason = (sections.get("reason") ?? "").split("\n", 1)[0]!.trim();
    const shown =
      reason.length > MARKER_REASON_CHARS ? `${reason.slice(0, MARKER_REASON_CHARS - 1)}…` : reason;
    return `maintenance marker ${marker[1]} is present${shown ? `: ${shown}` : ""}`;
  }
  const locks = new Map<string, string>();
  for (const line of (sections.get("locks") ?? "").split("\n")) {
    const m = /^(\S+) (\d+) (\d+)$/.exec(line);
    if (!m) continue;
    const dev = Number(m[2]);
    const major = (dev >> 8) & 0xfff;
    const minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
    locks.set(`${major}:${minor}:${m[3]}`, m[1]!);
  }
  for (const line of (sections.get("held") ?? "").split("\n")) {
    const m = /\s([0-9a-f]+):([0-9a-f]+):(\d+)\s/.exec(line);
    if (!m) continue;
    const file = locks.get(`${parseInt(m[1]!, 16)}:${parseInt(m[2]!, 16)}:${m[3]}`);
    if (file) return `a package manager holds ${file}`;
  }
  return undefined;
}
