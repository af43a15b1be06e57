import type { Cause } from "../cause.js";
import {
  causeTime,
  type CauseSubject,
  type HostRecord,
  type RecordContext,
  type RecordRequest,
} from "../host-record.js";
import type { SystemdDeclared } from "./declared.js";

const WANTS = "/etc/systemd/system/";

/** The enablement links of the declared units, and the link directories themselves. */
export const enablementRecords = (declared: SystemdDeclared): RecordRequest => ({
  stat: [{ under: `${WANTS}*.wants`, entries: declared.map((unit) => unit.name) }],
});

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
