import { partsByLabel, type ProbeContext } from "../domains/domain.js";

export const DEFAULT_MAINTENANCE_MARKER = "/run/quartermaster/maintenance";

// Package manager locks: held while dpkg/apt, rpm/dnf or apk change the system.
const PACKAGE_LOCKS = ["/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", "/var/lib/rpm/.rpm.lock", "/lib/apk/db/lock"];

/** Reads the maintenance marker and which package-manager lock files are held, without root. */
export function maintenanceProbe(marker: string, ctx: ProbeContext): string {
  return [
    `[ -e ${ctx.quote(marker)} ] && printf 'marker %s\\n' ${ctx.quote(marker)}`,
    ctx.mark("locks"),
    `stat -c '%n %d %i' -- ${PACKAGE_LOCKS.join(" ")} 2>/dev/null`,
    ctx.mark("held"),
    // /proc/locks names a lock by major:minor:inode; a lock on one of the files above means a package manager runs.
    "grep -s '' /proc/locks",
    "true",
  ].join("\n");
}

/** Why the node is in maintenance, or undefined. */
export function parseMaintenance(output: string, parts: [string, string][]): string | undefined {
  const marker = /^marker (.+)$/m.exec(output);
  if (marker) return `maintenance marker ${marker[1]} is present`;
  const sections = partsByLabel("maintenance", parts);
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
