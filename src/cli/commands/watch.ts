import os from "node:os";
import type { Server } from "node:http";
import { fleetAuditSettings, fleetDriftRules } from "./audit.js";
import { ManifestErrors, UsageError } from "../../errors.js";
import { loadFleet, loadNodeFile } from "../../manifest/load.js";
import { manifestRevision } from "../../manifest/revision.js";
import { eventLine } from "../../report/formats/events.js";
import { visible } from "../../text/escape.js";
import { localTransport } from "../../transport/local.js";
import { serveMetrics } from "../../watch/metrics.js";
import { Monitor, type WatchedManifest } from "../../watch/monitor.js";
import { findManifests, localNode, parse, parseWholeNumber } from "../options.js";

export const WATCH_OPTIONS = {
  local: { type: "boolean", default: false },
  manifests: { type: "string" },
  nodes: { type: "string" },
  /** One node-spec file on its own, as kept on the node (/etc/quartermaster/node-spec.yaml). */
  manifest: { type: "string" },
  interval: { type: "string" },
  timeout: { type: "string" },
  "metrics-listen": { type: "string" },
  "maintenance-marker": { type: "string" },
} as const;

type WatchValues = ReturnType<typeof parse<typeof WATCH_OPTIONS>>["values"];

export const DEFAULT_INTERVAL_SECONDS = 60;

/** Reads the manifest the way the flags say; throws ManifestErrors or UsageError. */
async function loadWatched(values: WatchValues): Promise<WatchedManifest> {
  const fleet = values.manifest
    ? await loadNodeFile(values.manifest, values.nodes ?? os.hostname())
    : await loadFleet(findManifests(values.manifests));
  const node = values.manifest ? fleet.nodes[0]! : localNode(fleet, values.nodes);
  const marker = values["maintenance-marker"];
  return {
    node,
    revision: await manifestRevision(fleet.dir),
    settings: fleetAuditSettings(fleet, {
      timeoutMs: parseWholeNumber("timeout", values.timeout, 60) * 1000,
      ...(marker && { maintenanceMarker: marker }),
    }),
    drift: fleetDriftRules(fleet),
  };
}

/** `watch --local`: runs until SIGTERM or SIGINT (exit 0); SIGHUP reloads the manifest. */
export async function watchCommand(argv: string[]): Promise<number> {
  const { values } = parse("watch", argv, WATCH_OPTIONS);
  if (!values.local) throw new UsageError("watch runs on the node it watches: pass --local");
  if (values.manifest && values.manifests)
    throw new UsageError(
      "--manifest (one node-spec file) and --manifests (a manifest tree) exclude each other",
    );
  if (values["maintenance-marker"] !== undefined && !values["maintenance-marker"].startsWith("/")) {
    throw new UsageError("--maintenance-marker takes an absolute path");
  }
  const intervalMs = parseWholeNumber("interval", values.interval, DEFAULT_INTERVAL_SECONDS) * 1000;
  const loaded = await loadWatched(values);
  // Log lines quote host text (diffs, file contents): escaped here, where they reach the terminal.
  const log = (line: string) => process.stderr.write(`${visible(line, { multiline: true })}\n`);
  let monitor: Monitor | undefined;
  let server: Server | undefined;
  let own: { address: string; port: number } | undefined;
  if (values["metrics-listen"]) {
    // No await between listening and creating the monitor below, so no request finds it missing.
    const served = await serveMetrics(values["metrics-listen"], () => monitor!.status()).catch(
      (error: Error) => {
        throw new UsageError(`--metrics-listen ${values["metrics-listen"]}: ${error.message}`);
      },
    );
    server = served.server;
    own = served.address;
    log(`serving /metrics and /healthz on ${served.address.address}:${served.address.port}`);
  }
  const running = (monitor = new Monitor(loaded, {
    transport: localTransport(loaded.node.name),
    intervalMs,
    ...(own && { ownListener: own }),
    emit: (event) => process.stdout.write(eventLine(event)),
    log,
  }));
  // Reloads run one after another, so a burst of SIGHUPs cannot apply an older manifest last.
  let reloading = Promise.resolve();
  const reload = () => {
    reloading = reloading.then(async () => {
      try {
        running.reload(await loadWatched(values));
      } catch (error) {
        if (!(error instanceof ManifestErrors || error instanceof UsageError)) throw error;
        running.reloadFailed(error.message);
      }
    });
  };
  // Handlers go in before the started event: whoever reads it may signal at once. They stay
  // installed while stopping: execa's exit hook re-raises a signal nobody else listens for.
  const stopped = new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      void running
        .stop(`received ${signal}`)
        .then(
          () =>
            new Promise<void>((closed) =>
              server ? (server.close(() => closed()), server.closeAllConnections()) : closed(),
            ),
        )
        .then(() => resolve(0));
    };
    process.on("SIGTERM", stop).on("SIGINT", stop).on("SIGHUP", reload);
  });
  running.start();
  return stopped;
}
