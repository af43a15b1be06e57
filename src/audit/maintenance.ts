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

// The shared awk's function over `stat`'s `name dev inode` lines of the lock files (its input): sends
// them, then under the `held` mark each /proc/locks line with a `maj:min:inode` field whose inode is
// one of theirs (a superset of what parseMaintenance matches, dev and all).
export const MAINTENANCE_AWK = [
  "function maintenance_held(  i, n, w, f, l) {",
  'for (i = 1; i <= qm_in; i++) { print qm_i[i]; n = split(qm_i[i], f, " "); w[":" f[n]] = 1 }',
  'printf "\\n%s mark %s\\n", qm_n, "held"; if (qm_in == 0) return',
  'while ((getline l < "/proc/locks") > 0) { n = split(l, f, " ");',
  "for (i = 1; i <= n; i++) if (match(f[i], /:[0-9]+$/) && (substr(f[i], RSTART) in w)) { print l; break } }",
  'close("/proc/locks") }',
].join("\n");

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
    // Else the lock files' inodes; /proc/locks names a lock by major:minor:inode, and a lock on one
    // of them means a package manager runs. Only lines naming one of their inodes are sent: a busy
    // host holds many locks. One stat, then the shared awk: no subshell, no awk of its own.
    "if read -r qm_l 2>/dev/null < /proc/locks; then",
    ctx.awk("maintenance_held", {
      input: `stat -c '%n %d %i' -- ${PACKAGE_LOCKS.join(" ")} 2>/dev/null`,
    }),
    `else ${ctx.mark("held")}; fi`,
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
