import type { Cause } from "../cause.js";
import {
  causeTime,
  type CauseSubject,
  type HostRecord,
  type RecordContext,
  type RecordRequest,
} from "../host-record.js";

// What the host records of an account change: the mtime of the file that holds it. A file changed
// since the node's last audit is the edit that made the item (useradd, usermod and gpasswd rewrite
// the whole file); one unchanged since says nothing, and the cause stays unknown.

const PASSWD = "/etc/passwd";
const GROUP = "/etc/group";

export const accountsRecords = (): RecordRequest => ({ files: [PASSWD, GROUP] });

/** The file an item's live value is read from, where one file holds it all. */
function fileOf(item: CauseSubject): string | undefined {
  if (item.key.startsWith("group:") || item.key.endsWith(":groups")) return GROUP;
  if (item.key.startsWith("user:") && !item.key.endsWith(":authorized_keys")) return PASSWD;
  return undefined;
}

export function accountsCause(
  item: CauseSubject,
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  const file = fileOf(item);
  const stat = file === undefined ? undefined : record.stat.get(file);
  if (!stat || ctx.since === undefined || stat.mtime < ctx.since) return undefined;
  return {
    kind: "file-edit",
    at: causeTime(stat.mtime),
    evidence: `${file} modified at ${causeTime(stat.mtime)}, owner ${stat.owner}, since the last audit`,
    group: `file-edit: ${ctx.node} ${file}`,
  };
}
