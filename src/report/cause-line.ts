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
