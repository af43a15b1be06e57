// What the watcher listens to: the directories holding declared files and unit files (editors
// replace a file by renaming over it, which a watch on the file itself never sees), and which
// domains must be polled because nothing on disk announces their changes.
import path from "node:path";
import { auditedDomains, declaredFor } from "../audit/node.js";
import type { DomainName } from "../domains/domain.js";
import { files, type FilesDeclared } from "../domains/files/index.js";
import { systemd, UNIT_DIRS, type SystemdDeclared } from "../domains/systemd/index.js";
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

const declaredFiles = (node: LoadedNode) => (declaredFor(files, node.spec) ?? []) as FilesDeclared;
const declaredUnits = (node: LoadedNode) =>
  (declaredFor(systemd, node.spec) ?? []) as SystemdDeclared;

/** `foo@bar.service` is read from its template `foo@.service` when it has no file of its own. */
function unitFileNames(unit: string): string[] {
  const m = /^([^@]+@)[^@]+(\.[a-z]+)$/.exec(unit);
  return m ? [unit, `${m[1]}${m[2]}`] : [unit];
}

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

  for (const file of declaredFiles(node)) onEntry(file.path, "files");
  for (const unit of declaredUnits(node)) {
    for (const dir of UNIT_DIRS)
      for (const name of unitFileNames(unit.name)) onEntry(`${dir}/${name}`, "systemd");
    // The drop-in directory itself can appear or vanish, and every *.conf in it changes the unit.
    const dropins = `/etc/systemd/system/${unit.name}.d`;
    onEntry(dropins, "systemd");
    at(dropins).anyEntry.add("systemd");
  }
  onEntry(maintenanceMarker, "maintenance");
  return dirs;
}

/** Which domains the file system cannot announce, so the periodic poll checks them. */
export function polledDomains(node: LoadedNode): DomainName[] {
  return auditedDomains(node)
    .filter((domain) => {
      if (domain.name === "files") return false;
      // Unit files and drop-ins are watched; enabled links and the running state are not.
      if (domain.name === "systemd") {
        return declaredUnits(node).some((u) => u.enabled !== undefined || u.active !== undefined);
      }
      return true;
    })
    .map((d) => d.name);
}
