import type { JsonValue } from "../domains/domain.js";
import { globMatch } from "../glob.js";
import type { Waiver } from "../manifest/schema.js";

export interface WaiverSubject {
  node: string;
  domain: string;
  key: string;
  live: JsonValue;
}

/**
 * When an `expires` value ends: a date at the end of that day, UTC; a date-time at that instant,
 * read as UTC when it has no offset (never the runner's time zone). NaN when it is no real time.
 */
export function expiryTime(expires: string): number {
  if (expires.length === 10) return Date.parse(`${expires}T23:59:59.999Z`);
  return Date.parse(/(?:Z|[+-]\d{2}:?\d{2})$/.test(expires) ? expires : `${expires}Z`);
}

export function waiverExpired(waiver: Waiver, now: Date): boolean {
  return waiver.expires !== undefined && now.getTime() > expiryTime(waiver.expires);
}

export function findWaiver(
  waivers: readonly Waiver[],
  subject: WaiverSubject,
  now: Date,
): Waiver | undefined {
  return waivers.find(
    (w) =>
      !waiverExpired(w, now) &&
      globMatch(w.node, subject.node) &&
      globMatch(w.domain, subject.domain) &&
      globMatch(w.key, subject.key) &&
      (w.live === undefined ||
        String(w.live) ===
          (typeof subject.live === "object" ? JSON.stringify(subject.live) : String(subject.live))),
  );
}
