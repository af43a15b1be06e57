import type { Finding } from "../domain.js";
import type { SpecPath } from "../../spec-path.js";
import { isoTime } from "../file-times.js";
import { ACTIVE_STATES, type UnitLive } from "./parse.js";

// A declared unit whose files on disk are not what systemd runs: they take effect at the next
// daemon-reload (systemd has not read them) or restart (the running process predates them).

// btime, the start and mtimes are whole seconds on two clocks: a file counts as changed after the
// start only past this much, so a unit started right after its edit is never flagged.
const CLOCK_SLACK_S = 2;

/** The latent findings of one unit: `<unit>:loaded` (daemon-reload), `<unit>:running` (restart). */
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
  if (!ACTIVE_STATES.has(state.active) || !state.activeSinceUs || bootedAt === undefined)
    return findings;
  const since = Math.floor(bootedAt + state.activeSinceUs / 1e6);
  const newer = [...got.changed]
    .filter(([, mtime]) => mtime > since + CLOCK_SLACK_S)
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
