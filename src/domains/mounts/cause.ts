import type { Cause } from "../cause.js";
import { isoTime, notAHostTime, untimedEvidence } from "../file-times.js";
import {
  causeTime,
  latest,
  type CauseSubject,
  type ConfigureStep,
  type HostRecord,
  type RecordContext,
} from "../host-record.js";
import { shippedPackage, transactionBy } from "../package-transaction.js";

// Why a mount drifted, from when the file the boot reads it from last changed (/etc/fstab or its
// mount unit): a mount the boot would not make, with that file unchanged since the boot (or the
// node's last audit), was mounted by hand or by a program since; a mount as that file says is the
// package that shipped the unit since the node's last audit, or the file's edit since then.

export const FSTAB = "/etc/fstab";
/** The detail of an item whose mount point nothing mounts at boot. */
export const NOT_AT_BOOT = `no line of ${FSTAB} and no mount unit the boot pulls in mounts it`;
/** The detail of an item the boot's fstab line or unit mounts as it is now. */
export const sameAtBoot = (because: string) => `${because} mounts the same at boot`;

/** The file a boot's `because` is in: `/etc/fstab:6` is fstab's line, a unit names its file. */
const fileOf = (because: string) => (because.startsWith(`${FSTAB}:`) ? FSTAB : because);

/** The mtime of `file` in epoch milliseconds, or the cause saying it is no host time. */
function changedAt(file: string, record: HostRecord): number | Cause | undefined {
  const changed = record.stat.get(file)?.mtime;
  if (changed === undefined) return undefined;
  const bad = notAHostTime(Math.floor(changed / 1000));
  return bad === undefined
    ? changed
    : {
        kind: "unknown",
        evidence: untimedEvidence(`${file}'s mtime,`, String(Math.floor(changed / 1000)), bad),
      };
}

/**
 * The configure step of the package that shipped the unit `file` since the last audit (dpkg's file
 * list names it, under either side of a merged /usr), unless the file was edited after it: dpkg
 * keeps a packaged file's own mtime, older than the step.
 */
function shippedSince(file: string, record: HostRecord): ConfigureStep | undefined {
  const name = shippedPackage(file, record);
  const step = name === undefined ? undefined : latest(record.steps ?? [], (s) => s.name === name);
  const edited = record.stat.get(file)?.mtime;
  return step && !(edited !== undefined && edited > (step.end ?? step.start)) ? step : undefined;
}

/**
 * What a boot's `because` says was put in place: the package that shipped its unit since the last
 * audit, or the edit of its file since then.
 */
function bootFileCause(
  because: string,
  says: string,
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  const file = fileOf(because);
  const step = shippedSince(file, record);
  if (step) {
    const at = causeTime(step.start);
    return {
      kind: "package",
      at,
      by: transactionBy(step.start, record),
      evidence: `${file} shipped by ${step.name} ${step.version}, configured at ${at} since this node's last audit: ${because} ${says}`,
      group: `package: ${step.name} ${step.version} configured`,
    };
  }
  const changed = changedAt(file, record);
  if (typeof changed !== "number") return changed;
  if (ctx.since === undefined || changed <= ctx.since) return undefined;
  const owner = record.stat.get(file)!.owner;
  return {
    kind: "file-edit",
    at: causeTime(changed),
    evidence: `${file} modified at ${causeTime(changed)}, owner ${owner}, since this node's last audit: ${because} ${says}`,
    group: `file-edit: ${ctx.node} ${file}`,
  };
}

export function mountCause(
  item: CauseSubject,
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  if (item.live === null) return undefined;
  const notAtBoot = item.detail === NOT_AT_BOOT || item.latent?.because === NOT_AT_BOOT;
  const because = notAtBoot ? undefined : item.latent?.because;
  if (because !== undefined || notAtBoot) {
    // Not what the boot mounts: made since the boot, unless the file the boot reads it from changed
    // since (its line may be newer than the mount).
    const file = because === undefined ? FSTAB : fileOf(because);
    const changed = changedAt(file, record);
    if (typeof changed !== "number") return changed;
    const boot = record.bootTime;
    if (boot === undefined || notAHostTime(Math.floor(boot / 1000)) !== undefined) return undefined;
    const since = Math.max(boot, ctx.since ?? boot);
    // A unit a package shipped since then keeps its older mtime: the step tells when it came.
    if (Math.max(changed, shippedSince(file, record)?.start ?? 0) > since) return undefined;
    const when =
      since === boot
        ? `boot at ${isoTime(boot / 1000)}`
        : `this node's last audit at ${causeTime(since)}`;
    const differs =
      because !== undefined ? `the live mount is not what ${because} mounts` : NOT_AT_BOOT;
    return {
      kind: "runtime",
      evidence: `${differs}, and ${file} has not changed since ${when}: mounted or remounted since, by hand or by a program`,
    };
  }
  const same = /^(.*) mounts the same at boot$/s.exec(item.detail ?? "")?.[1];
  return same === undefined ? undefined : bootFileCause(same, "mounts it so", record, ctx);
}

/** What put the next boot's mount in place: an edit of its file since the last audit. */
export function mountLatentCause(
  item: CauseSubject & { latent: { because: string } },
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  const { because } = item.latent;
  if (because === NOT_AT_BOOT) return undefined;
  return bootFileCause(because, "mounts it at the next boot", record, ctx);
}
