import { SEVERITIES, type JsonValue } from "../domains/domain.js";
import { latentOnly, latentTitle } from "../domains/latent-words.js";
import { declaredWords, liveWords, type DomainName } from "../domains/registry.js";
import { wordList } from "../text/word-list.js";
import { nodeList } from "../text/markdown.js";
import { branchName, slug, ticketId, type PullKind } from "./branch.js";
import { causeIdentity, groupKey, hash, type DriftGroup, type KnownCause } from "./group.js";

// What one pull request takes and how it is named: one drift group, or every group of one known
// cause (across nodes and domains) and one set of owners, from bundleGroups.

/** The drift groups of one pull request, never empty. */
export type Bundle = readonly DriftGroup[];

const CAUSE_WORDS: Record<KnownCause["kind"], string> = {
  package: "one package transaction",
  "package-file": "one package upgrade",
  "file-edit": "one file edit",
  runtime: "one runtime change",
  persisted: "one persisted file",
  reboot: "one reboot",
  rollout: "one manifest rollout",
};

/** The cause a bundle's PR is one of, when every group in it has that one cause and change. */
export function bundleCause(bundle: Bundle): KnownCause | undefined {
  const cause = bundle[0]!.cause;
  return cause && bundle.every((g) => g.cause && causeIdentity(g.cause) === causeIdentity(cause))
    ? cause
    : undefined;
}

/**
 * What names a bundle's branches and marker: the cause's group, change and owners hashed (host text
 * never reaches a branch name), the same whichever nodes joined; else its first group's identity.
 */
export function bundleIdentity(bundle: Bundle): string {
  const cause = bundleCause(bundle);
  if (!cause) return bundle[0]!.identity;
  const { owners } = bundle[0]!;
  return [bundleSignature(bundle), ...(owners.length ? [hash(JSON.stringify(owners))] : [])].join(
    "-",
  );
}

/** The marker's signature: the cause's group and change hashed, else the first group's drift signature. */
export const bundleSignature = (bundle: Bundle) => {
  const cause = bundleCause(bundle);
  return cause ? `c${hash(causeIdentity(cause), 16)}` : bundle[0]!.signature;
};

/** Every domain the bundle's items are in, sorted: the first names the branch. */
export const bundleDomains = (bundle: Bundle): DomainName[] =>
  [...new Set(bundle.map((g) => g.domain.name))].sort();

/** The part of a branch name saying what it is about: the group's key, or the cause's kind. */
const branchKey = (bundle: Bundle) => bundleCause(bundle)?.kind ?? groupKey(bundle[0]!);

/** The branch of a bundle's PR of `kind`; a ticket's `identity` may carry a number past recorded ones. */
export const bundleBranch = (kind: PullKind, bundle: Bundle, identity = bundleIdentity(bundle)) =>
  branchName(kind, bundleDomains(bundle)[0]!, branchKey(bundle), identity);

/** The id a ticket PR's marker names: the one ticket's, or one made from its branch for a cause. */
export const bundleTicketId = (bundle: Bundle, identity: string, single: string) =>
  bundleCause(bundle)
    ? ticketId(bundleDomains(bundle)[0]!, slug(branchKey(bundle)), identity)
    : single;

export const bundleNodes = (bundle: Bundle): string[] =>
  [...new Set(bundle.flatMap((g) => g.nodes.map((n) => n.node.name)))].sort();

/** One row per node and drift item, for the body's table. */
export const bundleRows = (bundle: Bundle) =>
  bundle.flatMap((g) =>
    g.nodes.flatMap((n) => n.items.map((item) => ({ node: n.node.name, item }))),
  );

/** Labels: each domain's, and the most severe item's severity. */
export function bundleLabels(bundle: Bundle): string[] {
  const severities = new Set(bundle.flatMap((g) => g.items.map((i) => i.severity)));
  const worst = SEVERITIES.find((s) => severities.has(s))!;
  return [...bundleDomains(bundle).map((d) => `drift:${d}`), `severity:${worst}`];
}

// A missing unit, file or package is live `null`: a title says it in words.
const show = (value: JsonValue) =>
  typeof value === "string"
    ? value
    : value === null
      ? "absent"
      : (wordList(value) ?? JSON.stringify(value));

/** A bundle's title: what drifted where (and from which cause), values only when short. */
export function bundleTitle(verb: string, bundle: Bundle): string {
  const names = nodeList(bundleNodes(bundle));
  const cause = bundleCause(bundle);
  const [group, ...others] = bundle;
  if (!others.length) {
    const [item, ...more] = group!.items;
    // Latent only: live as declared now, so the event it waits for, never "X → X".
    const latent = !more.length && latentOnly(item!);
    const values = more.length
      ? ""
      : latentOnly(item!)
        ? latentTitle(item)
        : `${declaredWords(item!) ?? show(item!.declared)} → ${liveWords(item!) ?? show(item!.live)}`;
    const from = cause ? ` from ${CAUSE_WORDS[cause.kind]}` : "";
    return `${verb} ${latent ? "latent " : ""}${group!.domain.name} drift${from} on ${names}: ${groupKey(group!)}${values && values.length <= 80 ? `: ${values}` : ""}`;
  }
  const keys = bundle.flatMap((g) => g.items.map((i) => i.key));
  const from = cause ? ` from ${CAUSE_WORDS[cause.kind]}` : "";
  return `${verb} drift${from} on ${names}: ${bundleDomains(bundle).join(", ")} ${keys[0]} and ${keys.length - 1} more`;
}
