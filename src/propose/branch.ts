import { DOMAIN_NAMES, type DomainName } from "../domains/registry.js";

export type PullKind = "accept" | "ticket" | "resolve" | "lift";
const KINDS: readonly string[] = ["accept", "ticket", "resolve", "lift"];

export const BRANCH_PREFIX = "quartermaster--";

export const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/, "") || "value";

/** Branch names use `--` separators, never `/`: `a/b` and `a/b/c` cannot both exist as refs. */
export function branchName(kind: PullKind, domain: string, key: string, identity: string): string {
  return `${BRANCH_PREFIX}${kind}--${domain}--${slug(key)}--${identity}`;
}

/**
 * What a branch name says about its PR: only the bot (or a human with push access) names branches,
 * never a host.
 */
export interface BranchIdentity {
  kind: PullKind;
  domain: DomainName;
  slug: string;
  /**
   * The drift signature (accept), signature and number (ticket), ticket id (resolve), or the hash of
   * the lifted values' file and paths (lift).
   */
  identity: string;
}

export function branchIdentity(branch: string): BranchIdentity | undefined {
  if (!branch.startsWith(BRANCH_PREFIX)) return undefined;
  const parts = branch.slice(BRANCH_PREFIX.length).split("--");
  if (parts.length < 4) return undefined;
  const [kind, domain, keySlug] = parts as [string, string, string];
  // A resolve branch ends in a ticket id, which a person may have written with `--` in it.
  const identity = parts.slice(3).join("--");
  if (!KINDS.includes(kind) || !(DOMAIN_NAMES as readonly string[]).includes(domain))
    return undefined;
  if (!/^[a-z0-9-]+$/.test(keySlug) || !/^[a-z0-9][a-z0-9._-]*$/.test(identity)) return undefined;
  return { kind: kind as PullKind, domain: domain as DomainName, slug: keySlug, identity };
}

/** A ticket's id from its branch parts: the same id `remediations/<id>.yaml` is named by. */
export const ticketId = (domain: string, keySlug: string, identity: string) =>
  `${`${domain}-${keySlug}`.replaceAll("_", "-")}-${identity}`;
