// The one place audit domains are registered. Adding a domain (docs/adding-a-domain.md): its folder
// under src/domains/ and one line in REGISTERED (with its import); the domain names, their order
// and `DomainName` all come from that list, so nothing else names them.
// test/unit/domains/registry.test.ts fails when a folder and a registered domain disagree.
import type { Domain } from "./domain.js";
import type { Latent } from "./cause.js";
import {
  latentClause,
  latentOnly,
  latentRemediation,
  type LatentItem,
  type Quote,
} from "./latent-words.js";
import { accounts } from "./accounts/index.js";
import { certificates } from "./certificates/index.js";
import { files } from "./files/index.js";
import { firewall } from "./firewall/index.js";
import { ioScheduler } from "./io_scheduler/index.js";
import { kernel } from "./kernel/index.js";
import { kernelModules } from "./kernel_modules/index.js";
import { mounts } from "./mounts/index.js";
import { packages } from "./packages/index.js";
import { ports } from "./ports/index.js";
import { routes } from "./routes/index.js";
import { sshd } from "./sshd/index.js";
import { sysctl } from "./sysctl/index.js";
import { systemd } from "./systemd/index.js";

const REGISTERED = [
  kernel,
  sysctl,
  ioScheduler,
  routes,
  packages,
  ports,
  files,
  systemd,
  kernelModules,
  firewall,
  mounts,
  accounts,
  sshd,
  certificates,
] as const;

/** The names of `domains`, in their order, each typed as its domain's name literal. */
const namesOf = <const D extends readonly { name: string }[]>(domains: D) =>
  domains.map((d) => d.name) as { readonly [K in keyof D]: D[K]["name"] };

export const DOMAINS: readonly AnyDomain[] = REGISTERED;
/** Every domain's name, in registry order (report and manifest schemas list them in this order). */
export const DOMAIN_NAMES = namesOf(REGISTERED);
export type DomainName = (typeof DOMAIN_NAMES)[number];
/** A registered domain, type-erased. */
export type AnyDomain = Domain<any, any, DomainName>;

export function domainByName(name: string): AnyDomain | undefined {
  return DOMAINS.find((d) => d.name === name);
}

/** An item's declared value in its domain's words, where its raw value would mislead. */
export function declaredWords(item: {
  domain: string;
  declared: unknown;
  live: unknown;
}): string | undefined {
  return domainByName(item.domain)?.declaredWords?.(item);
}

/** An item's live value in its domain's words, where its raw value would only repeat its key. */
export function liveWords(item: {
  domain: string;
  declared: unknown;
  live: unknown;
}): string | undefined {
  return domainByName(item.domain)?.liveWords?.(item);
}

/** What a latent item's event changes, in its domain's words: one clause, host text through `quote`. */
export function latentSentence(item: LatentItem & { domain: string }, quote: Quote): string {
  return latentClause(domainByName(item.domain)?.latentWords, item, quote);
}

/**
 * What an operator does about an item: for latent-only drift, what to do before the event that
 * changes it; else the domain's remediation.
 */
export function remediationOf(item: {
  domain: string;
  declared: unknown;
  live: unknown;
  latent?: Latent | undefined;
}): string {
  const domain = domainByName(item.domain);
  if (latentOnly(item)) return latentRemediation(domain?.latentWords, item.latent.after);
  return domain?.remediation ?? "";
}
