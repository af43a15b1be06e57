import * as z from "zod";
import { ProbeParseError } from "../errors.js";
import { valueAt, type SpecPath } from "../spec-path.js";
import type { Cause, Latent } from "./cause.js";
import type { Holder } from "./holder.js";
import type { LatentWords } from "./latent-words.js";
import type { CauseSubject, HostRecord, RecordContext, RecordRequest } from "./host-record.js";
import type { SnapshotOptions } from "./snapshot-options.js";

export const SEVERITIES = ["critical", "high", "medium", "low"] as const;
export type Severity = (typeof SEVERITIES)[number];
export type OnDrift = "accept" | "ticket";

import type { JsonValue } from "./json.js";
export { Json, type JsonValue } from "./json.js";

/** What a domain's probe snippet may use. Everything it returns is shell text, run on the host. */
export interface ProbeContext {
  /** Quote one argument for POSIX sh. */
  quote(value: string): string;
  /**
   * A shell command printing a nonce-framed marker line `label`, to split one section into parts.
   */
  mark(label: string): string;
  /** A shell command declaring the whole domain unknown on this host, with the reason. */
  unknown(reason: string): string;
  /** Largest file, in bytes, whose contents a probe may send back. */
  maxFileBytes: number;
  /**
   * A shell word expanding to the node's last successful audit (epoch seconds), empty when no
   * history tells it: what changed since then, the host shows.
   */
  lastAudit: string;
  /**
   * A shell command asking the probe's one shared awk to call `fn`, a function of the section's
   * `awk` text, here in the section's output: `values` are shell words, each one line, that `fn`
   * reads as `qm_v[1..qm_vn]`; `input`, a shell command whose stdout `fn` reads as lines
   * `qm_i[1..qm_in]` (nothing of it is sent on).
   */
  awk(fn: string, call?: { values?: readonly string[]; input?: string }): string;
  /**
   * Asks the probe's one `stat` for paths: `paths` is shell that appends them to `"$@"` (never
   * resets it; globs expand there), run once, before any section, with every section's asks. Returns
   * a shell word naming this ask for the shared awk: `awk("qm_stated", { values: [word] })` prints,
   * here, a line `MTIME OWNER TYPE PATH` per path that exists (TYPE: `f` file, `d` directory, `l`
   * link, `o` other; a link's own times, never its target's), a link's target on the next line as
   * `-> TARGET`, and `?` for a path or target holding a newline, which the host cannot send on one
   * line (src/domains/file-times.ts reads them). An awk function reads the same records from the
   * shared awk's `qm_s*` arrays (src/probe/script.ts).
   */
  stat(paths: string): string;
}

/**
 * Shell that sets `qm_u` to the probe's effective user id, read from /proc/self/status by builtins
 * alone (its `Uid:` line: real, effective, saved, file system).
 */
export const EFFECTIVE_UID =
  "qm_u=; while IFS= read -r qm_l; do case $qm_l in Uid:*) set -- $qm_l; qm_u=$3;; esac; done 2>/dev/null < /proc/self/status";

export interface ParseContext {
  /** Splits a section at the markers printed by `ProbeContext.mark`: [label, text] in order. */
  parts(output: string): [label: string, text: string][];
}

/**
 * The audit's clock, for a domain whose live state ages (a certificate's validity left): now, and
 * when the next scheduled audit runs (`audit.interval` in fleet.yaml), epoch milliseconds.
 */
export interface CompareTime {
  now: number;
  nextAudit: number;
}

/** How often scheduled audits run when fleet.yaml's `audit.interval` does not say: daily. */
export const DEFAULT_AUDIT_INTERVAL_MS = 86_400_000;

/** The time a compare reads: the audit's, else the clock's now and the default interval. */
export const compareTime = (when?: CompareTime): CompareTime =>
  when ?? { now: Date.now(), nextAudit: Date.now() + DEFAULT_AUDIT_INTERVAL_MS };

/** One difference between declared and live state, as a domain sees it. */
export interface Finding {
  /** Stable within the domain: the sysctl name, the file path, `tcp/8080`. */
  key: string;
  declared: JsonValue;
  live: JsonValue;
  /** Where the declared value sits in the effective node spec (source lookup, accept edits). */
  path: SpecPath;
  /** One line of context an operator needs: "reboot pending", "will revert at reboot". */
  detail?: string;
  /**
   * Unified `-want +got` diff; never set for secrets. Set only when `live` is the live text itself
   * (accept writes it).
   */
  diff?: string;
  /** Why it drifted, where the domain itself knows (a sysctl set by a persisted file). */
  cause?: Cause;
  /** Holds now and will not after an event: the value it will take. */
  latent?: Latent;
  /** Who holds what drifted (a listener's processes and user), as far as the audit user may read. */
  holders?: Holder[];
}

