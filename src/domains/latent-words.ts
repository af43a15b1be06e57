import { isDeepStrictEqual } from "node:util";
import { wordList } from "../text/word-list.js";
import type { Cause, Latent, LatentEvent } from "./cause.js";

// How latent drift reads (declared state that holds now and will not after an event): what the
// event changes and what an operator does before it, never "declared X but the host runs X". A
// domain words its own events (`Domain.latentWords`); these are the words of any other.

/** A latent item as its words need it. */
export interface LatentItem {
  key: string;
  declared: unknown;
  live: unknown;
  latent: Latent;
  /** What put the coming value in place, where the host recorded it. */
  cause?: Cause | undefined;
}

/**
 * Quartermaster's words around the host's text, which goes through `quote` (a code span in
 * Markdown, visible text on a terminal).
 */
export type Quote = (hostText: string) => string;

/** How a domain words its latent items: each event's sentence and remediation. */
export interface LatentWords {
  /** What the event changes, as one clause: "the next boot runs `6.1.0-30-amd64` (…)". */
  sentence?(item: LatentItem, quote: Quote): string | undefined;
  /** What to do about it before the event, where the domain says more than the event does. */
  remediation?: Partial<Record<LatentEvent, string>>;
}

/** "the next boot", "a restart": the event as a sentence's subject. */
export const NEXT_EVENT: Record<LatentEvent, string> = {
  reboot: "the next boot",
  restart: "a restart",
  "daemon-reload": "the next daemon-reload",
  expiry: "time",
};

const REMEDIATION: Record<LatentEvent, string> = {
  reboot:
    "Make what the next boot applies say what the manifest declares, or declare what it applies, before rebooting.",
  restart:
    "Restart it when its users can take it (`systemctl restart UNIT`): it then runs what is on disk; or put back what it runs now.",
  "daemon-reload":
    "Run `systemctl daemon-reload` so systemd loads the unit as its files say now (then restart it for its process to take them), or put the files back.",
  expiry: "Renew it before the date comes, or lower what the manifest declares.",
};

const show = (value: unknown): string =>
  typeof value === "string" ? value : value === null ? "(absent)" : JSON.stringify(value);

/** Whether an item is latent only: it holds now (declared equals live), the event changes it. */
export const latentOnly = (item: {
  declared: unknown;
  live: unknown;
  latent?: Latent | undefined;
}): item is LatentItem => item.latent !== undefined && isDeepStrictEqual(item.declared, item.live);

/** The event's clause in the domain's words, else "the next boot sets `key` to `1`: `because`". */
export function latentClause(
  words: LatentWords | undefined,
  item: LatentItem,
  quote: Quote,
): string {
  const own = words?.sentence?.(item, quote);
  if (own !== undefined) return own;
  const { after, becomes, because } = item.latent;
  return `${NEXT_EVENT[after]} sets ${quote(item.key)} to ${quote(show(becomes))} (${quote(because)})`;
}

/** What an operator does before the event: the domain's words for it, else the event's. */
export function latentRemediation(words: LatentWords | undefined, event: LatentEvent): string {
  return words?.remediation?.[event] ?? REMEDIATION[event];
}

/**
 * A title's few words: "reboot pending, becomes 6.1.0-30-amd64", "…, becomes rw,noexec" (the value
 * only when short).
 */
export function latentTitle(item: LatentItem, maxValueChars = 40): string {
  const { after, becomes } = item.latent;
  // A value (a release, a number, mount options), not words: "restarted with the libraries on
  // disk" is left out.
  const value = typeof becomes === "object" ? wordList(becomes) : show(becomes);
  const changes =
    value !== undefined &&
    !isDeepStrictEqual(becomes, item.live) &&
    value.length <= maxValueChars &&
    !/\s/.test(value);
  return `${after} pending${changes ? `, becomes ${value}` : ""}`;
}
