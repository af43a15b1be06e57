import type { Cause } from "../../domains/cause.js";
import { ABSENT } from "../../domains/packages/constraint.js";
import type { DriftItem } from "../../report/schema.js";
import type { AptTransaction, HostRecord, PackageEvent } from "./record.js";
import { rolloutCause, type DeclaredBefore } from "./rollout.js";

// Each drift item's cause from what the host recorded: only a record that explains the live value
// itself (the version a transaction installed, the digest a package shipped, the kernel booted) names
// a cause; anything less is `unknown`. A wrong cause is worse than none.

/** The latest entry matching: logs are in time order. */
function latest<T>(list: readonly T[], test: (entry: T) => boolean): T | undefined {
  for (let i = list.length - 1; i >= 0; i--) if (test(list[i]!)) return list[i];
  return undefined;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.000Z$/, "Z");

const UNKNOWN: Cause = { kind: "unknown", evidence: "nothing on the host recorded this change" };

/** What a node's audit knows beside the host's record. */
export interface CauseContext {
  node: string;
  /** Epoch milliseconds of the node's last successful audit, when the history knows it. */
  since?: number;
  /** What the node's last audit declared, and the revision audited now: a rollout's evidence. */
  before?: DeclaredBefore;
  revision?: string | null;
}

/**
 * The items with a cause each: a pending rollout first (the manifest moved, whatever the host
 * recorded), then one a domain found itself; a latent-only item (live as declared, a boot or
 * restart would change it) changed nothing yet, so it has none.
 */
export function attachCauses(
  items: readonly DriftItem[],
  record: HostRecord,
  ctx: CauseContext,
): DriftItem[] {
  return items.map((item) => {
    if (item.latentPolicy) return item;
    const rollout = ctx.before && rolloutCause(item, ctx.before, ctx.revision ?? null);
    if (rollout) return { ...item, cause: rollout };
    return item.cause ? item : { ...item, cause: causeOf(item, record, ctx) };
  });
}

function causeOf(item: DriftItem, record: HostRecord, ctx: CauseContext): Cause {
  switch (item.domain) {
    case "packages":
      return packageCause(item, record) ?? UNKNOWN;
    case "files":
      return fileCause(item, record, ctx) ?? UNKNOWN;
    case "kernel":
      return rebootCause(item, record, ctx) ?? UNKNOWN;
    case "systemd":
      return enablementCause(item, record, ctx) ?? UNKNOWN;
    default:
      return UNKNOWN;
  }
}

const change = (e: PackageEvent) =>
  e.to === undefined
    ? `${e.name} ${e.from ?? ""} removed`.replace("  ", " ")
    : e.action === "installed"
      ? `${e.name} ${e.to} installed`
      : `${e.name} ${e.from ?? "(new)"} → ${e.to}`;

/** The apt transaction a dpkg event ran in: apt logs whole seconds, as dpkg does. */
function transactionOf(at: number, record: HostRecord): AptTransaction | undefined {
  return latest(record.apt, (t) => t.start <= at && at <= (t.end ?? t.start));
}

/** Who ran it, in an operator's words: `unattended-upgrades`, `apt-get (alice)`, `dpkg`. */
function byOf(transaction: AptTransaction | undefined): string {
  if (!transaction?.commandline) return "dpkg";
  const program = transaction.commandline.split(" ", 1)[0]!.replace(/^.*\//, "");
  const name = program === "unattended-upgrade" ? "unattended-upgrades" : program;
  const user = transaction.requestedBy?.replace(/ \(\d+\)$/, "");
  return user ? `${name} (${user})` : name;
}

/**
 * The cause of one package event: its transaction's changes (the events sent: those of declared
 * packages and of owners of declared files) are its group, the same on every node it ran on. rpm
 * records the transaction but not who ran it (rpm, dnf or yum): no `by`.
 */
function transactionCause(
  event: PackageEvent,
  record: HostRecord,
  kind: "package" | "package-file",
  evidence: string,
): Cause {
  const rpm = event.transaction;
  const transaction = rpm === undefined ? transactionOf(event.at, record) : undefined;
  const within =
    rpm !== undefined
      ? record.packages.filter((e) => e.transaction === rpm)
      : transaction
        ? record.packages.filter(
            (e) => e.at >= transaction.start && e.at <= (transaction.end ?? e.at),
          )
        : record.packages.filter((e) => e.at === event.at);
  const changes = [...new Set(within.map(change))].sort();
  return {
    kind,
    at: iso(event.at),
    ...(rpm === undefined && { by: byOf(transaction) }),
    evidence,
    group: `package: ${changes.join(", ")}`,
  };
}

function packageCause(item: DriftItem, record: HostRecord): Cause | undefined {
  const live = item.live;
  const event = latest(record.packages, (e) =>
    live === ABSENT
      ? e.to === undefined && e.name === item.key
      : e.name === item.key && e.to === live,
  );
  return event && transactionCause(event, record, "package", change(event));
}

// Content findings of a declared file (its contents, or its hash): what an edit or a package changes.
const CONTENT = new Set(["contents", "sha256"]);

function fileCause(item: DriftItem, record: HostRecord, ctx: CauseContext): Cause | undefined {
  if (!CONTENT.has(String(item.path.at(-1))) || typeof item.live !== "string") return undefined;
  const path = item.key;
  const owned = record.owned.get(path);
  const digest = record.digest.get(path);
  if (owned?.digest !== undefined && digest === owned.digest) {
    // The live file is what the package shipped: the latest transaction that installed it.
    const event = latest(record.packages, (e) => e.name === owned.package && e.to !== undefined);
    if (!event) return undefined;
    return transactionCause(event, record, "package-file", `${path} replaced by ${change(event)}`);
  }
  const stat = record.stat.get(path);
  // A package's file with other contents than it shipped, or a file no package ships: edited.
  if (!stat || (owned && (digest === undefined || owned.digest === undefined))) return undefined;
  const of = owned ? `, a local edit of ${owned.package}'s file` : "";
  return {
    kind: "file-edit",
    at: iso(stat.mtime),
    evidence: `${path} modified at ${iso(stat.mtime)}, owner ${stat.owner}${of}`,
    group: `file-edit: ${ctx.node} ${path}`,
  };
}

function rebootCause(item: DriftItem, record: HostRecord, ctx: CauseContext): Cause | undefined {
  const boot = record.bootTime;
  // A boot before the last audit did not change what that audit saw.
  if (boot === undefined || (ctx.since !== undefined && boot < ctx.since)) return undefined;
  // Booted into a kernel a package transaction installed before the boot: that transaction.
  const installed = latest(
    record.packages,
    (e) => e.name === `linux-image-${String(item.live)}` && e.to !== undefined && e.at <= boot,
  );
  if (installed)
    return transactionCause(
      installed,
      record,
      "package",
      `booted ${String(item.live)} at ${iso(boot)}; ${change(installed)}`,
    );
  return {
    kind: "reboot",
    at: iso(boot),
    evidence: `booted ${String(item.live)} at ${iso(boot)}`,
    group: `reboot into ${String(item.live)}`,
  };
}

const WANTS = "/etc/systemd/system/";

/** A unit enabled or disabled since the last audit: its enablement link, or the one link directory that changed. */
function enablementCause(
  item: DriftItem,
  record: HostRecord,
  ctx: CauseContext,
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
    at: iso(stat.mtime),
    evidence: item.live === true ? `${path} created` : `${unit}'s link removed from ${path}`,
    group: `persisted: ${ctx.node} ${unit} ${item.live === true ? "enabled" : "disabled"}`,
  };
}