/**
 * One audit domain, self-contained: where it is declared, how it is probed, how the probe's
 * output is parsed, how declared and live are compared, and how a spec is built from live.
 * Probe text is built here but run by a transport; parse takes captured text.
 */
export interface Domain<Declared, Live, Name extends string> {
  /** The domain's name, its folder's under src/domains/; the registry's list of names comes from it. */
  name: Name;
  /** Where the declaration lives in a node spec, e.g. ["system", "sysctl_parameters"]. */
  specPath: readonly string[];
  schema: z.ZodType<Declared>;
  /** For a list declared per item (files by path, units by name): the field naming an item. */
  listKey?: string;
  /**
   * The declaration is a map that may also be written as a list of strings, the sysctl.conf-style
   * `- key = value` (read by `parseNameValue` in list-form.ts).
   */
  listForm?: true;
  severity: Severity;
  onDrift: OnDrift;
  /**
   * Items are members of one set (listeners, routes, modules): many drifting on one node make one
   * PR.
   */
  itemsAreASet?: boolean;
  /** What an operator does about drift in this domain. */
  remediation: string;
  /**
   * How a pull request states one item's drift in the domain's own words, where "declared X but
   * the host runs Y" would mislead (an allow-list declares no value for what it leaves out).
   * `key` comes as a Markdown code span; `hosts` is "the host" or "the hosts".
   */
  driftSentence?(item: { declared: unknown; live: unknown }, key: string, hosts: string): string;
  /**
   * How an item's declared value reads where a report or pull request shows it, where the raw value
   * would say what nothing declares (an allow-list leaves a port out; it declares no `closed`).
   */
  declaredWords?(item: { declared: unknown; live: unknown }): string | undefined;
  /**
   * How an item's live value reads where a report or pull request shows it, where the raw value
   * would only repeat the key (an extra firewall rule's live value is the rule itself).
   */
  liveWords?(item: { declared: unknown; live: unknown }): string | undefined;
  /**
   * How its latent items read (clean now, changed by a boot, restart or daemon-reload): what the
   * event changes and what to do before it, where the event's own words say less.
   */
  latentWords?: LatentWords;
  /** Every drift key of this domain starts with one of these: a waiver key that cannot is refused. */
  keyPrefixes?: readonly string[];
  /** Shell snippet whose stdout is this domain's section. `declared` is undefined for snapshots. */
  probe(declared: Declared | undefined, ctx: ProbeContext): string;
  /**
   * awk function definitions that its probe calls through `ctx.awk`, run by the probe's one shared
   * awk: each function and global variable is named `<domain>_*`.
   */
  awk?: string;
  /**
   * Parsed live state. Parts the host could not show go in `unknown` (reasons): skipped, never
   * drift.
   */
  parse(output: string, ctx: ParseContext): Live;
  /**
   * The findings, each with what the next reboot, restart or daemon-reload does to it (`latent`)
   * and, where the live state itself says why (a sysctl a persisted file sets), its `cause`.
   */
  compare(declared: Declared, live: Live, when?: CompareTime): Finding[];
  /**
   * The host records the cause of this declaration's items needs (src/domains/host-record.ts): the
   * audit's cause section reads every domain's in one pass. Without it the domain asks for none
   * (the boot time is always read).
   */
  records?(declared: Declared): RecordRequest;
  /**
   * Why one drift item changed, read from the host's record: undefined where no record explains the
   * live value itself, and the item's cause is `unknown` (a wrong cause is worse than none).
   * Without it, a finding's own `cause` from `compare` is the only one the domain gives.
   */
  cause?(item: CauseSubject, record: HostRecord, ctx: RecordContext): Cause | undefined;
  /**
   * What put a latent item's coming value in place, read from the host's record (the package
   * transaction that installed the kernel the next boot runs); undefined leaves it without a cause.
   */
  latentCause?(
    item: CauseSubject & { latent: Latent },
    record: HostRecord,
    ctx: RecordContext,
  ): Cause | undefined;
  /**
   * The declaration that would make this live state clean (`snapshot`, `adopt`, goss-style
   * bootstrap), shaped by the snapshot's options where the domain takes one.
   */
  snapshot(live: Live, options?: SnapshotOptions): Declared | undefined;
  /**
   * How many live values a snapshot left out on purpose under these options (packages installed
   * only as dependencies), or why the host could not tell which to leave out.
   */
  snapshotLeftOut?(
    live: Live,
    options: SnapshotOptions,
  ): { count: number; unknown?: string } | undefined;
  /** The snapshot's options leave this domain out: it is not even probed. */
  skipsSnapshot?(options: SnapshotOptions): boolean;
  /**
   * Probed only where declared (files, units): a node's snapshot takes the live state of its
   * declaration.
   */
  snapshotsDeclared?: true;
  /**
   * What a snapshot asks the host about a declaration, when it asks for more than is declared (a
   * file declared by path alone is asked for its contents, mode and owner).
   */
  snapshotAsks?(declared: Declared): Declared;
  /**
   * What a snapshot declares of a declaration with its live state accepted, when not all of it
   * (a secret's or a root-only file's contents become its hash).
   */
  snapshotKeeps?(accepted: Declared, live: Live): Declared;
  /**
   * The declaration after accepting one finding's live state (an accept PR). Without it, the
   * value at `finding.path` becomes `finding.live` (deleted when live is null), through maps only:
   * a domain declaring a list (`listKey`, sets) says how an item is accepted. `auditedAt` (epoch
   * milliseconds, the audit's clock, else now) is when the finding held: state that ages is
   * accepted as the audit saw it.
   */
  accept?(declared: Declared, finding: Finding, auditedAt?: number): Declared | undefined;
  /**
   * What on the host's disk announces a change to this declaration's live state, for `watch`
   * (src/watch/targets.ts). Without it, the domain is re-checked only by the periodic poll.
   */
  watchTargets?(declared: Declared): WatchTargets;
  /**
   * The declaration with a TCP listener of the auditor's own allowed (`watch`'s metrics server, at
   * the address it is bound to), for a domain in which that listener would be drift.
   */
  allowingOwnListener?(declared: Declared, own: { address: string; port: number }): Declared;
}

