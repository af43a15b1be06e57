import type { Cause } from "../cause.js";
import { latest, type CauseSubject, type HostRecord } from "../host-record.js";
import { packageChange, transactionCause } from "../package-transaction.js";
import { ABSENT } from "./constraint.js";

/** The transaction that installed the live version of a declared package, or removed it. */
export function packageCause(item: CauseSubject, record: HostRecord): Cause | undefined {
  const live = item.live;
  const event = latest(record.packages, (e) =>
    live === ABSENT
      ? e.to === undefined && e.name === item.key
      : e.name === item.key && e.to === live,
  );
  return event && transactionCause(event, record, "package", packageChange(event));
}
