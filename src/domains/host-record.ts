import type { SpecPath } from "../spec-path.js";
import type { Cause, Latent } from "./cause.js";

// What a host recorded about its changes, as the audit's cause section reads it (src/audit/cause/:
// one shared probe and parser for the logs every domain reads, in the audit's own round trip), and
// what a domain asks of it. A domain says which records its items need (`Domain.records`) and reads
// them into a cause (`Domain.cause`); the shared section reads each log once for all of them.

export interface PackageEvent {
  /** Epoch milliseconds. */
  at: number;
  /** dpkg's action; `installed`: rpm's record of the version installed then, from an unknown one. */
  action: "install" | "upgrade" | "remove" | "purge" | "installed";
  name: string;
  /** Absent for a fresh install (`<none>`), and for rpm's record. */
  from?: string;
  /** Absent for a removal. */
  to?: string;
  /** rpm: the transaction that installed it (INSTALLTID), shared by its packages. */
  transaction?: number;
}

export interface ConffileEvent {
  at: number;
  path: string;
  /** dpkg's choice: `install` (the package's version) or `keep` (the local one). */
  choice: string;
}

/**
 * One package's configure step in dpkg's log (its maintainer script, postinst, runs in it): from the
 * `configure` line to the `status installed` line that ends it, when that is in the log.
 */
export interface ConfigureStep {
  name: string;
  version: string;
  start: number;
  end?: number;
}

export interface AptTransaction {
  start: number;
  end?: number;
  commandline?: string;
  requestedBy?: string;
}

export interface HostRecord {
  /** Epoch milliseconds of the boot (`btime`); NaN when the host's is no number. */
  bootTime?: number;
  /** The host's UTC offset in minutes, as its logs are written; unknown: no log is read. */
  offsetMinutes?: number;
  /**
   * Declared paths a package ships: which package, and the digest it recorded (dpkg's md5, rpm's
   * sha256; absent for a digest of another algorithm, which the probe does not compute).
   */
  owned: Map<string, { package: string; digest?: string }>;
  /** Digest of the live contents of each owned declared file, in its package's algorithm. */
  digest: Map<string, string>;
  /** mtime (epoch milliseconds) and owner of the files and the `stat` paths asked for. */
  stat: Map<string, { mtime: number; owner: string }>;
  packages: PackageEvent[];
  conffiles: ConffileEvent[];
  /** Every package's configure steps since the last audit, when a domain asks (`steps`). */
  steps?: ConfigureStep[];
  /**
   * Of the `shippedSince` paths, each one that a package configured since the last audit ships
   * (its dpkg file list names it): that package.
   */
  shippedBy?: Map<string, string>;
  /** Of each package `shippedBy` names, its install or upgrade since the last audit, where logged. */
  shippedIn?: Map<string, PackageEvent>;
  apt: AptTransaction[];
}

/** A record holding nothing yet. */
export const emptyHostRecord = (): HostRecord => ({
  owned: new Map(),
  digest: new Map(),
  stat: new Map(),
  packages: [],
  conffiles: [],
  apt: [],
});

/**
 * The records a domain's declaration asks the cause section for; every domain's are read in one
 * pass. The boot time is always read.
 */
export interface RecordRequest {
  /** Packages whose transactions since the last audit are read (dpkg's and apt's logs, rpm's database). */
  packages?: readonly string[];
  /**
   * Files: which package ships each (with the digest it recorded), their live digest in that
   * package manager's algorithm, their mtime and owner; and the transactions of their owners.
   */
  files?: readonly string[];
  /**
   * Entries whose mtime and owner are read: `entries` (manifest names, quoted) in each directory
   * `under` matches, and those directories themselves; without `entries`, what `under` matches
   * alone (a domain's drop-in files). `under` is the domain's own shell glob, never manifest text.
   */
  stat?: readonly { under: string; entries?: readonly string[] }[];
  /**
   * Packages named after the files a glob matches: `prefix` then what is left of each path once
   * `strip` is taken off its front (Debian's `linux-image-RELEASE` for each `/boot/vmlinuz-RELEASE`).
   * All three are the domain's own text, never manifest text.
   */
  packagesByFile?: readonly { glob: string; strip: string; prefix: string }[];
  /**
   * The domain's own shell globs (never manifest text): each existing match (at most 500 per node)
   * has its mtime and owner read, and the package whose conffile it is (dpkg's status), with that
   * package's transactions.
   */
  globs?: readonly string[];
  /**
   * Every package's configure steps and conffile lines since the node's last audit (none without
   * one): what a maintainer script changed (a system user a postinst created) is told by its time.
   */
  steps?: boolean;
  /**
   * Paths looked up in the file lists of the packages dpkg configured since the node's last audit
   * (`shippedBy`; their configure steps are in `steps`): what an install or upgrade since then put
   * there. No file is read where no package was configured since, and no process is started.
   */
  shippedSince?: readonly string[];
  /**
   * As `shippedSince`, for every path such a file list names that one of these matches: the
   * domain's own awk extended regular expressions (never manifest text), for paths the probe
   * learns only as it runs (a library a process maps). Each package found is sent with its install
   * or upgrade since then (`shippedIn`).
   */
  shippedMatching?: readonly string[];
}

/** One drift item, as a domain reads its cause. */
export interface CauseSubject {
  key: string;
  declared: unknown;
  live: unknown;
  path: SpecPath;
  /** As `compare` found them: what the next boot does to it, and its line of context. */
  latent?: Latent;
  detail?: string;
  /** The cause `compare` found itself (the line that sets the value), which `Domain.cause` refines. */
  cause?: Cause;
}

/** What an audit knows beside the host's record. */
export interface RecordContext {
  node: string;
  /** Epoch milliseconds of the node's last successful audit, when the history knows it. */
  since?: number;
}

/** The latest entry matching: logs are in time order. */
export function latest<T>(list: readonly T[], test: (entry: T) => boolean): T | undefined {
  for (let i = list.length - 1; i >= 0; i--) if (test(list[i]!)) return list[i];
  return undefined;
}

/**
 * A recorded time (epoch milliseconds) as a cause states it; one no date holds (a host's NaN or
 * 15-digit time) as its number, which the audit then reads as no time (src/audit/cause/attach.ts).
 */
export function causeTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString().replace(/\.000Z$/, "Z");
}

/** The requests of several declarations as one: each list in order, a name asked twice once. */
export function joinRequests(requests: readonly RecordRequest[]): Required<RecordRequest> {
  const unique = (lists: (readonly string[] | undefined)[]) => [
    ...new Set(lists.flatMap((list) => list ?? [])),
  ];
  return {
    packages: unique(requests.map((r) => r.packages)),
    files: unique(requests.map((r) => r.files)),
    stat: requests.flatMap((r) => r.stat ?? []),
    packagesByFile: requests.flatMap((r) => r.packagesByFile ?? []),
    globs: unique(requests.map((r) => r.globs)),
    steps: requests.some((r) => r.steps),
    shippedSince: unique(requests.map((r) => r.shippedSince)),
    shippedMatching: unique(requests.map((r) => r.shippedMatching)),
  };
}
