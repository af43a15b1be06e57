// needrestart's check: a process of a declared unit that still maps a library under /lib or
// /usr/lib which was since deleted or replaced (a package update renames the new file over the
// old one) runs the old code until the unit restarts.

/** Where a unit's cgroup.procs may be: cgroup v2, the hybrid layout's v2 tree, then v1. */
const CGROUP_ROOTS = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd"];

// A maps line whose file is under /lib or /usr/lib and is marked deleted; the probe sends no
// other, and the parser checks each field again (a host's output is not trusted to be this).
const DELETED_LIBRARY = String.raw`^[^ ]+ [^ ]+ [^ ]+ [^ ]+ [0-9]+ +/(usr/)?lib/.* \(deleted\)$`;

/**
 * Shell lines reading, from the `systemctl show` output in `$qm_show` (MainPID and ControlGroup per
 * unit, blocks separated by blank lines), each active unit's processes: `procs` (each cgroup.procs
 * path read, then its pids, a line each), then `maps` (`/proc/<pid>/maps:<line>` for each deleted library mapped) and
 * `maps-errors` (grep's message for each maps file it could not read). The main PID is checked too,
 * in or out of the cgroup found. No process runs when no unit is active.
 */
export function mapsProbe(mark: (label: string) => string, quote: (s: string) => string): string[] {
  return [
    "set --; qm_pids=; qm_main=; qm_cgf=",
    "while IFS= read -r qm_line; do",
    "  case $qm_line in",
    "    MainPID=*[!0-9]*|MainPID=0|MainPID=) ;;",
    "    MainPID=*) qm_main=${qm_line#MainPID=} ;;",
    `    ControlGroup=/*) for qm_d in ${CGROUP_ROOTS.join(" ")}; do if [ -f "$qm_d\${qm_line#ControlGroup=}/cgroup.procs" ]; then qm_cgf=$qm_d\${qm_line#ControlGroup=}/cgroup.procs; break; fi; done ;;`,
    `    '') [ -n "$qm_cgf" ] && set -- "$@" "$qm_cgf"; qm_pids="$qm_pids $qm_main"; qm_cgf=; qm_main= ;;`,
    "  esac",
    "done <<QM_SHOW",
    "$qm_show",
    "",
    "QM_SHOW",
    "qm_procs=; [ $# -gt 0 ] && qm_procs=$(grep -H '' -- \"$@\" 2>/dev/null)",
    'set --; for qm_p in $qm_pids; do set -- "$@" /proc/$qm_p/maps; done',
    // Each cgroup.procs path once, then its pids: a path per pid would cost a line of each.
    `${mark("procs")}; qm_last=`,
    "while IFS= read -r qm_line; do",
    "  qm_p=${qm_line##*:}; qm_f=${qm_line%:*}",
    // 0: a process of another pid namespace sharing the cgroup, not this host's.
    "  case $qm_p in ''|0|*[!0-9]*) continue ;; esac",
    `  [ "$qm_f" = "$qm_last" ] || { printf '%s\\n' "$qm_f"; qm_last=$qm_f; }`,
    `  printf '%s\\n' "$qm_p"; set -- "$@" /proc/$qm_p/maps`,
    "done <<QM_PROCS",
    "$qm_procs",
    "QM_PROCS",
    // grep's messages are kept apart from its matches: on one stream a buffered match could be cut
    // by a message.
    `if [ $# -gt 0 ]; then ${mark("maps")}; { qm_err=$(grep -H -E ${quote(DELETED_LIBRARY)} -- "$@" 2>&1 >&3); } 3>&1; ${mark("maps-errors")}; printf '%s\\n' "$qm_err"; fi`,
  ];
}

/** What the probe saw of the processes: pid -> deleted libraries, pid -> why unreadable. */
export interface ProcessMaps {
  /** cgroup.procs path -> its pids. */
  procs: Map<string, number[]>;
  /** pid -> the deleted files under /lib and /usr/lib it maps, in order of first mapping. */
  deleted: Map<number, Set<string>>;
  /** pid -> why its maps could not be read (grep's message). */
  unreadable: Map<number, string>;
}

const PID = /^\d{1,10}$/;

/** cgroup.procs paths (a line starting with `/`), each followed by its pids. */
export function parseProcs(text: string, maps: ProcessMaps): void {
  let pids: number[] | undefined;
  for (const line of text.split("\n")) {
    if (line.startsWith("/")) {
      pids = maps.procs.get(line) ?? [];
      maps.procs.set(line, pids);
    } else if (PID.test(line) && line !== "0") pids?.push(Number(line)); // 0: another pid namespace's
  }
}

const MAPS_FILE = /^\/proc\/(\d{1,10})\/maps:/;
// address perms offset dev inode, then the path after the padding; each field checked by shape.
const MAPS_LINE = /^[0-9a-f]+-[0-9a-f]+ [-rwxps]{4} [0-9a-f]+ [0-9a-f]+:[0-9a-f]+ \d+ +(\/.*)$/;
const DELETED = " (deleted)";

/**
 * One maps line's file, when it is a deleted library: under /lib or /usr/lib, marked deleted by the
 * kernel. memfd and /dev/shm mappings, libffi's /tmp/ffi* files and pseudo names ([heap]) are not.
 */
export function deletedLibrary(line: string): string | undefined {
  const path = MAPS_LINE.exec(line)?.[1];
  if (path === undefined || !path.endsWith(DELETED)) return undefined;
  const file = path.slice(0, -DELETED.length);
  return file.startsWith("/lib/") || file.startsWith("/usr/lib/") ? file : undefined;
}

/** `/proc/<pid>/maps:<line>` matches. */
export function parseMaps(text: string, maps: ProcessMaps): void {
  for (const line of text.split("\n")) {
    const m = MAPS_FILE.exec(line);
    if (!m) continue;
    const file = deletedLibrary(line.slice(m[0].length));
    if (file === undefined) continue;
    const pid = Number(m[1]);
    const files = maps.deleted.get(pid) ?? new Set<string>();
    files.add(file);
    maps.deleted.set(pid, files);
  }
}

/** `grep: /proc/<pid>/maps: <message>` lines: the process's maps could not be read. */
export function parseMapsErrors(text: string, maps: ProcessMaps): void {
  for (const line of text.split("\n")) {
    const m = /^grep: \/proc\/(\d{1,10})\/maps: (.{1,200})/.exec(line);
    if (m) maps.unreadable.set(Number(m[1]), m[2]!);
  }
}

/** The pids of a unit: its main PID and those of its cgroup (the first root that has it). */
export function unitPids(
  maps: ProcessMaps,
  controlGroup: string | undefined,
  mainPid: number | undefined,
): number[] {
  const pids = new Set(mainPid ? [mainPid] : []);
  const found = controlGroup?.startsWith("/")
    ? CGROUP_ROOTS.map((root) => maps.procs.get(`${root}${controlGroup}/cgroup.procs`)).find(
        (listed) => listed !== undefined,
      )
    : undefined;
  for (const pid of found ?? []) pids.add(pid);
  return [...pids];
}
