import type { Cause } from "../cause.js";
import {
  causeTime,
  latest,
  type CauseSubject,
  type HostRecord,
  type RecordContext,
  type RecordRequest,
} from "../host-record.js";
import { packageChange, packageRunAt, transactionCause } from "../package-transaction.js";
import { PASSWD_BACKUP } from "./probe.js";

// What the host records of an account change. The file that holds the item changed since the
// node's last audit is the edit that made it (useradd, usermod and gpasswd rewrite the whole file):
// a sudoers file (named by the item's file:line), an authorized_keys file, /etc/passwd or
// /etc/group. A package is the cause where the record ties it: a login user the latest change of
// /etc/passwd added, while dpkg configured a package (its postinst ran adduser) or apt ran; a sudo
// entry in a file a package ships as a conffile, that package installed or upgraded since and the
// file not edited after. A file unchanged since the last audit says nothing: unknown.

const PASSWD = "/etc/passwd";
const GROUP = "/etc/group";
/** The sudoers files whose changes are read: sudo's own and its usual include folder. */
const SUDOERS = ["/etc/sudoers", "/etc/sudoers.d/*"];
/** The authorized_keys files whose changes are read: root's, and those of homes under /home. */
const KEY_FILES = ["/root/.ssh/authorized_keys", "/home/*/.ssh/authorized_keys"];

/** The end of an undeclared login user's detail when /etc/passwd- does not hold it. */
export const ADDED_LAST = `not in ${PASSWD_BACKUP}: added by the latest change of ${PASSWD}`;

export const accountsRecords = (declared: {
  users?: Record<string, { authorized_keys?: readonly string[] }>;
  sudo?: readonly string[];
}): RecordRequest => {
  const keys = Object.values(declared.users ?? {}).some((u) => u.authorized_keys);
  const globs = [...(declared.sudo ? SUDOERS : []), ...(keys ? KEY_FILES : [])];
  return {
    files: [PASSWD, GROUP],
    ...(declared.users && { steps: true }),
    ...(globs.length > 0 && { globs }),
  };
};

/** The file an item's live value is read from, with the line where it is known. */
function fileOf(item: CauseSubject): { file: string; line?: string } | undefined {
  if (item.key.startsWith("sudo:")) {
    // `at FILE:LINE, …`: the first place sudo reads the entry.
    const at = /^at (\/.*?):(\d{1,9})(?:, |$)/.exec(item.detail ?? "");
    return at ? { file: at[1]!, line: at[2]! } : undefined;
  }
  if (item.key.endsWith(":authorized_keys")) {
    const file = /\((\/[^\n]*\/\.ssh\/authorized_keys)\)$/.exec(item.detail ?? "")?.[1];
    return file === undefined ? undefined : { file };
  }
  if (item.key.startsWith("group:") || item.key.endsWith(":groups")) return { file: GROUP };
  if (item.key.startsWith("user:")) return { file: PASSWD };
  return undefined;
}

/** A new login user /etc/passwd's latest change added, in a package's configure step or apt's run. */
function createdByPackage(name: string, mtime: number, record: HostRecord): Cause | undefined {
  const run = packageRunAt(mtime, record);
  const when = causeTime(mtime);
  return (
    run && {
      kind: "package",
      at: when,
      by: run.by,
      evidence: `${name} added to ${PASSWD} at ${when}, ${run.during}`,
      group: run.group,
    }
  );
}

/** A sudo entry's file as its package shipped it: that package's transaction since the last audit. */
function shippedSudoers(
  where: string,
  file: string,
  record: HostRecord,
  edited: number | undefined,
): Cause | undefined {
  const owner = record.owned.get(file)?.package;
  const event =
    owner === undefined
      ? undefined
      : latest(record.packages, (e) => e.name === owner && e.to !== undefined);
  // Edited after the package put it there: the edit made the entry.
  if (!event || (edited !== undefined && edited > event.at)) return undefined;
  return transactionCause(
    event,
    record,
    "package",
    `${where} holds it, a conffile of ${owner} since ${packageChange(event)}`,
  );
}

export function accountsCause(
  item: CauseSubject,
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  const at = fileOf(item);
  if (!at) return undefined;
  const { file } = at;
  const where = at.line === undefined ? file : `${file}:${at.line}`;
  const stat = record.stat.get(file);
  const changed = stat && ctx.since !== undefined && stat.mtime > ctx.since ? stat : undefined;
  if (item.key.startsWith("sudo:")) {
    if (item.live === null) return undefined;
    const shipped = shippedSudoers(where, file, record, changed?.mtime);
    if (shipped) return shipped;
  }
  if (!changed) return undefined;
  const name = /^user:(.*)$/.exec(item.key)?.[1];
  if (
    name !== undefined &&
    item.declared === null &&
    item.detail?.endsWith(ADDED_LAST) &&
    file === PASSWD
  ) {
    const created = createdByPackage(name, changed.mtime, record);
    if (created) return created;
  }
  return {
    kind: "file-edit",
    at: causeTime(changed.mtime),
    evidence: `${file} modified at ${causeTime(changed.mtime)}, owner ${changed.owner}, since the last audit${at.line === undefined ? "" : `: ${where} holds it`}`,
    group: `file-edit: ${ctx.node} ${file}`,
  };
}
