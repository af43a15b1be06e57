import type { Cause } from "../cause.js";
import {
  causeTime,
  type CauseSubject,
  type HostRecord,
  type RecordContext,
} from "../host-record.js";
import { shippedFile } from "../package-transaction.js";

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
  // The live file is what the package shipped: the latest transaction that installed it.
  const shipped = shippedFile(path, record);
  if (shipped) return shipped.cause;
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
