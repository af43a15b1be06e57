import type { Finding } from "../domains/domain.js";
import { latentOnly } from "../domains/latent-words.js";
import type { Cause } from "../domains/cause.js";
import type { OnDrift } from "../domains/domain.js";
import { domainByName, remediationOf, type AnyDomain } from "../domains/registry.js";
import type { LoadedNode } from "../manifest/load.js";
import { sourceOf } from "../manifest/merge-layers.js";
import { expiryTime, type Policy, type Waiver } from "../manifest/schema.js";
import { driftSignature, itemSignatureOf, latentSignature } from "../manifest/signature.js";
import type { Ticket } from "../manifest/tickets.js";
import type { DriftItem } from "../report/schema.js";
import { findExpiredWaiver, findWaiver } from "./waivers.js";

/**
 * Whether a ticket names drift with this signature: its own, or one of its items' (a set's several
 * items). A latent-only item's ticket also names the drift its event makes (the host running
 * kernel Y after the reboot the ticket was for, the certificate past the date it was to drop under
 * the declared validity): the operator committed to that change before it happened, so it is
 * acknowledged, never a new ticket beside a resolve PR saying the drift is gone.
 */
export function ticketCovers(ticket: Ticket, signature: string): boolean {
  return (
    ticket.signature === signature ||
    (ticket.items?.some((item) => item.signature === signature) ?? false) ||
    eventDrift(ticket).has(signature)
  );
}

const eventDrifts = new WeakMap<Ticket, ReadonlySet<string>>();

/** The signatures of the drift the events of a ticket's latent-only items make. */
function eventDrift(ticket: Ticket): ReadonlySet<string> {
  let known = eventDrifts.get(ticket);
  if (!known) {
    known = new Set(
      [ticket, ...(ticket.items ?? [])].flatMap((item) =>
        item.latent
          ? [driftSignature(ticket.domain, item.key, item.declared, item.latent.becomes)]
          : [],
      ),
    );
    eventDrifts.set(ticket, known);
  }
  return known;
}

/**
 * What policy makes of an item of `domain` with `cause`: `policy.<domain>.on_drift`, the kind it
 * names for the cause where it names kinds (`otherwise` for the others), else the domain's default.
 */
export function onDriftOf(
  policy: Policy,
  domain: Pick<AnyDomain, "name" | "onDrift">,
  cause: Pick<Cause, "kind"> | undefined,
): OnDrift {
  const chosen = policy[domain.name]?.on_drift;
  if (typeof chosen === "string") return chosen;
  return (cause && chosen?.[cause.kind]) ?? chosen?.otherwise ?? domain.onDrift;
}

/**
 * The items once their causes are known (the host's records are read after the domains compare):
 * each one's on_drift by its cause, where policy chooses by cause. Latent-only items stay tickets.
 */
export function onDriftByCause(items: DriftItem[], policy: Policy): DriftItem[] {
  for (const item of items) {
    const domain = domainByName(item.domain);
    if (domain && !item.latentPolicy) item.onDrift = onDriftOf(policy, domain, item.cause);
  }
  return items;
}

export interface DriftContext {
  policy: Policy;
  waivers: readonly Waiver[];
  /** Open remediation tickets: drift they name is acknowledged, not new. */
  tickets: readonly Ticket[];
  now: Date;
  /** How often scheduled audits run (`audit.interval`), in milliseconds, when the fleet says. */
  auditInterval?: number | undefined;
}

/**
 * A domain's findings on one node, as report drift items: severity and on_drift by policy, source,
 * waivers.
 */
export function toDriftItems(
  node: LoadedNode,
  domain: AnyDomain,
  findings: readonly Finding[],
  ctx: DriftContext,
): DriftItem[] {
  const policy = ctx.policy[domain.name] ?? {};
  const latentPolicy = policy.latent ?? "ticket";
  // Latent-only findings (clean now) are dropped when the policy ignores them.
  const kept =
    latentPolicy === "ignore" ? findings.filter((finding) => !latentOnly(finding)) : findings;
  return kept.map((finding) => {
    const origin = sourceOf(node, finding.path);
    // The finding whole (detail, diff, cause, latent, holders and whatever a domain adds), so a PR
    // renders the item the report holds, never a copy rebuilt field by field.
    const item: DriftItem = {
      ...finding,
      domain: domain.name,
      severity: policy.severity ?? domain.severity,
      fingerprint: latentOnly(finding)
        ? latentSignature(domain.name, finding.key, finding.declared, finding.latent, node.name)
        : driftSignature(domain.name, finding.key, finding.declared, finding.live, node.name),
      source: { file: origin.file, line: origin.line },
      remediation: remediationOf({ ...finding, domain: domain.name }),
      onDrift: onDriftOf(ctx.policy, domain, finding.cause),
      path: [...finding.path],
    };
    if (latentOnly(finding) && latentPolicy !== "ignore") {
      item.latentPolicy = latentPolicy;
      // Declared already equals live: there is nothing to accept, only a host to fix.
      item.onDrift = "ticket";
    }
    const signature = itemSignatureOf(domain.name, {
      ...finding,
      latent: latentOnly(finding) ? finding.latent : undefined,
    });
    const ticket = ctx.tickets.find(
      (t) => t.status === "open" && ticketCovers(t, signature) && t.nodes.includes(node.name),
    );
    const subject = { node: node.name, domain: domain.name, key: finding.key, live: finding.live };
    const waiver = findWaiver(ctx.waivers, subject, ctx.now);
    // A ticket past its due date no longer holds the drift back: it is drift again, saying so.
    const overdue = ticket?.due !== undefined && ctx.now.getTime() > expiryTime(ticket.due);
    if (ticket && !overdue) {
      item.acknowledged = true;
      item.acknowledgedBy = `ticket ${ticket.id}`;
    } else if (waiver) {
      item.acknowledged = true;
      item.acknowledgedBy = `waiver: ${waiver.reason}`;
    } else if (ticket) {
      item.lapsed = `ticket ${ticket.id} past due since ${ticket.due}`;
    } else {
      const expired = findExpiredWaiver(ctx.waivers, subject, ctx.now);
      if (expired) item.lapsed = `waiver expired ${expired.expires}: ${expired.reason}`;
    }
    return item;
  });
}