/** Where a declaration's live state lives on disk, as the watcher listens to it. */
export interface WatchTargets {
  /**
   * Files whose creation, change or removal changes the live state. Each is watched as an entry of
   * its directory: editors replace a file by renaming over it, which a watch on the file never
   * sees.
   */
  paths: string[];
  /**
   * Directories any entry of which counts (a drop-in directory); each can also appear or vanish.
   */
  directories: string[];
  /**
   * Part of the declared state is not in a file (a unit's enabled or active state): poll it too.
   */
  polled: boolean;
}

/**
 * The domain's declaration in a node spec, at its `specPath`; undefined when the node declares
 * none.
 */
export function declaredFor(
  domain: { specPath: SpecPath },
  spec: Record<string, unknown>,
): unknown {
  return valueAt(spec, domain.specPath);
}

/** The spec path of `relative` inside the domain's declaration: its specPath, then `relative`. */
export const pathIn = (
  domain: { specPath: SpecPath },
  ...relative: (string | number)[]
): SpecPath => [...domain.specPath, ...relative];

/** The part of `path` inside the domain's declaration: what follows its specPath. */
export const within = (domain: { specPath: SpecPath }, path: SpecPath): SpecPath =>
  path.slice(domain.specPath.length);

/**
 * A list declared per item (files by path, units by name): an item whose `key` is declared twice is
 * refused.
 */
export function keyedList<Key extends string, Item extends Record<Key, string>, Input>(
  item: z.ZodType<Item, Input>,
  key: Key,
) {
  return z.array(item).superRefine((items, ctx) => {
    const seen = new Set<string>();
    items.forEach((declared, i) => {
      const name = declared[key];
      if (seen.has(name))
        ctx.addIssue({ code: "custom", message: `${name} is declared twice`, path: [i, key] });
      seen.add(name);
    });
  });
}

/**
 * A section's parts by label, for sections whose labels are each printed once: a repeated one is an
 * error.
 */
export function partsByLabel(
  section: string,
  parts: readonly [string, string][],
): Map<string, string> {
  const byLabel = new Map<string, string>();
  for (const [label, text] of parts) {
    if (byLabel.has(label))
      throw new ProbeParseError(section, `part "${label.slice(0, 80)}" appears twice`);
    byLabel.set(label, text);
  }
  return byLabel;
}

/** The reasons a parsed live state gives for the parts of a domain it could not show. */
export function partlyUnknown(live: unknown): string[] {
  const unknown = (live as { unknown?: unknown } | null)?.unknown;
  return Array.isArray(unknown) ? unknown.filter((u): u is string => typeof u === "string") : [];
}
