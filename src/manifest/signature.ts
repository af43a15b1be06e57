// Drift's names. A ticket file states the signature of the drift it acknowledges, so the names are
// defined beside the manifest; drift/ (fingerprints) and propose/ (grouping) use them too.
import { createHash } from "../crypto.js";
import type { JsonValue } from "../domains/domain.js";

/** 16 hex digits of the SHA-256 of the parts' JSON: how drift is named in reports, tickets and PRs. */
function digest(parts: readonly unknown[]): string {
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 16);
}

/**
 * The same drift on any node: (domain, key, declared, live); identical drift on many nodes is one
 * PR. With `node`, that node's drift (the report's fingerprint): how re-runs recognise the same
 * drift.
 */
export function driftSignature(
  domain: string,
  key: string,
  declared: JsonValue,
  live: JsonValue,
  node?: string,
): string {
  const drift = [domain, key, declared, live];
  return digest(node === undefined ? drift : [node, ...drift]);
}

/**
 * The same latent-only item (live as declared, an event changes it) on any node: its drift's
 * signature with what the event makes it, so a ticket for one coming value (kernel X at the next
 * boot) never covers another (kernel Y installed since). With `node`, that node's item (the
 * report's fingerprint), with its own first sighting and cause.
 */
export function latentSignature(
  domain: string,
  key: string,
  declared: JsonValue,
  latent: { after: string; becomes: JsonValue },
  node?: string,
): string {
  const item = [domain, key, declared, declared, [latent.after, latent.becomes]];
  return digest(node === undefined ? item : [node, ...item]);
}

/**
 * How tickets and pull requests match an item on any node: its drift's signature, or, given the
 * latent part of a latent-only item, that item's with what the event makes it.
 */
export function itemSignatureOf(
  domain: string,
  item: {
    key: string;
    declared: JsonValue;
    live: JsonValue;
    latent?: { after: string; becomes: JsonValue } | undefined;
  },
): string {
  return item.latent
    ? latentSignature(domain, item.key, item.declared, item.latent)
    : driftSignature(domain, item.key, item.declared, item.live);
}

/** Several items of one set drifting together (listeners, routes): one signature for them all. */
export const setSignature = (signatures: readonly string[]): string =>
  digest([...signatures].sort());
