// What `watch` watches: this machine's node, from one node-spec file or a manifest tree, with the
// fleet's audit settings and drift rules.
import os from "node:os";
import { loadFleet, loadNodeFile } from "../manifest/load.js";
import { manifestRevision } from "../manifest/revision.js";
import type { WatchedManifest } from "../watch/monitor.js";
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
export async function loadWatched(config: WatchOptions): Promise<WatchedManifest> {
  const fleet = config.manifest
    ? await loadNodeFile(config.manifest, config.nodes?.join(",") ?? os.hostname())
    : await loadFleet(findManifests(config.manifests));
  const node = config.manifest ? fleet.nodes[0]! : localNode(fleet, config.nodes);
  const marker = config.maintenanceMarker;
  return {
    node,
    revision: await manifestRevision(fleet.dir),
    settings: fleetAuditSettings(fleet, {
      timeoutMs: (config.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000,
      ...(marker && { maintenanceMarker: marker }),
    }),
    drift: fleetDriftRules(fleet),
  };
}
