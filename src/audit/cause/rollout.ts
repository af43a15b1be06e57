import { createHash } from "../../crypto.js";
import type { Cause } from "../../domains/cause.js";
import type { DriftItem } from "../../report/schema.js";

// A pending rollout, told from the audit history alone (the manifests are cloned without history):
// each audit records one short hash per declared value, of its spec path and the value together.
// A drift whose live value hashes to one declared at the node's last audit, while the value
// declared now does not, is the manifest moving ahead of the host.

/** Characters of one print: 48 bits of SHA-256, base64url; collisions within a node stay remote. */
export const PRINT_CHARS = 8;

/** What a node's last audit declared, as the history keeps it. */
export interface DeclaredBefore {
  prints: ReadonlySet<string>;
  /** The manifests' revision at that audit, when it was a clean commit. */
  revision?: string;
}

/** One value's form for hashing: a spec's `8192` and a host's "8192" are one value. */
const canonical = (value: unknown): string =>
  typeof value === "string" || typeof value === "number" || typeof value === "boolean"
    ? String(value).trim()
    : JSON.stringify(value);

function print(path: readonly (string | number)[], value: unknown): string {
  return createHash("sha256")
    .update(JSON.stringify([path, canonical(value)]))
    .digest("base64url")
    .slice(0, PRINT_CHARS);
}

/** Every scalar (and every list, whole) under `value`, with its spec path. */
function* leaves(
  path: (string | number)[],
  value: unknown,
): Generator<[(string | number)[], unknown]> {
  yield [path, value];
  if (value === null || typeof value !== "object") return;
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? value.map((v, i) => [i, v])
    : Object.entries(value);
  for (const [key, child] of entries) yield* leaves([...path, key], child);
}

/** The prints of the declarations at their spec paths, sorted and joined: one string per node. */
export function declaredPrints(
  declarations: Iterable<{ path: readonly (string | number)[]; declared: unknown }>,
): string {
  const prints = new Set<string>();
  for (const { path, declared } of declarations)
    for (const [at, value] of leaves([...path], declared)) prints.add(print(at, value));
  return [...prints].sort().join("");
}

/** The prints of a history entry's string, each `PRINT_CHARS` long. */
export function splitPrints(joined: string): Set<string> {
  const prints = new Set<string>();
  for (let i = 0; i + PRINT_CHARS <= joined.length; i += PRINT_CHARS)
    prints.add(joined.slice(i, i + PRINT_CHARS));
  return prints;
}

/** Whether the node's last audit declared the value declared now at the item's path. */
export const declaredAsBefore = (
  item: { path: readonly (string | number)[]; declared: unknown },
  before: DeclaredBefore,
): boolean => before.prints.has(print(item.path, item.declared));

const short = (revision: string) => revision.slice(0, 12);

/**
 * `rollout` when the live value is one the node's last audit declared at this path and the value
 * declared now is not: which commit in between changed it is beyond a depth-1 clone, so `commit`
 * is the revision audited now, which carries the change, and `at` that commit's time.
 */
export function rolloutCause(
  item: { path: readonly (string | number)[] } & Pick<DriftItem, "declared" | "live">,
  before: DeclaredBefore,
  revision: string | null,
  revisionAt?: string,
): Cause | undefined {
  if (!before.prints.has(print(item.path, item.live))) return undefined;
  if (before.prints.has(print(item.path, item.declared))) return undefined;
  const then = before.revision ? `revision ${short(before.revision)}` : "an uncommitted revision";
  const now = revision ? ` changed it by revision ${short(revision)}` : " changed it since";
  return {
    kind: "rollout",
    ...(revision && revisionAt !== undefined && { at: revisionAt }),
    evidence: `the live value is the one declared at ${then} (this node's last audit); the manifests${now}`,
    ...(revision && { commit: revision, group: `rollout ${revision}` }),
  };
}
