import type { Finding } from "../domain.js";
import type { SpecPath } from "../../spec-path.js";
import { isoTime, notAHostTime } from "../file-times.js";
import { ACTIVE_STATES, type UnitLive } from "./parse.js";

// A declared unit whose files on disk are not what systemd runs: they take effect at the next
// daemon-reload (systemd has not read them) or restart (the running process predates them, or
// maps a library since deleted or replaced).

// btime, the start and mtimes are whole seconds on two clocks: a file counts as changed after the
// start only past this much, so a unit started right after its edit is never flagged.
const CLOCK_SLACK_S = 2;

// A deleted-library finding names this many of its files, then counts the rest.
const NAMED_LIBRARIES = 5;
const LIBRARY_SEPARATOR = ", ";

/**
 * The libraries a `<unit>:libraries` finding names in its `because`. A file name holding the
 * separator reads as two: each is only looked up in what the host recorded, never trusted.
 */
export const namedLibraries = (because: string): string[] =>
  because
    .replace(/ and \d+ more$/, "")
    .split(LIBRARY_SEPARATOR)
    .filter((file) => file.startsWith("/"));

/** A latent finding's key as its unit and what of it changes (`loaded`, `running`, `libraries`). */
export function splitLatentKey(key: string): [unit: string, what: string] {
  const at = key.lastIndexOf(":");
  return [key.slice(0, at), key.slice(at + 1)];
}

/**
 * The latent findings of one unit: `<unit>:loaded` (daemon-reload), `<unit>:running` and
 * `<unit>:libraries` (restart).
 */
export function unitLatent(
  name: string,
  got: UnitLive,
  base: SpecPath,
  bootedAt: number | undefined,
): Finding[] {
  const state = got.state;
  if (!state) return [];
  const findings: Finding[] = [];
  if (state.needDaemonReload) {
    findings.push({
      key: `${name}:loaded`,
      declared: "loaded",
      live: "loaded",
      path: base,
      detail:
        "NeedDaemonReload=yes: systemd still holds the unit as it was before its files changed",
      latent: {
        after: "daemon-reload",
        becomes: "reloaded from disk",
        because: `NeedDaemonReload=yes: ${got.file ?? name} or a drop-in changed since systemd loaded it`,
      },
    });
  }
  const libraries = librariesLatent(name, got, base);
  if (libraries) findings.push(libraries);
  if (!ACTIVE_STATES.has(state.active) || !state.activeSinceUs || bootedAt === undefined)
    return findings;
  const since = Math.floor(bootedAt + state.activeSinceUs / 1e6);
  // A start or change time that is no time says nothing of which came first.
  if (notAHostTime(since) !== undefined) return findings;
  const newer = [...got.changed]
    .filter(([, mtime]) => mtime > since + CLOCK_SLACK_S && notAHostTime(mtime) === undefined)
    .sort(([, a], [, b]) => a - b);
  if (newer.length === 0) return findings;
  const value = `active since ${isoTime(since)}`;
  findings.push({
    key: `${name}:running`,
    declared: value,
    live: value,
    path: base,
    detail: `the running process started before ${newer.map(([file]) => file).join(", ")} changed`,
    latent: {
      after: "restart",
      becomes: `restarted with the files on disk`,
      because: newer.map(([file, mtime]) => `${file} changed at ${isoTime(mtime)}`).join(", "),
    },
  });
  return findings;
}

/** An active unit whose processes map deleted libraries: a restart loads the files on disk. */
function librariesLatent(name: string, got: UnitLive, base: SpecPath): Finding | undefined {
  const files = [...(got.deletedLibraries ?? [])];
  if (files.length === 0) return undefined;
  const pids = [...new Set(files.flatMap(([, mapping]) => mapping))];
  const named = files.slice(0, NAMED_LIBRARIES).map(([file]) => file);
  const more = files.length - named.length;
  const value = "active with the libraries it started with";
  return {
    key: `${name}:libraries`,
    declared: value,
    live: value,
    path: base,
    detail: `${pids.length === 1 ? "process" : "processes"} ${pids.join(", ")} ${pids.length === 1 ? "maps" : "map"} files deleted or replaced since ${pids.length === 1 ? "it" : "they"} started`,
    latent: {
      after: "restart",
      becomes: "restarted with the libraries on disk",
      because: `${named.join(LIBRARY_SEPARATOR)}${more ? ` and ${more} more` : ""}`,
    },
  };
}
