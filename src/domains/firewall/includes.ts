// The files nft's boot-time rules file includes (`include "FILE"`, a glob as nft allows, nested), so
// that the cause of a rule sees their changes too. The probe finds them with the shell's own `read`
// and globbing, as nft resolves them: an absolute path as is, `./` and `../` from the boot's working
// directory (/), anything else under nft's include path (/etc). It compares each with the rules file
// by `-nt`, a shell test: only files changed after the rules file are asked their mtime (one `stat`),
// so a host whose includes are older than its rules file pays no process for them.

/** At most this many files (the rules file, its includes, a glob's folder) are looked at. */
export const MAX_INCLUDED = 64;
/** At most this many lines of them are read, all files together (dash reads a byte per call). */
export const MAX_INCLUDE_LINES = 2000;

/**
 * Shell lines listing what `$qm_f` includes under `mark("includes")`, one path a line (a glob's
 * folder too: a file coming or going changes its mtime), `cut WHY` where the bounds stopped the
 * reading; then, under `mark("includes-newer")`, `MTIME OWNER PATH` of those changed after `$qm_f`.
 * Uses the section's positional parameters.
 */
export function includesProbe(mark: (label: string) => string): string[] {
  const cut = (why: string) => `qm_cut="${why}"`;
  return [
    mark("includes"),
    `set -- "$qm_f"; qm_i=0; qm_l=0; qm_cut=; qm_w=; qm_p=; qm_x=; qm_g=`,
    `while [ -z "$qm_cut" ] && [ "$qm_i" -lt $# ]; do qm_i=$((qm_i + 1)); eval "qm_x=\\\${$qm_i}"`,
    `[ -f "$qm_x" ] && [ -r "$qm_x" ] || continue`,
    `while read -r qm_w qm_p || [ -n "$qm_w" ]; do`,
    `qm_l=$((qm_l + 1)); if [ "$qm_l" -gt ${MAX_INCLUDE_LINES} ]; then ${cut(`more than ${MAX_INCLUDE_LINES} lines`)}; break; fi`,
    `[ "$qm_w" = include ] || continue`,
    `case $qm_p in \\"*\\"*) ;; *) continue;; esac`,
    `qm_p=\${qm_p#\\"}; qm_p=\${qm_p%%\\"*}`,
    `case $qm_p in /*) ;; ./*|../*) qm_p=/$qm_p;; *) qm_p=/etc/$qm_p;; esac`,
    `case $qm_p in *[*?[]*) ;; *) set -- "$@" "$qm_p"; continue;; esac`,
    // A glob is expanded by the shell as nft's glob(3) does; with a blank in it, it cannot be.
    `case $qm_p in *" "*|*"\t"*) ${cut("a glob with a blank in it")}; break;; esac`,
    `set -- "$@" "\${qm_p%/*}"; for qm_g in $qm_p; do [ -f "$qm_g" ] && set -- "$@" "$qm_g"; done`,
    `if [ $# -gt ${MAX_INCLUDED} ]; then ${cut(`more than ${MAX_INCLUDED} files`)}; break; fi`,
    `done < "$qm_x"; done`,
    `[ -z "$qm_cut" ] || printf 'cut %s\\n' "$qm_cut"`,
    `shift; qm_g=; for qm_x do printf '%s\\n' "$qm_x"; [ "$qm_x" -nt "$qm_f" ] && qm_g=1; done`,
    `if [ -n "$qm_g" ]; then ${mark("includes-newer")}; for qm_x do shift; [ "$qm_x" -nt "$qm_f" ] && set -- "$@" "$qm_x"; done; stat -c '%Y %U %n' -- "$@" 2>/dev/null; fi`,
  ];
}

/** What the rules file includes, as the probe read it. */
export interface Includes {
  /** Every file (and glob folder) it includes, nested includes too. */
  files: string[];
  /** Those changed after the rules file: their mtime (epoch milliseconds) and owner. */
  newer: { file: string; mtime: number; owner: string }[];
  /** Why not every include was read (the probe's bounds), if so. */
  cut?: string;
}

/** The `includes` part: a path a line, or `cut WHY`; at most MAX_INCLUDED paths are kept. */
export function parseIncludes(part: string): Includes {
  const includes: Includes = { files: [], newer: [] };
  for (const line of part.split("\n")) {
    if (line.startsWith("cut ")) includes.cut = line.slice(4, 200);
    else if (line.startsWith("/") && includes.files.length < MAX_INCLUDED)
      includes.files.push(line);
  }
  return includes;
}

/** The `includes-newer` part, `stat -c '%Y %U %n'` lines, into `includes.newer`. */
export function parseNewer(part: string, includes: Includes): void {
  for (const line of part.split("\n")) {
    const m = /^(\d{1,12}) (\S+) (\/.*)$/.exec(line);
    if (m && includes.newer.length < MAX_INCLUDED)
      includes.newer.push({ file: m[3]!, mtime: Number(m[1]) * 1000, owner: m[2]! });
  }
}
