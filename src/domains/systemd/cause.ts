import type { Cause, Latent } from "../cause.js";
import {
  causeTime,
  type CauseSubject,
  type HostRecord,
  type RecordContext,
  type RecordRequest,
} from "../host-record.js";
import { packageChange, shippedPackage, transactionCause } from "../package-transaction.js";
import type { SystemdDeclared } from "./declared.js";
import { namedLibraries, splitLatentKey } from "./latent.js";

const WANTS = "/etc/systemd/system/";

// The libraries a unit's process may map (`maps.ts` counts deleted files under /lib and /usr/lib):
// shared objects, `libssl.so.3`, `ld-linux-x86-64.so.2`. No backslash: awk -v would take it out.
const LIBRARY = "^/(usr/)?lib/.*[.]so([.][0-9]+)*$";

/**
 * The enablement links of the declared units, and the link directories themselves; the libraries
 * the packages configured since the last audit ship, for a library replaced under a running unit.
 */
export const enablementRecords = (declared: SystemdDeclared): RecordRequest => ({
  stat: [{ under: `${WANTS}*.wants`, entries: declared.map((unit) => unit.name) }],
  shippedMatching: [LIBRARY],
});

/**
 * A unit mapping a deleted library: the package install or upgrade since the last audit that
 * replaced the first one named whose package dpkg's log records.
 */
export function replacedLibraryCause(
  item: CauseSubject & { latent: Latent },
  record: HostRecord,
): Cause | undefined {
  if (splitLatentKey(item.key)[1] !== "libraries") return undefined;
  for (const file of namedLibraries(item.latent.because)) {
    const name = shippedPackage(file, record);
    const event = name === undefined ? undefined : record.shippedIn?.get(name);
    if (event)
      return transactionCause(
        event,
        record,
        "package-file",
        `${file} replaced by ${packageChange(event)}`,
      );
  }
  return undefined;
}

/** A unit enabled or disabled since the last audit: its enablement link, or the one link directory that changed. */
export function enablementCause(
  item: CauseSubject,
  record: HostRecord,
  ctx: RecordContext,
): Cause | undefined {
  const unit = item.key.endsWith(":enabled") ? item.key.slice(0, -":enabled".length) : undefined;
  if (unit === undefined || ctx.since === undefined) return undefined;
  const since = ctx.since;
  const changed = (entry: [string, { mtime: number }]) =>
    entry[0].startsWith(WANTS) && entry[1].mtime >= since;
  const entries = [...record.stat].filter(changed);
  const links = entries.filter(([path]) => path.endsWith(`.wants/${unit}`));
  const dirs = entries.filter(([path]) => path.endsWith(".wants"));
  const [path, stat] = item.live === true ? (links[0] ?? []) : dirs.length === 1 ? dirs[0]! : [];
  if (path === undefined || stat === undefined) return undefined;
  return {
    kind: "persisted",
    at: causeTime(stat.mtime),
    evidence: item.live === true ? `${path} created` : `${unit}'s link removed from ${path}`,
    group: `persisted: ${ctx.node} ${unit} ${item.live === true ? "enabled" : "disabled"}`,
  };
}
