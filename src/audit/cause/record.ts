import { partsByLabel } from "../../domains/domain.js";
import {
  emptyHostRecord,
  latest,
  type AptTransaction,
  type ConfigureStep,
  type HostRecord,
  type PackageEvent,
} from "../../domains/host-record.js";
import { rpmVersion } from "../../domains/rpm-version.js";

// The cause section's output, parsed: what the host recorded, with every time in UTC. Nothing here
// decides a cause (each domain does, from attach.ts); a line that does not parse is left out, never guessed at.

const LOG_TIME = /^(\d{4}-\d\d-\d\d) {1,2}(\d\d:\d\d:\d\d)$/;

/** A log's local `YYYY-MM-DD HH:MM:SS` as epoch milliseconds, given the host's UTC offset. */
function logTime(text: string, offsetMinutes: number): number | undefined {
  const m = LOG_TIME.exec(text);
  if (!m) return undefined;
  const local = Date.parse(`${m[1]}T${m[2]}Z`);
  return Number.isNaN(local) ? undefined : local - offsetMinutes * 60_000;
}

function parseOffset(text: string): number | undefined {
  const m = /([+-])(\d\d)(\d\d)$/.exec(text.trim());
  if (!m) return undefined;
  const minutes = Number(m[2]) * 60 + Number(m[3]);
  return m[1] === "-" ? -minutes : minutes;
}

const lines = (text: string | undefined) => (text ?? "").split("\n").filter((l) => l !== "");

/**
 * The most lines of one log or database answer read per node: the latest, as logs are in time
 * order. A host sending its whole dpkg.log costs the auditor no more than this.
 */
export const MAX_RECORD_LINES = 20_000;

/** The last `MAX_RECORD_LINES` lines of `text`, found from its end: the rest is never split. */
function latestLines(text: string | undefined): string[] {
  if (text === undefined) return [];
  let start = text.length;
  for (let n = 0; n <= MAX_RECORD_LINES && start > 0; n++)
    start = text.lastIndexOf("\n", start - 1);
  return lines(start <= 0 ? text : text.slice(start + 1));
}
const version = (v: string) => (v === "<none>" ? undefined : v);

const DIGESTS = [
  ["md5", 32],
  ["sha256", 64],
  ["sha1", 40],
] as const;

// rpm's record of an installed instance: name, INSTALLTIME, INSTALLTID, epoch:version-release.
const RPM_PACKAGE = /^(\S+) (\d{1,12}) (\d{1,12}) (\(none\)|\d{1,10}):(\S+)$/;
// rpm's digest algorithm 8 (PGPHASHALGO_SHA256) is the one whose digests the probe computes.
const RPM_OWNED = /^(\S+ \d{1,12} \d{1,12} \S+) (\d{1,3}|\(none\)) ([0-9a-f]*) (\/.*)$/;

function rpmEvent(line: string): PackageEvent | undefined {
  const m = RPM_PACKAGE.exec(line);
  if (!m) return undefined;
  return {
    at: Number(m[2]) * 1000,
    action: "installed",
    name: m[1]!,
    to: rpmVersion(m[4]!, m[5]!),
    transaction: Number(m[3]),
  };
}

/**
 * rpm's packages and the owners of declared files: the owners recorded, and as events the installs
 * since the last audit (`since`, epoch milliseconds), in time order. rpm keeps no log: a package
 * installed before then changed nothing that audit did not see.
 */
function readRpm(byLabel: Map<string, string>, record: HostRecord, since: (at: number) => boolean) {
  const events = new Map<string, PackageEvent>();
  const owners = new Map<string, { package: string; digest?: string }[]>();
  const add = (event: PackageEvent | undefined) => {
    if (event && since(event.at)) events.set(`${event.name} ${event.to} ${event.at}`, event);
  };
  for (const line of latestLines(byLabel.get("rpm"))) add(rpmEvent(line));
  for (const line of latestLines(byLabel.get("rpm-owned"))) {
    const m = RPM_OWNED.exec(line);
    const event = m && rpmEvent(m[1]!);
    if (!m || !event) continue;
    add(event);
    const list = owners.get(m[4]!) ?? [];
    owners.set(m[4]!, list);
    list.push({ package: event.name, ...(m[2] === "8" && m[3] && { digest: m[3] }) });
  }
  // A path two packages ship: the one whose digest the live file has, else the first.
  for (const [path, list] of owners)
    record.owned.set(path, list.find((o) => o.digest === record.digest.get(path)) ?? list[0]!);
  record.packages.push(...[...events.values()].sort((a, b) => a.at - b.at));
}

/** A dpkg.log line's fields, when they install, upgrade or remove a package. */
function packageEvent(f: readonly string[], at: number): PackageEvent | undefined {
  const action = f[2];
  if (
    !(action === "install" || action === "upgrade" || action === "remove" || action === "purge") ||
    f.length !== 6
  )
    return undefined;
  const from = version(f[4]!);
  const to = action === "remove" || action === "purge" ? undefined : version(f[5]!);
  return {
    at,
    action,
    name: f[3]!.replace(/:.*$/, ""),
    ...(from !== undefined && { from }),
    ...(to !== undefined && { to }),
  };
}

