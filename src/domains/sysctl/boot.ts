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
 * (`runtime`: a `sysctl -w` or a daemon's write). A key no file sets is `runtime` when the host has
 * not booted and no persisted file changed since the node's last audit: the audit history then says
 * whether the live value changed since that audit (`attachCauses`). Both need every persisted
 * file's time (`untimed`: one is unknown, so no claim). Anything else is left to the unknown cause.
 */
export function driftCause(live: SysctlLive, name: string): Cause | undefined {
  const boot = live.persisted.get(name);
  const got = live.runtime.get(name);
  if (got === undefined) return undefined;
  if (boot === undefined) return unpersistedCause(live, got);
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
  const { bootedAt, auditedAt } = live;
  // A file changed since the boot, or since the node's last audit when later (configuration
  // management writes files without applying them), may hold a value applied since: no guess.
  if (bootedAt === undefined || live.changed.size === 0 || live.untimed) return undefined;
  const badBoot = notAHostTime(bootedAt);
  if (badBoot !== undefined)
    return {
      kind: "unknown",
      evidence: untimedEvidence("the boot time,", String(bootedAt), badBoot),
    };
  // The node's last audit is the auditor's own time, so no host time to check.
  const since = Math.max(bootedAt, auditedAt ?? bootedAt);
  if ([...live.changed.values()].some((mtime) => mtime > since)) return undefined;
  const when =
    since === bootedAt
      ? `boot at ${isoTime(bootedAt)}`
      : `this node's last audit at ${isoTime(since)}`;
  return {
    kind: "runtime",
    evidence: `live ${got} is set by no persisted file (${where(boot)} sets ${boot.value}) and none changed since ${when}: a runtime write such as sysctl -w`,
  };
}

/**
 * A key no persisted file sets: its live value is the kernel's default or a runtime write, told
 * apart only by the node's last audit, when the host has run since without a boot or a persisted
 * file's change.
 */
function unpersistedCause(live: SysctlLive, got: string): Cause | undefined {
  const { bootedAt, auditedAt } = live;
  if (bootedAt === undefined || auditedAt === undefined || bootedAt > auditedAt) return undefined;
  if (live.changed.size === 0 || live.untimed || notAHostTime(bootedAt) !== undefined)
    return undefined;
  if ([...live.changed.values()].some((mtime) => mtime > auditedAt)) return undefined;
  return {
    kind: "runtime",
    evidence: `live ${got} is set by no persisted file and neither a boot nor a persisted file's change happened since this node's last audit at ${isoTime(auditedAt)}: a runtime write such as sysctl -w`,
  };
}
