import type { Cause, Latent } from "../cause.js";
import {
  causeTime,
  latest,
  type CauseSubject,
  type HostRecord,
  type RecordContext,
  type RecordRequest,
} from "../host-record.js";
import { transactionBy } from "../package-transaction.js";

// Why a drifted setting has its value, from what the host recorded of the file whose line sets it
// (compare finds the line, from `sshd -T -ddd`): a package transaction that replaced the file (dpkg's
// conffile prompt, or the file written while dpkg configured its package: openssh-server's postinst
// writes sshd_config through ucf), else the file changed since the node's last audit. Otherwise the
// cause stays unknown, saying what is known: the line, and that its file has not changed since.

const MAIN_CONFIG = "/etc/ssh/sshd_config";
/** The package whose postinst writes MAIN_CONFIG (through ucf: no dpkg conffile). */
const SSHD_PACKAGE = "openssh-server";
/** The configuration files whose changes are read: sshd's own and Debian's drop-in folder. */
const CONFIG_FILES = [MAIN_CONFIG, "/etc/ssh/sshd_config.d/*"];

export const sshdRecords = (): RecordRequest => ({ globs: CONFIG_FILES, steps: true });

/** The line compare found, in its cause's evidence: `FILE:LINE sets Keyword value`. */
const LINE = /^(\/.*?):(\d{1,9}) sets [A-Za-z]/;

export function sshdCause(
  item: CauseSubject,
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  const sets = item.cause?.evidence;
  return sets === undefined ? undefined : lineCause(sets, record, ctx);
}

/** What latent.ts says after the line a restart applies: when its file changed. */
const CHANGED_AFTER_START = / \(changed at [^()]*, after sshd (?:started|was reloaded)\)$/;

/**
 * What put in place the line a restart of sshd applies (latent.ts names it): the package that
 * replaced its file, or the file's edit since the last audit. A file unchanged since then, or no
 * audit history, leaves the latent item without a cause.
 */
export function sshdLatentCause(
  item: CauseSubject & { latent: Latent },
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  const cause = lineCause(item.latent.because.replace(CHANGED_AFTER_START, ""), record, ctx);
  return cause?.kind === "unknown" ? undefined : cause;
}

/** Why `FILE:LINE sets Keyword value` is in its file, from the host's record of that file. */
function lineCause(sets: string, record: HostRecord, ctx: RecordContext): Cause | undefined {
  const file = LINE.exec(sets)?.[1];
  if (file === undefined) return undefined;
  const since = ctx.since;
  if (since === undefined)
    return {
      kind: "unknown",
      evidence: `${sets}; with no audit history, when ${file} changed is not known`,
    };
  // dpkg keeps a packaged file's own mtime: its conffile line tells when the package replaced it.
  const replaced = latest(
    record.conffiles,
    (c) => c.path === file && c.at > since && c.choice === "install",
  );
  if (replaced) {
    const owner = record.owned.get(file)?.package;
    return {
      kind: "package",
      at: causeTime(replaced.at),
      by: transactionBy(replaced.at, record),
      evidence: `${sets}; ${file} replaced by ${owner ? `${owner}'s` : "its package's"} version at ${causeTime(replaced.at)} (dpkg's conffile prompt)`,
      group: `package: ${file} replaced${owner ? ` by ${owner}` : ""}`,
    };
  }
  const stat = record.stat.get(file);
  if (!stat) return { kind: "unknown", evidence: `${sets}; when ${file} changed is not read` };
  if (stat.mtime <= since)
    return {
      kind: "unknown",
      evidence: `${sets}; ${file} has not changed since this node's last audit at ${causeTime(since)}`,
    };
  const when = causeTime(stat.mtime);
  // Written while its own package was configured: only that package's step, never another's that
  // ran the same second as a hand edit.
  const owner = file === MAIN_CONFIG ? SSHD_PACKAGE : record.owned.get(file)?.package;
  const step = latest(
    record.steps ?? [],
    (s) => s.name === owner && s.start <= stat.mtime && stat.mtime <= (s.end ?? s.start),
  );
  if (step)
    return {
      kind: "package",
      at: when,
      by: transactionBy(step.start, record),
      evidence: `${sets}; ${file} written at ${when}, while dpkg configured ${step.name} ${step.version} (its maintainer script)`,
      group: `package: ${step.name} ${step.version} configured`,
    };
  return {
    kind: "file-edit",
    at: when,
    evidence: `${sets}; ${file} modified at ${when}, owner ${stat.owner}, since the last audit`,
    group: `file-edit: ${ctx.node} ${file}`,
  };
}
