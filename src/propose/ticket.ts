import { expiryTime } from "../manifest/schema.js";
import { latentOnly } from "../domains/latent-words.js";
import type { Ticket } from "../manifest/tickets.js";
import type { DriftItem } from "../report/schema.js";
import { stringifyPortable } from "../text/yaml-scalar.js";
import { slug } from "./branch.js";
import { groupKey, itemSignature, type DriftGroup } from "./group.js";

/** The remediation ticket a ticket PR records for a drift group. */
export function ticketFor(group: DriftGroup, id: string, detected: string, reason: string): Ticket {
  const [first, ...more] = group.items as [DriftItem, ...DriftItem[]];
  const many = more.length > 0;
  return {
    id,
    status: "open",
    domain: group.domain.name,
    key: groupKey(group),
    declared: many ? group.items.map((i) => i.declared) : first.declared,
    live: many ? group.items.map((i) => i.live) : first.live,
    ...(!many && latentPart(first)),
    severity: first.severity,
    nodes: group.nodes.map((n) => n.node.name).sort(),
    remediation: first.remediation,
    detected,
    signature: group.signature,
    ...(many && {
      items: group.items.map((i) => ({
        key: i.key,
        declared: i.declared,
        live: i.live,
        ...latentPart(i),
        signature: itemSignature(i),
      })),
    }),
    reason,
    ...(group.owners.length > 0 && { owner: group.owners[0] }),
  };
}

/** A latent-only item's event and what it makes the item, as its signature holds them. */
const latentPart = (item: DriftItem) =>
  latentOnly(item) ? { latent: { after: item.latent.after, becomes: item.latent.becomes } } : {};

/**
 * A ticket's id and branch identity: by signature, numbered past tickets already recorded for it.
 */
export function ticketIdentity(
  group: DriftGroup,
  recorded: ReadonlySet<string>,
): { id: string; identity: string } {
  const base = `${group.domain.name}-${slug(groupKey(group))}`.replaceAll("_", "-");
  for (let n = 1; ; n++) {
    const identity = n === 1 ? group.identity : `${group.identity}-${n}`;
    if (!recorded.has(`${base}-${identity}`)) return { id: `${base}-${identity}`, identity };
  }
}

// Host text (a key, a live value) is written so every YAML reader reads it alike, PyYAML too: no
// control, format or line-separator character raw.
export const ticketYaml = (ticket: Ticket) =>
  `# Remediation ticket recorded by Quartermaster. Merging commits the operator to fix the host;\n# set status: resolved once it is fixed (Quartermaster proposes that when the drift is gone).\n${stringifyPortable(ticket)}`;

/** A ticket past its `due` date, if tickets carry one (an ISO date or date-time). */
export function ticketsPastDue(
  tickets: readonly { ticket: Ticket; file: string }[],
  now: number,
): { ticket: Ticket; file: string; due: string }[] {
  return tickets.flatMap(({ ticket, file }) => {
    const due: unknown = (ticket as { due?: unknown }).due;
    if (ticket.status !== "open" || typeof due !== "string") return [];
    const at = expiryTime(due);
    return Number.isNaN(at) || at >= now ? [] : [{ ticket, file, due }];
  });
}
