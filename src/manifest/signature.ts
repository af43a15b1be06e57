// Drift's names. A ticket file states the signature of the drift it acknowledges, so the names are
// defined beside the manifest; drift/ (fingerprints) and propose/ (grouping) use them too.
import { createHash } from "node:crypto";
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
 * A node's latent-only item (live as declared, an event changes it): its drift's fingerprint with the
 * value the event gives it, so another coming value (a newer kernel installed since) is another item,
 * with its own first sighting and cause.
 */
export function latentFingerprint(
  domain: string,
  key: string,
  declared: JsonValue,
  latent: { after: string; becomes: JsonValue },
  node: string,
): string {
  return digest([node, domain, key, declared, declared, [latent.after, latent.becomes]]);
}

/** Several items of one set drifting together (listeners, routes): one signature for them all. */
export const setSignature = (signatures: readonly string[]): string =>
  digest([...signatures].sort());
