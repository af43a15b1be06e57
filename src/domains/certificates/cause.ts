import type { Cause } from "../cause.js";
import {
  causeTime,
  type CauseSubject,
  type HostRecord,
  type RecordContext,
} from "../host-record.js";
import { shippedFile } from "../package-transaction.js";

// Why a declared certificate file changed: the package transaction that shipped it as it is (a CA
// bundle), or a change of the file since the node's last audit. A certificate that only aged has
// no recorded cause: unknown, saying that its file did not change, never "nothing recorded this
// change" (nothing changed it).

/** The file an item is about: its key without the `:subject`, `:issuer` or `:names` suffix. */
const fileOf = (key: string) => key.replace(/:(subject|issuer|names)$/, "");

export function certificateCause(
  item: CauseSubject,
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  const path = fileOf(item.key);
  // A folder's file: the record holds the declared paths only.
  if (path !== item.path[1]) return undefined;
  const shipped = shippedFile(path, record);
  if (shipped) return shipped.cause;
  const stat = record.stat.get(path);
  if (!stat || ctx.since === undefined) return undefined;
  if (!(stat.mtime > ctx.since))
    return item.key === path && typeof item.live === "string" && item.live.startsWith("expires on ")
      ? {
          kind: "unknown",
          evidence: `${path} has not changed since this node's last audit at ${causeTime(ctx.since)}: the certificate only aged`,
        }
      : undefined;
  return {
    kind: "file-edit",
    at: causeTime(stat.mtime),
    evidence: `${path} changed at ${causeTime(stat.mtime)} (since the last audit), owner ${stat.owner}`,
    group: `file-edit: ${ctx.node} ${path}`,
  };
}
