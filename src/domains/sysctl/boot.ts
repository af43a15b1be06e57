import type { Cause, Latent } from "../cause.js";
import { isoTime, notAHostTime, untimedEvidence } from "../file-times.js";
import type { PersistedValue, SysctlLive } from "./parse.js";

// What the boot-time sysctl pass says about a key: the value it will set (latent drift) and,
// for a drifted key, whether a persisted file or a runtime write explains the live value.

const where = (boot: PersistedValue) => `${boot.file}:${boot.line}`;

/** The value the next boot sets when it is not the live one; undefined when it keeps it. */
export function bootLatent(live: SysctlLive, name: string): Latent | undefined {
  const boot = live.persisted.get(name);
  const got = live.runtime.get(name);
  if (boot === undefined || got === undefined || boot.value === got) return undefined;
  return { after: "reboot", becomes: boot.value, because: where(boot) };
}

/**
 * Why a key's live value is not the declared one, where the host shows it: the winning persisted
 * file sets it (`persisted`), or it sets another value and no persisted file changed since boot
 * (`runtime`: a `sysctl -w` or a daemon's write). Anything else is left to the unknown cause.
 */
export function driftCause(live: SysctlLive, name: string): Cause | undefined {
  const boot = live.persisted.get(name);
  const got = live.runtime.get(name);
  if (boot === undefined || got === undefined) return undefined;
  if (boot.value === got) {
    const at = live.changed.get(boot.file);
    const bad = at === undefined ? undefined : notAHostTime(at);
    if (bad !== undefined)
      return {
        kind: "unknown",
        evidence: untimedEvidence(`${boot.file}'s mtime,`, String(at), bad),
      };
    return {
      kind: "persisted",
      ...(at !== undefined && { at: isoTime(at) }),
      evidence: `${where(boot)} sets ${boot.value}`,
      group: boot.file,
    };
  }
  const { bootedAt } = live;
  // A file changed since boot may hold a value applied since, or one not applied yet: no guess.
  if (bootedAt === undefined || live.changed.size === 0) return undefined;
  const badBoot = notAHostTime(bootedAt);
  if (badBoot !== undefined)
    return {
      kind: "unknown",
      evidence: untimedEvidence("the boot time,", String(bootedAt), badBoot),
    };
  if ([...live.changed.values()].some((mtime) => mtime > bootedAt)) return undefined;
  return {
    kind: "runtime",
    evidence: `live ${got} is set by no persisted file (${where(boot)} sets ${boot.value}) and none changed since boot at ${isoTime(bootedAt)}: a runtime write such as sysctl -w`,
  };
}
