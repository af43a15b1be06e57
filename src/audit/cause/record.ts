import { partsByLabel } from "../../domains/domain.js";

// The cause section's output, parsed: what the host recorded, with every time in UTC. Nothing here
// decides a cause (attach.ts does); a line that does not parse is left out, never guessed at.

export interface PackageEvent {
  /** Epoch milliseconds. */
  at: number;
  action: "install" | "upgrade" | "remove" | "purge";
  name: string;
  /** Absent for a fresh install (`<none>`). */
  from?: string;
  /** Absent for a removal. */
  to?: string;
}

export interface ConffileEvent {
  at: number;
  path: string;
  /** dpkg's choice: `install` (the package's version) or `keep` (the local one). */
  choice: string;
}

export interface AptTransaction {
  start: number;
  end?: number;
  commandline?: string;
  requestedBy?: string;
}

export interface HostRecord {
  /** Epoch milliseconds of the boot (`btime`). */
  bootTime?: number;
  /** The host's UTC offset in minutes, as its logs are written; unknown: no log is read. */
  offsetMinutes?: number;
  /** Declared paths a package ships: which package, and the md5 it recorded. */
  owned: Map<string, { package: string; md5: string }>;
  /** md5 of the live contents of each owned declared file. */
  md5: Map<string, string>;
  /** mtime (epoch milliseconds) and owner of declared files and enablement links and directories. */
  stat: Map<string, { mtime: number; owner: string }>;
  packages: PackageEvent[];
  conffiles: ConffileEvent[];
  apt: AptTransaction[];
}

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
const version = (v: string) => (v === "<none>" ? undefined : v);

export function parseHostRecord(parts: [string, string][]): HostRecord {
  const byLabel = partsByLabel("cause", parts);
  const record: HostRecord = {
    owned: new Map(),
    md5: new Map(),
    stat: new Map(),
    packages: [],
    conffiles: [],
    apt: [],
  };
  const btime = /^(\d{1,12})$/.exec(lines(byLabel.get("boot"))[0] ?? "");
  if (btime) record.bootTime = Number(btime[1]) * 1000;
  const offset = parseOffset(lines(byLabel.get("clock"))[0] ?? "");
  for (const line of lines(byLabel.get("owned"))) {
    const conffile = /^(\S+) ([0-9a-f]{32}) (\/.*)$/.exec(line);
    const shipped = /^\/\S*\/([^/:]+)(?::[^/:.]+)?\.md5sums:([0-9a-f]{32}) {2}(.+)$/.exec(line);
    if (conffile) record.owned.set(conffile[3]!, { package: conffile[1]!, md5: conffile[2]! });
    else if (shipped)
      record.owned.set(`/${shipped[3]}`, { package: shipped[1]!, md5: shipped[2]! });
  }
  for (const line of lines(byLabel.get("md5"))) {
    // md5sum escapes a name holding a backslash or newline with a leading `\`: not a declared path.
    const m = /^([0-9a-f]{32}) [ *](\/.*)$/.exec(line);
    if (m) record.md5.set(m[2]!, m[1]!);
  }
  for (const line of lines(byLabel.get("stat"))) {
    const m = /^(\d{1,12}) (\S+) (\/.*)$/.exec(line);
    if (m) record.stat.set(m[3]!, { mtime: Number(m[1]) * 1000, owner: m[2]! });
  }
  // Without the host's offset its log times cannot be placed: no log is read.
  if (offset === undefined) return record;
  record.offsetMinutes = offset;
  for (const line of lines(byLabel.get("dpkg-log"))) {
    const f = line.split(" ");
    const at = logTime(`${f[0]} ${f[1]}`, offset);
    if (at === undefined) continue;
    const action = f[2];
    if (
      (action === "install" || action === "upgrade" || action === "remove" || action === "purge") &&
      f.length === 6
    ) {
      const from = version(f[4]!);
      const to = action === "remove" || action === "purge" ? undefined : version(f[5]!);
      record.packages.push({
        at,
        action,
        name: f[3]!.replace(/:.*$/, ""),
        ...(from !== undefined && { from }),
        ...(to !== undefined && { to }),
      });
    } else if (action === "conffile" && f.length >= 5) {
      record.conffiles.push({ at, path: f.slice(3, -1).join(" "), choice: f.at(-1)! });
    }
  }
  let current: AptTransaction | undefined;
  for (const line of lines(byLabel.get("apt-history"))) {
    const colon = line.indexOf(": ");
    const field = line.slice(0, colon);
    const value = line.slice(colon + 2);
    if (field === "Start-Date") {
      const start = logTime(value, offset);
      current = start === undefined ? undefined : { start };
      if (current) record.apt.push(current);
    } else if (current && field === "End-Date") {
      const end = logTime(value, offset);
      if (end !== undefined) current.end = end;
    } else if (current && field === "Commandline") current.commandline = value;
    else if (current && field === "Requested-By") current.requestedBy = value;
  }
  return record;
}
