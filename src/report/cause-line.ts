import type { Cause, CauseKind } from "../domains/cause.js";

// One line saying why an item drifted, in every human format: the words are Quartermaster's, the
// host's text (who, what) goes through `quote` (visible text on a terminal, a code span in Markdown).

const SAID: Record<CauseKind, string> = {
  package: "changed",
  "package-file": "replaced",
  "file-edit": "edited",
  runtime: "changed at runtime",
  persisted: "persisted",
  reboot: "rebooted",
  rollout: "rollout pending",
  unknown: "cause unknown",
};

/** `2026-12-01T03:12:45Z` as `2026-12-01 03:12 UTC`. */
export function minuteUtc(at: string): string {
  const ms = Date.parse(at);
  return Number.isNaN(ms) ? at : `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** "changed by unattended-upgrades at 2026-12-01 03:12 UTC: postgresql-16 16.4-1 → 16.6-1" */
export function causeLine(cause: Cause, quote: (hostText: string) => string): string {
  const by = cause.by === undefined ? "" : ` by ${quote(cause.by)}`;
  const at = cause.at === undefined ? "" : ` at ${minuteUtc(cause.at)}`;
  const commit = cause.commit === undefined ? "" : ` (commit ${quote(cause.commit.slice(0, 12))})`;
  return `${SAID[cause.kind]}${by}${at}${commit}: ${quote(cause.evidence)}`;
}

/**
 * The order a reviewer reads causes in: what replaced a declared value's file (a conffile, a
 * persisted file) first, then the transactions behind the rest, unknown last.
 */
export const CAUSE_ORDER: readonly CauseKind[] = [
  "package-file",
  "persisted",
  "package",
  "file-edit",
  "runtime",
  "reboot",
  "rollout",
  "unknown",
];

/** Where a cause's kind comes in CAUSE_ORDER. */
export const causeRank = (cause: Pick<Cause, "kind">) => CAUSE_ORDER.indexOf(cause.kind);

const unique = <T>(list: readonly T[]): T[] => [...new Set(list)];

/** The first `max` of `texts` through `quote`, then how many more. */
function some(texts: readonly string[], quote: (text: string) => string, max = 3): string {
  const shown = texts.slice(0, max).map(quote).join(", ");
  return texts.length > max ? `${shown} and ${texts.length - max} more` : shown;
}

/**
 * One cause across the hosts it ran on, in one line: what, by whom, when (a span when it ran at
 * several times), its evidence, each once, and the hosts that recorded it when several did (each
 * host's record is its own text, and one host can copy another's).
 */
export function causeGroupLine(
  group: readonly Cause[],
  hosts: readonly string[],
  quote: (hostText: string) => string,
): string {
  // A transaction's replaced conffile before its package changes: the line that moved a value.
  const causes = [...group].sort((a, b) => causeRank(a) - causeRank(b));
  const kind = causes[0]!.kind;
  const bys = unique(causes.flatMap((c) => c.by ?? []));
  const times = unique(causes.flatMap((c) => (c.at === undefined ? [] : [minuteUtc(c.at)]))).sort();
  const commits = unique(causes.flatMap((c) => c.commit?.slice(0, 12) ?? []));
  const by = bys.length ? ` by ${some(bys, quote)}` : "";
  const when =
    times.length === 0
      ? ""
      : times.length === 1
        ? ` at ${times[0]}`
        : ` between ${times[0]} and ${times.at(-1)}`;
  const commit = commits.length ? ` (commit ${some(commits, quote)})` : "";
  const recorded =
    hosts.length > 1 && kind !== "unknown"
      ? ` (as each of ${some(hosts, (host) => quote(host), 5)} recorded it)`
      : "";
  return `${SAID[kind]}${by}${when}${commit}: ${some(unique(causes.map((c) => c.evidence)), quote)}${recorded}`;
}
