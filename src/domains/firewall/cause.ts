import type { Cause } from "../cause.js";
import { notAHostTime } from "../file-times.js";
import {
  causeTime,
  type CauseSubject,
  type HostRecord,
  type RecordContext,
} from "../host-record.js";
import type { Includes } from "./includes.js";
import { packageRunAt } from "../package-transaction.js";
import { LEGACY_FAMILIES } from "./legacy.js";

// Why a rule drifted, from the boot's rules file and its mtime (and those of the files it includes,
// which the firewall section reads: compare passes on the latest changed after the rules file): a
// live state the file loads was persisted (an edit since the node's last audit, or a reload); one it
// does not load, with the files unchanged since then (or since the boot), was made at runtime. A file
// changed since then that the live state does not match says neither: the cause is unknown. A file
// that loads it and changed while dpkg configured a package (iptables-persistent's postinst saves
// the rules) or apt ran (a package shipping /etc/nftables.d/ files: the folder changed) names that
// package run; dpkg gives a file it unpacks its package's own mtime, so only such a change tells.

/** nft's boot-time rules files, as the probe looks for them. */
export const NFT_RULES_FILES = ["/etc/sysconfig/nftables.conf", "/etc/nftables.conf"] as const;

// How compare says where an item stands against the boot's rules file (in `detail`, or `latent`).
export const loadsIt = (file: string) => `${file} loads it`;
export const noLongerLoadsIt = (file: string) => `${file} no longer loads it`;
export const doesNotLoadIt = (file: string) => `${file} does not load it`;

const legacyKey = (key: string) =>
  Object.values(LEGACY_FAMILIES).some((family) => key.startsWith(`${family} `));

/** The rules file (or saved files, `a, b`) an item's words name, if every one is a rules file. */
function rulesFiles(named: string, known: ReadonlySet<string>): string[] | undefined {
  const files = named.split(", ");
  return files.every((file) => known.has(file)) ? files : undefined;
}

/** Where the item stands against the rules files: they load its live state, or do not. */
function standing(
  item: CauseSubject,
  known: ReadonlySet<string>,
): { files: string[]; loaded: boolean; deleted: boolean } | undefined {
  const persisted = /^(.+) (?:loads it|no longer loads it)$/.exec(item.detail ?? "")?.[1];
  const files = persisted === undefined ? undefined : rulesFiles(persisted, known);
  if (files) return { files, loaded: true, deleted: item.live === null };
  const latent = item.latent;
  if (!latent) return undefined;
  const added = latent.becomes === null && /^(.+) does not load it$/.exec(latent.because)?.[1];
  const named = added || (latent.becomes !== null ? latent.because : undefined);
  const differs = named === undefined ? undefined : rulesFiles(named, known);
  return differs && { files: differs, loaded: false, deleted: !added };
}

/**
 * What compare says of the files `file` includes, as the cause it finds (read back by
 * `firewallCause`): the latest changed after `file`, or that not all were read; nothing when every
 * one is older than `file`, whose own mtime then tells.
 */
