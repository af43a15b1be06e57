// The on-node drift monitor (after OpenShift's machine-config drift monitor): file-system events on
// declared paths and a periodic poll both lead to the same checks `audit` runs, and only changes in
// the set of drift are reported. It reads; it never writes to the host.
import { auditNode, readMaintenance, runProbe, type AuditSettings } from "../audit/node.js";
import { declaredFor } from "../domains/domain.js";
import { DOMAIN_NAMES, DOMAINS, type DomainName } from "../domains/registry.js";
import type { DriftContext } from "../drift/drift.js";
import type { LoadedNode } from "../manifest/load.js";
import { replaceAt } from "../spec-path.js";
import { parseContext } from "../probe/script.js";
import { driftEvent, nodeErrorEvent, type Event } from "../report/events.js";
import type { DriftItem } from "../report/schema.js";
import type { Transport } from "../transport/transport.js";
import { Debouncer } from "./debounce.js";
import { DirectoryWatch, type DirectoryChange } from "./directory.js";
import { DriftLedger } from "./ledger.js";
import type { WatchStatus } from "./metrics.js";
import { polledDomains, watchedDirectories, type Topic, type WatchedDirectory } from "./targets.js";

/** A burst of writes is checked once it has been quiet this long... */
export const QUIET_MS = 200;
/** ...or this long after its first event, so a writer that never pauses is still checked. */
export const MAX_WAIT_MS = 2_000;
/** A domain whose files keep changing during every check is reported anyway after this long. */
export const SETTLE_LIMIT_MS = 10_000;
/** A package manager's lock has no file event: while paused, maintenance is re-read this often. */
export const MAINTENANCE_POLL_MS = 5_000;

/** What the watcher checks against: one node of a loaded manifest, with its drift policy. */
export interface WatchedManifest {
  node: LoadedNode;
  revision: string | null;
  settings: AuditSettings;
  drift: Omit<DriftContext, "now">;
}

export interface MonitorOptions {
  transport: Transport;
  /** Between polls of the domains with no file events. */
  intervalMs: number;
  emit(event: Event): void;
  log(line: string): void;
  /** The watcher's own listener (its metrics server): never an unauthorized port. */
  ownListener?: { address: string; port: number };
}

export class Monitor {
  private readonly ledger = new DriftLedger();
  private readonly debouncer = new Debouncer<DomainName>(QUIET_MS, MAX_WAIT_MS, (domains) =>
    this.queue(domains),
  );
  private watches: { watch: DirectoryWatch; watched: WatchedDirectory }[] = [];
  private polled: DomainName[] = [];
  /** Bumped by every reload: a check started against an older manifest is discarded. */
  private generation = 0;

  private fullCheckDue = false;
  private maintenanceCheckDue = false;
  private readonly due = new Set<DomainName>();
  private inFlight: ReadonlySet<DomainName> | undefined;
  private readonly changedDuringCheck = new Set<DomainName>();
  private readonly unsettledSince = new Map<DomainName, number>();
  private running: Promise<void> | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private maintenanceTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  private lastCheckAt: number | undefined;
  private lastCheckDurationMs: number | undefined;
  private checkError: string | undefined;
  private paused: string | undefined;
  private manifestError: string | undefined;
  private watcherErrors = 0;

  private manifest: WatchedManifest;

  constructor(
    manifest: WatchedManifest,
    private readonly options: MonitorOptions,
  ) {
    this.manifest = this.withOwnListener(manifest);
  }

  start(): void {
    this.emitStarted();
    this.arm();
    this.fullCheckDue = true;
    this.pollTimer = setInterval(() => this.queue(this.polled), this.options.intervalMs);
    this.kick();
  }

  /** A new manifest (SIGHUP): watch its paths and re-validate everything against it. */
  reload(manifest: WatchedManifest): void {
    if (this.stopped) return;
    this.manifest = this.withOwnListener(manifest);
    this.generation++;
    this.manifestError = undefined;
    this.options.log(
      `manifest reloaded (revision ${manifest.revision ?? "unknown"}): re-validating everything`,
    );
    this.emitStarted();
    this.arm();
    this.fullCheckDue = true;
    this.kick();
  }

