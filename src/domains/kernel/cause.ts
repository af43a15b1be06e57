import type { Cause } from "../cause.js";
import {
  causeTime,
  type CauseSubject,
  type HostRecord,
  type RecordContext,
} from "../host-record.js";

/** The running kernel changed by a boot since the last audit. */
export function rebootCause(
  item: CauseSubject,
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  const boot = record.bootTime;
  // A boot before the last audit did not change what that audit saw.
  if (boot === undefined || (ctx.since !== undefined && boot < ctx.since)) return undefined;
  return {
    kind: "reboot",
    at: causeTime(boot),
    evidence: `booted ${String(item.live)} at ${causeTime(boot)}`,
    group: `reboot into ${String(item.live)}`,
  };
}