export function includedChange(file: string, includes: Includes): Cause | undefined {
  if (includes.cut !== undefined)
    return {
      kind: "unknown",
      evidence: `what ${file} includes was not all read (${includes.cut}): when it changed is not known`,
    };
  const newest = includes.newer.reduce<Includes["newer"][number] | undefined>(
    // On a tie the later wins: a file, not the glob's folder listed before it.
    (a, b) => (a && a.mtime > b.mtime ? a : b),
    undefined,
  );
  return (
    newest && {
      kind: "unknown",
      evidence: `${newest.file}, which ${file} includes, changed at ${causeTime(newest.mtime)} after it, owner ${newest.owner}`,
    }
  );
}
const INCLUDED_CHANGE = /^(\/.*), which \/.* includes, changed at (\S+) after it, owner (\S+)$/;
const NOT_ALL_READ = /^what \/.* includes was not all read \(/;

/**
 * When the rules files `files` (and the newest file they include, which compare names in the item's
 * cause) last changed: `latest`; `complete` when every one's time is known, `partial` when what they
 * include was not all read.
 */
function filesChanged(files: readonly string[], item: CauseSubject, record: HostRecord) {
  const included = INCLUDED_CHANGE.exec(item.cause?.evidence ?? "");
  const partial = NOT_ALL_READ.test(item.cause?.evidence ?? "");
  const stats = files.map((file) => ({ file, stat: record.stat.get(file) }));
  if (included)
    stats.push({
      file: included[1]!,
      stat: { mtime: Date.parse(included[2]!), owner: included[3]! },
    });
  const changes = stats.flatMap(({ file, stat }) => {
    const seconds = stat && Math.floor(stat.mtime / 1000);
    return stat && seconds !== undefined && notAHostTime(seconds) === undefined
      ? [{ file, ...stat }]
      : [];
  });
  const latest = changes.reduce<(typeof changes)[number] | undefined>(
    (a, b) => (a && a.mtime >= b.mtime ? a : b),
    undefined,
  );
  return { latest, complete: changes.length === stats.length, partial };
}

/** The file's change since the last audit that makes `what` so: a package run's, else an edit's. */
function changeSince(
  latest: ReturnType<typeof filesChanged>["latest"],
  what: string,
  record: HostRecord,
  ctx: RecordContext,
  kind: "persisted" | "file-edit",
  group: string,
): Cause | undefined {
  if (!latest || (ctx.since !== undefined && latest.mtime <= ctx.since)) return undefined;
  const run = packageRunAt(latest.mtime, record);
  return run
    ? {
        kind: "package",
        at: causeTime(latest.mtime),
        by: run.by,
        evidence: `${what}: ${latest.file} changed at ${causeTime(latest.mtime)}, ${run.during}`,
        group: run.group,
      }
    : {
        kind,
        at: causeTime(latest.mtime),
        evidence: `${what}: ${latest.file} changed at ${causeTime(latest.mtime)}, owner ${latest.owner}`,
        group,
      };
}

/**
 * What put a latent-only item's coming change in place (the kernel holds what the manifest declares,
 * the rules files load otherwise): their edit since the node's last audit, or the package run that
 * made it. Undefined without a last audit, or with the files unchanged since.
 */
export function firewallLatentCause(
  item: CauseSubject & { latent: { becomes: unknown } },
  record: HostRecord,
  ctx: RecordContext,
  known: ReadonlySet<string>,
): Cause | undefined {
  const stand = standing(item, known);
  if (!stand || ctx.since === undefined) return undefined;
  const files = stand.files.join(", ");
  const what = `${files} ${item.latent.becomes === null ? "drops it at the next boot" : "loads it at the next boot"}`;
  const { latest } = filesChanged(stand.files, item, record);
  return changeSince(latest, what, record, ctx, "file-edit", `file-edit: ${ctx.node} ${files}`);
}

export function firewallCause(
  item: CauseSubject,
  record: HostRecord,
  ctx: RecordContext,
  known: ReadonlySet<string>,
): Cause | undefined {
  const stand = standing(item, known);
  if (!stand) return undefined;
  const { latest, complete, partial } = filesChanged(stand.files, item, record);
  const since = ctx.since;
  if (stand.loaded) {
    // The file loads the live state: it was edited since the last audit, or reloaded.
    const what = `${stand.files.join(", ")} ${stand.deleted ? "no longer loads it" : "loads it"}`;
    const group = `persisted: ${stand.files.join(", ")}`;
    const changed = changeSince(latest, what, record, ctx, "persisted", group);
    if (changed) return changed;
    return {
      kind: "persisted",
      evidence:
        since === undefined || partial
          ? what
          : `${what}, unchanged since this node's last audit at ${causeTime(since)}: reloaded since`,
      group,
    };
  }
  // The live state differs from the file: made at runtime, if the file has not changed since.
  const boot = record.bootTime;
  const bootOk = boot !== undefined && notAHostTime(Math.floor(boot / 1000)) === undefined;
  const from = Math.max(bootOk ? boot : -Infinity, since ?? -Infinity);
  if (!Number.isFinite(from) || !complete || partial) return undefined;
  if (latest && latest.mtime > from) return undefined;
  const when =
    from === since
      ? `this node's last audit at ${causeTime(from)}`
      : `the boot at ${causeTime(from)}`;
  const files = stand.files.join(", ");
  return {
    kind: "runtime",
    evidence: stand.deleted
      ? `${files} still loads it and has not changed since ${when}: deleted at runtime`
      : `${files} does not load it and has not changed since ${when}: added at runtime (${legacyKey(item.key) ? "an iptables command" : "nft add, insert or an iptables-nft command"})`,
  };
}
