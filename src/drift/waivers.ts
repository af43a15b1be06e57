import type { JsonValue } from "../domains/domain.js";
import { globMatch } from "../glob.js";
import type { Waiver } from "../manifest/schema.js";

export interface WaiverSubject {
  node: string;
  domain: string;
  key: string;
  live: JsonValue;
}

/** A waiver runs to the end of its `expires` day (UTC); a date-time expires at that instant. */
export function waiverExpired(waiver: Waiver, now: Date): boolean {
  if (!waiver.expires) return false;
  const end = waiver.expires.length === 10 ? new Date(`${waiver.expires}T23:59:59.999Z`) : new Date(waiver.expires);
  return now.getTime() > end.getTime();
}

export function findWaiver(waivers: readonly Waiver[], subject: WaiverSubject, now: Date): Waiver | undefined {
  return waivers.find(
    (w) =>
      !waiverExpired(w, now) &&
      globMatch(w.node, subject.node) &&
      globMatch(w.domain, subject.domain) &&
      globMatch(w.key, subject.key) &&
      (w.live === undefined || String(w.live) === (typeof subject.live === "object" ? JSON.stringify(subject.live) : String(subject.live))),
  );
}
