import { ProbeParseError } from "../../errors.js";
import { parseBootTime, parseChanged } from "../file-times.js";
import { parseLink, type LinkedComponent } from "../no-follow.js";
import { parseMaps, parseMapsErrors, parseProcs, unitPids, type ProcessMaps } from "./maps.js";

// Contract with the transport: probe output arrives decoded byte-per-char (latin1), so
// Buffer.from(text, "latin1") gives back the exact bytes of a unit file.

export interface ActiveState {
  load: string;
  active: string;
  sub: string;
  /** `NeedDaemonReload=yes`: a unit file or drop-in changed on disk since systemd loaded it. */
  needDaemonReload?: boolean;
  /** `ActiveEnterTimestampMonotonic`: when the unit last became active, microseconds since boot. */
  activeSinceUs?: number;
  /** `MainPID`, when the unit has a main process. */
  mainPid?: number;
  /** `ControlGroup`, when the unit has a cgroup: its processes are in its cgroup.procs. */
  controlGroup?: string;
  /** `EnvironmentFiles`: the files systemd reads the unit's environment from at each start. */
  environmentFiles?: string[];
}

/** The ActiveState values systemd counts as running. */
export const ACTIVE_STATES = new Set(["active", "reloading"]);

export interface UnitLive {
  /** Linked to /dev/null in /etc/systemd/system or /run/systemd/system. */
  masked: boolean;
  /**
   * Symlinks to the unit in *.wants and *.requires of the admin's and the vendor's unit
   * directories.
   */
  wantedBy: string[];
  /**
   * `systemctl is-enabled`, when systemd runs and `enabled` is declared; empty for a unit systemd
   * cannot find.
   */
  enabledState?: string;
  /** The unit file in effect, first in systemd's search order; undefined when there is none. */
  file?: string;
  /** The symlink on the way to that file (the file itself included): it was not read. */
  link?: LinkedComponent;
  /** Its first cap+1 bytes, when contents are declared. */
  contents?: Buffer;
  /**
   * Drop-in name -> first cap+1 bytes, from /etc/systemd/system/<unit>.d/*.conf, when drop-ins are
   * declared.
   */
  dropins: Map<string, Buffer>;
  /** The drop-in folder is reached through this symlink: nothing in it was listed or read. */
  dropinsLink?: LinkedComponent;
  /** Drop-in name -> the symlink it is (not followed). */
  dropinLinks: Map<string, LinkedComponent>;
  /** From systemctl, only when systemd runs. */
  state?: ActiveState;
  /** The unit file, its /etc drop-ins and its EnvironmentFiles -> mtime (seconds), when systemd runs. */
  changed: Map<string, number>;
  /**
   * Deleted library (under /lib or /usr/lib) -> the unit's pids mapping it, when the maps of every
   * process of an active unit were read.
   */
  deletedLibraries?: Map<string, number[]>;
}

export interface SystemdLive {
  cap: number;
  units: Map<string, UnitLive>;
  /**
   * Why something declared could not be compared (systemd not running, unreadable file): not drift.
   */
  unknown: string[];
  /** The host's boot time (seconds since the epoch), when systemd runs. */
  bootedAt?: number;
}

/**
 * `systemctl show -p LoadState,ActiveState,SubState a b`: one block per unit, in argument order.
 */
export function parseSystemctlShow(
  text: string,
  names: readonly string[],
): Map<string, ActiveState> | undefined {
  const blocks = text
    .trim()
    .split(/\n\s*\n/)
    .filter((b) => b.trim() !== "");
  if (blocks.length !== names.length) return undefined;
  const states = new Map<string, ActiveState>();
  for (const [i, block] of blocks.entries()) {
    const props = new Map<string, string>();
    const environmentFiles: string[] = [];
    for (const line of block.split("\n")) {
      const eq = line.indexOf("=");
      if (eq <= 0) continue;
      const [property, value] = [line.slice(0, eq), line.slice(eq + 1)];
      // One line per file, each with systemd's flag: `/etc/default/app (ignore_errors=yes)`.
      if (property === "EnvironmentFiles")
        environmentFiles.push(value.replace(/ \(ignore_errors=[a-z]+\)$/, ""));
      else props.set(property, value);
    }
    const [load, active, sub] = ["LoadState", "ActiveState", "SubState"].map((p) => props.get(p));
    if (load === undefined || active === undefined || sub === undefined) return undefined;
    const since = Number(props.get("ActiveEnterTimestampMonotonic"));
    const mainPid = Number(props.get("MainPID"));
    const controlGroup = props.get("ControlGroup");
    states.set(names[i]!, {
      load,
      active,
      sub,
      ...(props.has("NeedDaemonReload") && {
        needDaemonReload: props.get("NeedDaemonReload") === "yes",
      }),
      ...(Number.isSafeInteger(since) && since > 0 && { activeSinceUs: since }),
      ...(Number.isSafeInteger(mainPid) && mainPid > 0 && { mainPid }),
      ...(controlGroup?.startsWith("/") && { controlGroup }),
      ...(environmentFiles.length > 0 && { environmentFiles }),
    });
  }
  return states;
}

const firstLine = (text: string): [string, string] => {
  const nl = text.indexOf("\n");
  return nl === -1 ? [text, ""] : [text.slice(0, nl), text.slice(nl + 1)];
};

