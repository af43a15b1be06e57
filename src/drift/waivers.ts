import type { JsonValue } from "../domains/domain.js";
import { globMatch } from "../glob.js";
import { expiryTime, type Waiver } from "../manifest/schema.js";

export interface WaiverSubject {
  node: string;
  domain: string;
  key: string;
  live: JsonValue;
}

export function waiverExpired(waiver: Waiver, now: Date): boolean {
  return waiver.expires !== undefined && now.getTime() > expiryTime(waiver.expires);
}

const covers = (w: Waiver, subject: WaiverSubject) =>
  globMatch(w.node, subject.node) &&
  globMatch(w.domain, subject.domain) &&
  globMatch(w.key, subject.key) &&
  (w.live === undefined ||
    String(w.live) ===
      (typeof subject.live === "object" ? JSON.stringify(subject.live) : String(subject.live)));

export function findWaiver(
  waivers: readonly Waiver[],
  subject: WaiverSubject,
  now: Date,
): Waiver | undefined {
  return waivers.find((w) => !waiverExpired(w, now) && covers(w, subject));
}

/** The waiver that covered this drift until it expired (the latest to expire), if any. */
export function findExpiredWaiver(
  waivers: readonly Waiver[],
  subject: WaiverSubject,
  now: Date,
): (Waiver & { expires: string }) | undefined {
  return waivers
    .filter((w): w is Waiver & { expires: string } => waiverExpired(w, now) && covers(w, subject))
    .sort((a, b) => expiryTime(b.expires) - expiryTime(a.expires))[0];
}

/**
 * Waivers worth a warning: one that never expires, or one lasting longer than `maxDays` from now
 * (`policy.waivers.max_days`).
 */
export function waiverWarnings(
  waivers: readonly Waiver[],
  maxDays: number | undefined,
  now: Date,
): { index: number; message: string }[] {
  return waivers.flatMap((waiver, index) => {
    if (waiver.expires === undefined)
      return [
        {
          index,
          message: `waiver "${waiver.reason}" has no expires date: it waives this drift forever`,
        },
      ];
    if (maxDays !== undefined && expiryTime(waiver.expires) - now.getTime() > maxDays * 86_400_000)
      return [
        {
          index,
          message: `waiver "${waiver.reason}" expires ${waiver.expires}, more than policy.waivers.max_days (${maxDays}) from now`,
        },
      ];
    return [];
  });
}
