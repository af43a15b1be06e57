import type { JsonValue } from "../domains/domain.js";
import { DOMAINS } from "../domains/registry.js";
import { globMatch, isGlob } from "../glob.js";
import { nearest } from "../manifest/suggest.js";
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

/** A waiver's field that can match nothing, and what it may have meant. */
export interface WaiverProblem {
  index: number;
  field: "domain" | "key";
  message: string;
  hint?: string;
}

/** The literal start of a glob: what every value it matches begins with. */
const literalStart = (glob: string) => glob.slice(0, glob.search(/[*?[\\]/) >>> 0);

/**
 * Waivers that can waive nothing: a domain glob matching no domain (`sysctlz`), or a key no key of
 * the domains it names can have (a files key not starting with `/`), where the domain says.
 */
export function waiverProblems(waivers: readonly Waiver[]): WaiverProblem[] {
  const problems: WaiverProblem[] = [];
  const names = DOMAINS.map((d) => d.name);
  waivers.forEach((waiver, index) => {
    const domains = DOMAINS.filter((d) => globMatch(waiver.domain, d.name));
    if (!domains.length) {
      const suggestion = nearest(waiver.domain, names);
      problems.push({
        index,
        field: "domain",
        message: `waiver domain "${waiver.domain}" matches no domain (${names.join(", ")})`,
        ...(suggestion && { hint: `did you mean "${suggestion}"?` }),
      });
      return;
    }
    const start = isGlob(waiver.key) ? literalStart(waiver.key) : undefined;
    const canMatch = (prefix: string) =>
      start === undefined
        ? waiver.key.startsWith(prefix)
        : start.startsWith(prefix) || prefix.startsWith(start);
    const shaped = domains.filter((d) => d.keyPrefixes);
    if (shaped.length < domains.length || shaped.some((d) => d.keyPrefixes!.some(canMatch))) return;
    const prefixes = shaped.flatMap((d) => d.keyPrefixes!);
    problems.push({
      index,
      field: "key",
      message: `waiver key "${waiver.key}" can match no ${shaped.map((d) => d.name).join(" or ")} key: those start with ${prefixes.map((p) => `"${p}"`).join(" or ")}`,
    });
  });
  return problems;
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