/** The cause section's output; `since` is the node's last audit, when known (epoch milliseconds). */
export function parseHostRecord(parts: [string, string][], since?: number): HostRecord {
  const byLabel = partsByLabel("cause", parts);
  const record = emptyHostRecord();
  // A boot time that is no number is kept as NaN: the cause it would time says why it has none.
  const boot = lines(byLabel.get("boot"))[0];
  if (boot !== undefined) record.bootTime = /^\d{1,15}$/.test(boot) ? Number(boot) * 1000 : NaN;
  const offset = parseOffset(lines(byLabel.get("clock"))[0] ?? "");
  for (const line of lines(byLabel.get("owned"))) {
    const conffile = /^(\S+) ([0-9a-f]{32}) (\/.*)$/.exec(line);
    const shipped = /^\/\S*\/([^/:]+)(?::[^/:.]+)?\.md5sums:([0-9a-f]{32}) {2}(.+)$/.exec(line);
    if (conffile) record.owned.set(conffile[3]!, { package: conffile[1]!, digest: conffile[2]! });
    else if (shipped)
      record.owned.set(`/${shipped[3]}`, { package: shipped[1]!, digest: shipped[2]! });
  }
  // The live digests: dpkg's md5, rpm's sha256, apk's sha1. md5sum and its kin escape a name
  // holding a backslash or newline with a leading `\`: not a declared path.
  for (const [label, hex] of DIGESTS)
    for (const line of lines(byLabel.get(label))) {
      const m = /^([0-9a-f]+) [ *](\/.*)$/.exec(line);
      if (m?.[1]!.length === hex) record.digest.set(m[2]!, m[1]);
    }
  for (const line of lines(byLabel.get("apk-owned"))) {
    const m = /^(\S+) ([A-Za-z0-9+/]{27}=) (\/.*)$/.exec(line);
    if (m && !record.owned.has(m[3]!))
      record.owned.set(m[3]!, {
        package: m[1]!,
        digest: Buffer.from(m[2]!, "base64").toString("hex"),
      });
  }
  for (const line of lines(byLabel.get("stat"))) {
    const m = /^(\d{1,12}) (\S+) (\/.*)$/.exec(line);
    if (m) record.stat.set(m[3]!, { mtime: Number(m[1]) * 1000, owner: m[2]! });
  }
  // Whether a time is not before the last audit (to the second, as the probe is told it). A log
  // time is placed with today's UTC offset, as the probe picks the lines since the last audit
  // (cause_clock): across a DST change since, that is an hour of lines more or less than the host
  // logged after it, but none placed before it; a line that is (a host's own awk, an older probe)
  // is no change since, and is left out.
  const afterLast = (at: number) => since === undefined || at >= Math.floor(since / 1000) * 1000;
  // rpm's times are epoch seconds: no offset needed.
  readRpm(byLabel, record, afterLast);
  // Without the host's offset its log times cannot be placed: no log is read.
  if (offset === undefined) return record;
  record.offsetMinutes = offset;
  const steps: ConfigureStep[] = [];
  record.steps = steps;
  for (const line of latestLines(byLabel.get("dpkg-log"))) {
    const f = line.split(" ");
    const at = logTime(`${f[0]} ${f[1]}`, offset);
    if (at === undefined || !afterLast(at)) continue;
    const action = f[2];
    const event = packageEvent(f, at);
    if (event) record.packages.push(event);
    else if (action === "conffile" && f.length >= 5) {
      record.conffiles.push({ at, path: f.slice(3, -1).join(" "), choice: f.at(-1)! });
    } else if (action === "configure" && f.length === 6) {
      steps.push({ name: f[3]!.replace(/:.*$/, ""), version: f[4]!, start: at });
    } else if (action === "status" && f[3] === "installed" && f.length === 6) {
      // The configure step it ends: the latest of that package still open.
      const name = f[4]!.replace(/:.*$/, "");
      const step = latest(steps, (s) => s.name === name);
      if (step && step.end === undefined) step.end = at;
    }
  }
  if (byLabel.has("shipped")) {
    record.shippedBy = new Map();
    record.shippedIn = new Map();
    for (const line of latestLines(byLabel.get("shipped"))) {
      const m = /^(\S+) (\/.*)$/.exec(line);
      if (m) {
        record.shippedBy.set(m[2]!, m[1]!);
        continue;
      }
      // A package's install or upgrade line, after the paths it ships.
      const f = line.split(" ");
      const at = logTime(`${f[0]} ${f[1]}`, offset);
      const event = at === undefined || !afterLast(at) ? undefined : packageEvent(f, at);
      if (event?.to !== undefined) record.shippedIn.set(event.name, event);
    }
  }
  let current: AptTransaction | undefined;
  for (const line of latestLines(byLabel.get("apt-history"))) {
    const colon = line.indexOf(": ");
    const field = line.slice(0, colon);
    const value = line.slice(colon + 2);
    if (field === "Start-Date") {
      const start = logTime(value, offset);
      current = start === undefined || !afterLast(start) ? undefined : { start };
      if (current) record.apt.push(current);
    } else if (current && field === "End-Date") {
      const end = logTime(value, offset);
      if (end !== undefined) current.end = end;
    } else if (current && field === "Commandline") current.commandline = value;
    else if (current && field === "Requested-By") current.requestedBy = value;
  }
  return record;
}