  /** The manifest could not be reloaded: keep checking against the last good one, and say so. */
  reloadFailed(message: string): void {
    this.manifestError = message;
    this.options.log(`manifest invalid, still checking against the last good one:\n${message}`);
    const node = this.manifest.node;
    this.options.emit(
      nodeErrorEvent(
        {
          ...node,
          error: `manifest invalid, still checking against the last good one: ${message}`,
        },
        "error",
        now(),
      ),
    );
  }

  async stop(reason: string): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    clearInterval(this.maintenanceTimer);
    this.debouncer.clear();
    for (const { watch } of this.watches) watch.close();
    await this.running;
    const node = this.manifest.node;
    this.options.emit({ event: "stopped", time: now(), node: node.name, host: node.host, reason });
  }

  status(): WatchStatus {
    return {
      node: this.manifest.node.name,
      drift: this.ledger.items(),
      lastCheckAt: this.lastCheckAt,
      lastCheckDurationMs: this.lastCheckDurationMs,
      checkError: this.checkError,
      paused: this.paused,
      manifestError: this.manifestError,
      watcherErrors: this.watcherErrors,
    };
  }

  /**
   * The manifest with the watcher's own listener allowed by every declaration in which it would be
   * drift.
   */
  private withOwnListener(manifest: WatchedManifest): WatchedManifest {
    const own = this.options.ownListener;
    if (!own) return manifest;
    let spec = manifest.node.spec;
    for (const domain of DOMAINS) {
      const declared = declaredFor(domain, spec);
      if (declared === undefined || !domain.allowingOwnListener) continue;
      spec = replaceAt(spec, domain.specPath, domain.allowingOwnListener(declared, own));
    }
    return spec === manifest.node.spec
      ? manifest
      : { ...manifest, node: { ...manifest.node, spec } };
  }

  private arm(): void {
    for (const { watch } of this.watches) watch.close();
    this.polled = polledDomains(this.manifest.node);
    this.watches = [
      ...watchedDirectories(this.manifest.node, this.manifest.settings.maintenanceMarker).values(),
    ].map((watched) => {
      const watch = new DirectoryWatch(
        watched.dir,
        (change) => this.onDirectoryChange(watched, change),
        (error) => {
          this.watcherErrors++;
          this.options.log(`watching ${watched.dir}: ${error.message}`);
        },
      );
      watch.arm();
      return { watch, watched };
    });
  }

  private onDirectoryChange(watched: WatchedDirectory, change: DirectoryChange): void {
    const topics = new Set<Topic>(watched.anyEntry);
    if (change === "everything")
      for (const set of watched.entries.values()) for (const t of set) topics.add(t);
    else for (const t of watched.entries.get(change.entry) ?? []) topics.add(t);
    if (topics.delete("maintenance")) {
      this.maintenanceCheckDue = true;
      this.kick();
    }
    const domains = [...topics] as DomainName[];
    for (const domain of domains)
      if (this.inFlight?.has(domain)) this.changedDuringCheck.add(domain);
    if (!this.paused) this.debouncer.add(domains);
  }

  private queue(domains: Iterable<DomainName>): void {
    if (this.paused) return;
    for (const domain of domains) this.due.add(domain);
    this.kick();
  }

  private hasWork(): boolean {
    return this.maintenanceCheckDue || (!this.paused && (this.fullCheckDue || this.due.size > 0));
  }

  /** Runs queued checks one at a time: a check never overlaps another. */
  private kick(): void {
    if (this.running || this.stopped || !this.hasWork()) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
      this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (!this.stopped && this.hasWork()) {
      if (this.maintenanceCheckDue) {
        this.maintenanceCheckDue = false;
        await this.checkMaintenance();
      } else if (this.fullCheckDue) {
        this.fullCheckDue = false;
        this.due.clear();
        this.debouncer.clear();
        await this.check(undefined);
      } else {
        const domains = new Set(this.due);
        this.due.clear();
        await this.check(domains);
      }
    }
  }

  /** Audits `domains` (all declared ones when undefined) and reports what changed in the drift. */
  private async check(domains: ReadonlySet<DomainName> | undefined): Promise<void> {
    const { node, settings, drift } = this.manifest;
    const generation = this.generation;
    const started = performance.now();
    this.inFlight = domains ?? new Set(DOMAIN_NAMES);
    this.changedDuringCheck.clear();
    const result = await auditNode(
      node,
      this.options.transport,
      { ...settings, categories: domains && [...domains] },
      { ...drift, now: new Date() },
    );
    const checked = this.inFlight;
    this.inFlight = undefined;
    this.lastCheckAt = Date.now();
    this.lastCheckDurationMs = performance.now() - started;
    // A watch can miss its directory being replaced between events: confirm each after every check.
    for (const { watch } of this.watches) watch.verify();
    if (this.stopped || generation !== this.generation) return;

    if (result.status === "maintenance") return this.pause(result.error ?? "maintenance");
    if (result.status === "error" || result.status === "unreachable")
      return this.checkFailed(result.error ?? result.status, result.status);
    if (this.checkError) this.options.log("checks succeed again");
    this.checkError = undefined;

    const unknown = new Set(result.unknown?.map((u) => u.domain));
    const settled = new Set<DomainName>();
    for (const domain of checked) {
      if (unknown.has(domain)) continue;
      if (this.changedDuringCheck.has(domain)) {
        // Read while being written: the re-check already queued decides, unless it never settles.
        const since = this.unsettledSince.get(domain) ?? this.lastCheckAt;
        this.unsettledSince.set(domain, since);
        if (this.lastCheckAt - since < SETTLE_LIMIT_MS) continue;
      }
      this.unsettledSince.delete(domain);
      settled.add(domain);
    }
    const change = this.ledger.update(settled, result.drift);
    const time = now();
    for (const item of change.resolved) {
      this.options.log(`${node.name}: resolved: ${item.domain} ${item.key}`);
      this.options.emit({
        event: "resolved",
        time,
        node: node.name,
        host: node.host,
        domain: item.domain,
        key: item.key,
        severity: item.severity,
        fingerprint: item.fingerprint,
      });
    }
    for (const item of change.appeared) {
      this.options.log(describeDrift(node.name, item));
      this.options.emit(driftEvent(node, item, time));
    }
  }

  private checkFailed(error: string, status: "error" | "unreachable"): void {
    if (this.checkError === error) return;
    this.checkError = error;
    this.options.log(`check failed: ${error}`);
    this.options.emit(nodeErrorEvent({ ...this.manifest.node, error }, status, now()));
  }

  /** Reads only the maintenance marker and package-manager locks. */
  private async checkMaintenance(): Promise<void> {
    let reason: string | undefined;
    try {
      const probe = await runProbe(this.options.transport, [], this.manifest.settings);
      reason = readMaintenance(probe, parseContext(probe.nonce));
    } catch (error) {
      return this.checkFailed(error instanceof Error ? error.message : String(error), "error");
    }
    if (this.stopped) return;
    if (reason) this.pause(reason);
    else if (this.paused) this.resume();
  }

  private pause(reason: string): void {
    if (this.paused) return;
    this.paused = reason;
    this.debouncer.clear();
    this.due.clear();
    this.options.log(`paused: ${reason}; checks resume when maintenance ends`);
    const node = this.manifest.node;
    this.options.emit({
      event: "stopped",
      time: now(),
      node: node.name,
      host: node.host,
      reason: `maintenance: ${reason}`,
    });
    this.maintenanceTimer = setInterval(
      () => {
        this.maintenanceCheckDue = true;
        this.kick();
      },
      Math.min(MAINTENANCE_POLL_MS, this.options.intervalMs),
    );
  }

  private resume(): void {
    this.options.log("maintenance over: re-validating everything before resuming");
    this.paused = undefined;
    clearInterval(this.maintenanceTimer);
    this.emitStarted();
    // Whatever changed during maintenance is found here and reported now.
    this.fullCheckDue = true;
  }

  private emitStarted(): void {
    const { node, revision } = this.manifest;
    this.options.emit({
      event: "started",
      time: now(),
      node: node.name,
      host: node.host,
      manifestRevision: revision,
    });
  }
}

const now = () => new Date().toISOString();

/**
 * The stderr line for new drift: a `-want +got` diff where the domain made one (never for secrets).
 */
function describeDrift(node: string, item: DriftItem): string {
  const head = `${node}: drift: ${item.domain} ${item.key}${item.detail ? ` (${item.detail})` : ""}`;
  if (item.diff) return `${head} (-want +got):\n${item.diff.trimEnd()}`;
  return `${head}: want ${JSON.stringify(item.declared)}, got ${JSON.stringify(item.live)}`;
}
