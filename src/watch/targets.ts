// What the watcher listens to: the directories holding what each audited domain names as its watch
// targets (editors replace a file by renaming over it, which a watch on the file itself never
// sees), and which domains must be polled because nothing on disk announces their changes.
import path from "node:path";
import { auditedDomains } from "../audit/node.js";
import { declaredFor } from "../domains/domain.js";
import type { DomainName } from "../domains/registry.js";
import type { LoadedNode } from "../manifest/load.js";

/** A domain to re-check, or the maintenance marker to re-read. */
export type Topic = DomainName | "maintenance";

export interface WatchedDirectory {
  dir: string;
  /** Entry name -> what to re-check when it changes. */
  entries: Map<string, Set<Topic>>;
  /** Re-checked when any entry changes (a drop-in directory, where every *.conf counts). */
  anyEntry: Set<Topic>;
}

/** Each audited domain with its watch targets; undefined for a domain nothing on disk announces. */
const targets = (node: LoadedNode) =>
  auditedDomains(node).map((domain) => ({
    domain: domain.name,
    targets: domain.watchTargets?.(declaredFor(domain, node.spec)),
  }));

/** Every directory to watch for this node, keyed by path. */
export function watchedDirectories(
  node: LoadedNode,
  maintenanceMarker: string,
): Map<string, WatchedDirectory> {
  const dirs = new Map<string, WatchedDirectory>();
  const at = (dir: string) => {
    let entry = dirs.get(dir);
    if (!entry) dirs.set(dir, (entry = { dir, entries: new Map(), anyEntry: new Set() }));
    return entry;
  };
  const onEntry = (file: string, topic: Topic) => {
    const entries = at(path.dirname(file)).entries;
    const name = path.basename(file);
    entries.set(name, (entries.get(name) ?? new Set()).add(topic));
  };

  for (const { domain, targets: watched } of targets(node)) {
    for (const file of watched?.paths ?? []) onEntry(file, domain);
    // The directory itself can appear or vanish, and every entry in it counts.
    for (const dir of watched?.directories ?? []) {
      onEntry(dir, domain);
      at(dir).anyEntry.add(domain);
    }
  }
  onEntry(maintenanceMarker, "maintenance");
  return dirs;
}

/** Which domains the file system cannot announce, so the periodic poll checks them. */
export function polledDomains(node: LoadedNode): DomainName[] {
  return targets(node)
    .filter(({ targets: watched }) => watched?.polled ?? true)
    .map(({ domain }) => domain);
}
