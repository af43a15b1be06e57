import type { Cause } from "../cause.js";
import {
  causeTime,
  latest,
  type CauseSubject,
  type HostRecord,
  type RecordContext,
} from "../host-record.js";
import { packageChange, transactionCause } from "../package-transaction.js";

// Content findings of a declared file (its contents, or its hash): what an edit or a package changes.
const CONTENT = new Set(["contents", "sha256"]);

/**
 * A declared file's contents: the package transaction that shipped the live file, or a local edit
 * at its mtime (a file no package ships, or a package's file with other contents than it shipped).
 */
export function fileCause(
  item: CauseSubject,
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  if (!CONTENT.has(String(item.path.at(-1))) || typeof item.live !== "string") return undefined;
  const path = item.key;
  const owned = record.owned.get(path);
  const digest = record.digest.get(path);
  if (owned?.digest !== undefined && digest === owned.digest) {
    // The live file is what the package shipped: the latest transaction that installed it.
    const event = latest(record.packages, (e) => e.name === owned.package && e.to !== undefined);
    if (!event) return undefined;
    return transactionCause(
      event,
      record,
      "package-file",
      `${path} replaced by ${packageChange(event)}`,
    );
  }
  const stat = record.stat.get(path);
  // A package's file with other contents than it shipped, or a file no package ships: edited.
  if (!stat || (owned && (digest === undefined || owned.digest === undefined))) return undefined;
  const of = owned ? `, a local edit of ${owned.package}'s file` : "";
  return {
    kind: "file-edit",
    at: causeTime(stat.mtime),
    evidence: `${path} modified at ${causeTime(stat.mtime)}, owner ${stat.owner}${of}`,
    group: `file-edit: ${ctx.node} ${path}`,
  };
}
