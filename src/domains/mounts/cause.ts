import type { Cause } from "../cause.js";
import { isoTime, notAHostTime, untimedEvidence } from "../file-times.js";
import {
  causeTime,
  type CauseSubject,
  type HostRecord,
  type RecordContext,
} from "../host-record.js";

// Why a mount drifted, from when /etc/fstab last changed: a mount the boot would not make, with fstab
// unchanged since the boot (or the node's last audit), was mounted by hand or by a program since; a
// mount as fstab says, with fstab changed since the node's last audit, is that edit applied.

export const FSTAB = "/etc/fstab";
/** The detail of an item whose mount point nothing mounts at boot. */
export const NOT_AT_BOOT = `no line of ${FSTAB} and no mount unit the boot pulls in mounts it`;
/** The detail of an item the boot's fstab line mounts as it is now. */
export const sameAtBoot = (because: string) => `${because} mounts the same at boot`;

export function fstabCause(
  item: CauseSubject,
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  const changed = record.stat.get(FSTAB)?.mtime;
  if (item.live === null || changed === undefined) return undefined;
  const seconds = Math.floor(changed / 1000);
  const bad = notAHostTime(seconds);
  if (bad !== undefined)
    return {
      kind: "unknown",
      evidence: untimedEvidence(`${FSTAB}'s mtime,`, String(seconds), bad),
    };
  const line = item.latent?.because.startsWith(`${FSTAB}:`) ? item.latent.because : undefined;
  if (line !== undefined || item.detail === NOT_AT_BOOT) {
    // Not what the boot mounts: made since the boot, unless fstab changed since (its line may be
    // newer than the mount).
    const boot = record.bootTime;
    if (boot === undefined || notAHostTime(Math.floor(boot / 1000)) !== undefined) return undefined;
    const since = Math.max(boot, ctx.since ?? boot);
    if (changed > since) return undefined;
    const when =
      since === boot
        ? `boot at ${isoTime(boot / 1000)}`
        : `this node's last audit at ${causeTime(since)}`;
    const differs = line !== undefined ? `the live mount is not what ${line} mounts` : NOT_AT_BOOT;
    return {
      kind: "runtime",
      evidence: `${differs}, and ${FSTAB} has not changed since ${when}: mounted or remounted since, by hand or by a program`,
    };
  }
  const same = /^(\/etc\/fstab:\d+) mounts the same at boot$/.exec(item.detail ?? "")?.[1];
  if (same === undefined || ctx.since === undefined || changed <= ctx.since) return undefined;
  return {
    kind: "persisted",
    at: causeTime(changed),
    evidence: `${same} mounts it so; ${FSTAB} changed since this node's last audit`,
    group: `persisted: ${ctx.node} ${FSTAB}`,
  };
}
