import type { Cause, Latent } from "../cause.js";
import { packageChange, transactionCause } from "../package-transaction.js";
import {
  causeTime,
  latest,
  type CauseSubject,
  type HostRecord,
  type RecordContext,
} from "../host-record.js";

/** Debian's kernel packages, named after their images: `linux-image-RELEASE`. */
export const KERNEL_PACKAGE = {
  glob: "/boot/vmlinuz-*",
  strip: "/boot/vmlinuz-",
  prefix: "linux-image-",
};

/**
 * The running kernel changed by a boot since the last audit: the package transaction that installed
 * it before that boot (a planned upgrade), else the boot.
 */
export function rebootCause(
  item: CauseSubject,
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  const boot = record.bootTime;
  // A boot before the last audit did not change what that audit saw.
  if (boot === undefined || (ctx.since !== undefined && boot < ctx.since)) return undefined;
  // Booted into a kernel a package transaction installed before the boot: that transaction.
  const installed = latest(
    record.packages,
    (e) =>
      e.name === `${KERNEL_PACKAGE.prefix}${String(item.live)}` &&
      e.to !== undefined &&
      e.at <= boot,
  );
  if (installed)
    return transactionCause(
      installed,
      record,
      "package",
      `booted ${String(item.live)} at ${causeTime(boot)}; ${packageChange(installed)}`,
    );
  return {
    kind: "reboot",
    at: causeTime(boot),
    evidence: `booted ${String(item.live)} at ${causeTime(boot)}`,
    group: `reboot into ${String(item.live)}`,
  };
}

/** The package transaction that installed the newer kernel the next boot runs, where recorded. */
export function installedCause(
  item: CauseSubject & { latent: Latent },
  record: HostRecord,
): Cause | undefined {
  const next = String(item.latent.becomes);
  // A reboot-required marker alone: the same kernel again, the packages named in `because`.
  if (next === String(item.live)) return undefined;
  const installed = latest(
    record.packages,
    (e) => e.name === `${KERNEL_PACKAGE.prefix}${next}` && e.to !== undefined,
  );
  return installed && transactionCause(installed, record, "package", packageChange(installed));
}
