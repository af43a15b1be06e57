// `adopt --files` and `--units` globs (`/etc/app/*.conf`, `app-*.service`): a path pattern is
// expanded by the host's own shell (pathname expansion only), a unit pattern by systemd from the
// unit files it knows (`systemctl list-unit-files PATTERN`), at most MAX_GLOB_MATCHES per pattern;
// each match the host gives is checked as the manifest checks a file's path or a unit's name, and
// one it would refuse is left out, said.
import { NodeSpec } from "../manifest/schema.js";
import { shellQuote } from "../probe/script.js";
import { utf8 } from "../text/utf8.js";
import type { Transport } from "../transport/transport.js";

/** The most matches one pattern declares on one host; more are said, and the rest left out. */
export const MAX_GLOB_MATCHES = 200;

/** Whether a path or unit name has a glob character the host would expand. */
export const isGlob = (item: string) => /[*?[]/.test(item);

/**
 * Why a host could not expand a pattern, by the code its script prints (`<index>?\t<code>\0`): the
 * words are ours, never the host's.
 */
const NOT_EXPANDED: ReadonlyMap<string, string> = new Map([
  ["no-systemd", "systemd is not running on this host (no /run/systemd/system)"],
  ["no-systemctl", "no systemctl on this host"],
]);

/** How one kind of pattern is expanded on a host and checked. */
interface GlobKind {
  flag: "--files" | "--units";
  /**
   * Shell lines printing `<index>\t<match>\0` for each match of pattern `index`, one more than the
   * cap, or `<index>?\t<code>\0` with a code of NOT_EXPANDED.
   */
  script: (pattern: string, index: number) => string[];
  /** Whether the manifest can declare the match. */
  declarable: (match: string) => boolean;
}

const FILES: GlobKind = {
  flag: "--files",
  // IFS empty: no field splitting, no other expansion of the pattern's text; existing paths only.
  script: (pattern, i) => [
    `n=0; p=${shellQuote(pattern)}; for f in $p; do`,
    `  [ -e "$f" ] || [ -L "$f" ] || continue; n=$((n + 1)); [ "$n" -gt ${MAX_GLOB_MATCHES + 1} ] && break`,
    `  printf '${i}\\t%s\\0' "$f"; done`,
  ],
  declarable: (path) => NodeSpec.safeParse({ files: [{ path }] }).success,
};

const UNITS: GlobKind = {
  flag: "--units",
  // Only where systemd runs (a host without it declares no units); its first column is the name.
  script: (pattern, i) => [
    `if [ ! -d /run/systemd/system ]; then printf '${i}?\\tno-systemd\\0'`,
    `elif ! command -v systemctl >/dev/null 2>&1; then printf '${i}?\\tno-systemctl\\0'`,
    `else systemctl list-unit-files --no-legend --no-pager --plain -- ${shellQuote(pattern)} 2>/dev/null |`,
    `  head -n ${MAX_GLOB_MATCHES + 1} | while IFS=' ' read -r u _; do printf '${i}\\t%s\\0' "$u"; done; fi`,
  ],
  declarable: (name) => NodeSpec.safeParse({ systemd: { units: [{ name }] } }).success,
};

/**
 * The `--files` and `--units` to declare on one host, each glob expanded there in one session
 * (matches in the host's sorted order, after the items given literally, none twice), and what the
 * operator is told about the expansion.
 */
export async function expandAsked(
  transport: Transport,
  asked: { files: readonly string[]; units: readonly string[] },
  timeoutMs: number,
): Promise<{ files: string[]; units: string[]; notes: string[] }> {
  const patterns = [
    ...asked.files.filter(isGlob).map((pattern) => ({ kind: FILES, pattern })),
    ...asked.units.filter(isGlob).map((pattern) => ({ kind: UNITS, pattern })),
  ];
  const literal = (items: readonly string[]) => items.filter((item) => !isGlob(item));
  if (!patterns.length)
    return { files: literal(asked.files), units: literal(asked.units), notes: [] };
  const script = ["IFS=''", ...patterns.flatMap(({ kind, pattern }, i) => kind.script(pattern, i))];
  const run = await transport.run(`${script.join("\n")}\n`, {
    timeoutMs,
    maxOutputBytes: patterns.length * (MAX_GLOB_MATCHES + 1) * 4200,
  });
  const matches = patterns.map((): string[] => []);
  const refused = new Set<number>();
  const notExpanded = new Map<number, string>();
  for (const record of utf8(run.stdout).split("\0")) {
    const cause = /^(\d+)\?\t(.*)$/.exec(record);
    const why = cause && NOT_EXPANDED.get(cause[2]!);
    if (why) notExpanded.set(Number(cause[1]), why);
    const tab = record.indexOf("\t");
    const i = Number(record.slice(0, tab));
    if (tab < 0 || !matches[i]) continue;
    const match = record.slice(tab + 1);
    if (patterns[i]!.kind.declarable(match)) matches[i].push(match);
    else refused.add(i);
  }
  const notes: string[] = [];
  for (const [i, { kind, pattern }] of patterns.entries()) {
    const found = matches[i]!;
    const why = notExpanded.get(i);
    if (why) notes.push(`${kind.flag} ${pattern}: not expanded: ${why}`);
    else if (found.length > MAX_GLOB_MATCHES)
      notes.push(
        `${kind.flag} ${pattern}: more than ${MAX_GLOB_MATCHES} matches; the first ${MAX_GLOB_MATCHES} declared (a narrower pattern declares the rest)`,
      );
    else if (!found.length && !refused.has(i)) notes.push(`${kind.flag} ${pattern}: no match`);
    if (refused.has(i))
      notes.push(`${kind.flag} ${pattern}: a match the manifest cannot declare, left out`);
    matches[i] = found.slice(0, MAX_GLOB_MATCHES);
  }
  const of = (kind: GlobKind, items: readonly string[]) => [
    ...new Set([
      ...literal(items),
      ...patterns.flatMap((p, i) => (p.kind === kind ? matches[i]! : [])),
    ]),
  ];
  return { files: of(FILES, asked.files), units: of(UNITS, asked.units), notes };
}
