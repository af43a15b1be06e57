// A watch run: this machine's node, from one node-spec file or a manifest tree, with the fleet's
// audit settings and drift rules, checked again on change (watch/monitor.ts), with its metrics
// served when asked.
import type { Server } from "node:http";
import os from "node:os";
import { ManifestErrors, UsageError } from "../errors.js";
import { loadFleet, loadNodeFile } from "../manifest/load.js";
import { manifestRevision } from "../manifest/revision.js";
import type { Event } from "../report/events.js";
import { localTransport } from "../transport/local.js";
import { serveMetrics } from "../watch/metrics.js";
import { Monitor, type WatchedManifest } from "../watch/monitor.js";
import { DEFAULT_TIMEOUT_SECONDS, fleetAuditSettings, fleetDriftRules } from "./audit.js";
import { findManifests, localNode } from "./fleet.js";

export interface WatchOptions {
  /** One node-spec file, as kept on the node; else the manifest tree `manifests`. */
  manifest: string | undefined;
  manifests: string | undefined;
  nodes: readonly string[] | undefined;
  /** Seconds. */
  timeout: number | undefined;
  maintenanceMarker: string | undefined;
}

/** Reads the manifest the way the options say; throws ManifestErrors or UsageError. */
async function loadWatched(config: WatchOptions): Promise<WatchedManifest> {
  const fleet = config.manifest
    ? await loadNodeFile(config.manifest, config.nodes?.join(",") ?? os.hostname())
    : await loadFleet(findManifests(config.manifests));
  const node = config.manifest ? fleet.nodes[0]! : localNode(fleet, config.nodes);
  const marker = config.maintenanceMarker;
  return {
    node,
    revision: manifestRevision(fleet.dir),
    settings: fleetAuditSettings(fleet, {
      timeoutMs: (config.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000,
      ...(marker && { maintenanceMarker: marker }),
    }),
    drift: fleetDriftRules(fleet),
  };
}

export interface WatchRunOptions extends WatchOptions {
  /** Between polls of the domains no file event announces. */
  intervalMs: number;
  /** Serve Prometheus /metrics and /healthz on this HOST:PORT. */
  metricsListen: string | undefined;
  emit: (event: Event) => void;
  log: (line: string) => void;
}

/** A watch ready to start: its manifest loaded, its metrics server (if any) listening. */
export interface Watch {
  /** Emits the started event and begins checking. */
  start(): void;
  /** Loads the manifest again and checks against it; a manifest that fails to load is reported. */
  reload(): Promise<void>;
  /** Stops checking and closes the metrics server. */
  stop(reason: string): Promise<void>;
}

/** The watch the options describe; a manifest or `--metrics-listen` that cannot be used throws. */
export async function prepareWatch(options: WatchRunOptions): Promise<Watch> {
  const loaded = await loadWatched(options);
  let monitor: Monitor | undefined;
  let server: Server | undefined;
  let own: { address: string; port: number } | undefined;
  const listen = options.metricsListen;
  if (listen) {
    // No await between listening and creating the monitor below, so no request finds it missing.
    const served = await serveMetrics(listen, () => monitor!.status()).catch((error: Error) => {
      throw new UsageError(`--metrics-listen ${listen}: ${error.message}`);
    });
    server = served.server;
    own = served.address;
    options.log(
      `serving /metrics and /healthz on ${served.address.address}:${served.address.port}`,
    );
  }
  const running = (monitor = new Monitor(loaded, {
    transport: localTransport(loaded.node.name),
    intervalMs: options.intervalMs,
    ...(own && { ownListener: own }),
    emit: options.emit,
    log: options.log,
  }));
  return {
    start: () => running.start(),
    async reload() {
      try {
        running.reload(await loadWatched(options));
      } catch (error) {
        if (!(error instanceof ManifestErrors || error instanceof UsageError)) throw error;
        running.reloadFailed(error.message);
      }
    },
    async stop(reason) {
      await running.stop(reason);
      await new Promise<void>((closed) =>
        server ? (server.close(() => closed()), server.closeAllConnections()) : closed(),
      );
    },
  };
}