/**
 * The systemd section: `cap N`; `active <names>` (systemctl show output) or `active-unknown`
 * (reason); per unit `unit <name>` (lines `masked`, `wanted-by <path>`, `file <path>`, `is-enabled
 * <state>`), `unit-file <name>`, `dropin <name>` (drop-in file name, then its bytes), and
 * `unreadable <name>` (a path that could not be read); a symlink not followed: `unit-link <name>`
 * and `dropins-link <name>` (the linked path, then its target), `dropin-link <name>` (drop-in file
 * name, then its target); when systemd runs, `changed <name>` (`stat -c '%Y %n'` of the unit
 * file and drop-ins), `environment` (the same of the EnvironmentFiles systemctl named), `boot` (the
 * btime line of /proc/stat), and `procs`, `maps`, `maps-errors`
 * (the processes of active units and the deleted libraries they map: maps.ts).
 */
export function parseSystemd(parts: readonly [string, string][]): SystemdLive {
  const capLabel = parts.find(([label]) => label.startsWith("cap "))?.[0];
  if (!capLabel) throw new ProbeParseError("systemd", "output lacks the cap part");
  const live: SystemdLive = {
    cap: Number(capLabel.slice("cap ".length)),
    units: new Map(),
    unknown: [],
  };
  const unit = (name: string) => {
    const found = live.units.get(name);
    if (!found) throw new ProbeParseError("systemd", `part for ${name} before its unit part`);
    return found;
  };
  let states: Map<string, ActiveState> | undefined;
  let environment = new Map<string, number>();
  const maps: ProcessMaps = { procs: new Map(), deleted: new Map(), unreadable: new Map() };
  let mapsRead = false;
  // Drop-ins and unreadable paths repeat per unit; any other label printed twice means broken
  // framing.
  const once = new Set<string>();
  for (const [label, text] of parts) {
    const space = label.indexOf(" ");
    const [kind, name] =
      space === -1 ? [label, ""] : [label.slice(0, space), label.slice(space + 1)];
    if (kind !== "dropin" && kind !== "dropin-link" && kind !== "unreadable") {
      if (once.has(label))
        throw new ProbeParseError("systemd", `part "${label.slice(0, 80)}" appears twice`);
      once.add(label);
    }
    if (kind === "unit") {
      const lines = text.split("\n");
      const file = lines.find((l) => l.startsWith("file "))?.slice("file ".length);
      const enabledState = lines
        .find((l) => l.startsWith("is-enabled "))
        ?.slice("is-enabled ".length);
      live.units.set(name, {
        masked: lines.includes("masked"),
        wantedBy: lines
          .filter((l) => l.startsWith("wanted-by "))
          .map((l) => l.slice("wanted-by ".length)),
        ...(file ? { file } : {}),
        ...(enabledState ? { enabledState } : {}),
        dropins: new Map(),
        dropinLinks: new Map(),
        changed: new Map(),
      });
    } else if (kind === "unit-file") {
      unit(name).contents = Buffer.from(text, "latin1");
    } else if (kind === "unit-link") {
      unit(name).link = parseLink(text);
    } else if (kind === "dropins-link") {
      unit(name).dropinsLink = parseLink(text);
    } else if (kind === "dropin-link") {
      const [file, link] = firstLine(text);
      unit(name).dropinLinks.set(file, parseLink(link));
    } else if (kind === "dropin") {
      const [file, bytes] = firstLine(text);
      unit(name).dropins.set(file, Buffer.from(bytes, "latin1"));
    } else if (kind === "unreadable") {
      const path = firstLine(text)[0];
      const found = unit(name);
      if (path === found.file) delete found.contents;
      else found.dropins.delete(path.slice(path.lastIndexOf("/") + 1));
      live.unknown.push(`${name}: cannot read ${path}`);
    } else if (kind === "active") {
      const names = name.split(" ");
      states = parseSystemctlShow(text, names);
      if (!states)
        live.unknown.push(
          `${names.join(", ")}: systemctl show failed (${text.trim().slice(0, 200)}): active state unknown`,
        );
    } else if (kind === "changed") {
      unit(name).changed = parseChanged(text);
    } else if (kind === "environment") {
      environment = parseChanged(text);
    } else if (kind === "boot") {
      const bootedAt = parseBootTime(text);
      if (bootedAt !== undefined) live.bootedAt = bootedAt;
    } else if (kind === "procs") {
      parseProcs(text, maps);
    } else if (kind === "maps") {
      mapsRead = true;
      parseMaps(text, maps);
    } else if (kind === "maps-errors") {
      parseMapsErrors(text, maps);
    } else if (kind === "active-unknown") {
      live.unknown.push(text.trim());
    }
  }
  for (const [name, state] of states ?? []) {
    const found = live.units.get(name);
    if (!found) continue;
    found.state = state;
    for (const file of state.environmentFiles ?? []) {
      const mtime = environment.get(file);
      if (mtime !== undefined) found.changed.set(file, mtime);
    }
    if (ACTIVE_STATES.has(state.active))
      deletedLibraries(name, found, unitPids(maps, state.controlGroup, state.mainPid));
  }
  return live;

  /** The deleted libraries an active unit's processes map, or why that is unknown. */
  function deletedLibraries(name: string, found: UnitLive, pids: number[]): void {
    if (pids.length === 0 || !mapsRead) return;
    const unreadable = pids.filter((pid) => maps.unreadable.has(pid));
    if (unreadable.length) {
      const [first] = unreadable;
      live.unknown.push(
        `${name}: cannot read /proc/${first}/maps (${maps.unreadable.get(first!)})${unreadable.length > 1 ? ` nor the maps of ${unreadable.length - 1} more of its processes` : ""}: whether it maps a deleted library is unknown (another user's processes need become: sudo)`,
      );
      return;
    }
    const libraries = new Map<string, number[]>();
    for (const pid of pids) {
      for (const file of maps.deleted.get(pid) ?? []) {
        const mapping = libraries.get(file) ?? [];
        mapping.push(pid);
        libraries.set(file, mapping);
      }
    }
    found.deletedLibraries = libraries;
  }
}
