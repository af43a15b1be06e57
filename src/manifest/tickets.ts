import * as z from "zod";
import { Json, SEVERITIES, type JsonValue } from "../domains/domain.js";
import { DOMAIN_NAMES } from "../domains/registry.js";
import { Latent } from "../domains/cause.js";
import { itemSignatureOf, setSignature } from "./signature.js";
import { IsoDate, Owner } from "./schema.js";

/** A latent-only item's event and what it makes the item: part of what the ticket acknowledges. */
const TicketLatent = Latent.pick({ after: true, becomes: true }).strict();

/**
 * fleet-manifests/remediations/<id>.yaml: an operator's commitment, merged through a ticket PR, to
 * fix drift on the host.
 */
export const Ticket = z
  .strictObject({
    id: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/),
    status: z.enum(["open", "resolved"]),
    domain: z.enum(DOMAIN_NAMES),
    key: z.string(),
    declared: Json,
    live: Json,
    /** A latent-only item (live as declared): what the event makes it, so another coming value is other drift. */
    latent: TicketLatent.optional(),
    severity: z.enum(SEVERITIES),
    nodes: z.array(z.string()).min(1),
    remediation: z.string(),
    detected: z.string(),
    resolved: z.string().optional(),
    /** Same (domain, key, declared, live) on any node: how drift is matched to its ticket. */
    signature: z.string().regex(/^[0-9a-f]{16}$/),
    /**
     * For drift of several items of one set (listeners, routes) on a node: each item, matched by its
     * own signature.
     */
    items: z
      .array(
        z.strictObject({
          key: z.string(),
          declared: Json,
          live: Json,
          latent: TicketLatent.optional(),
          signature: z.string().regex(/^[0-9a-f]{16}$/),
        }),
      )
      .optional(),
    /** Why a ticket rather than an accept: policy, or the accept PR a reviewer closed. */
    reason: z.string().optional(),
    /** Who fixes it: a GitHub user or `org/team`. */
    owner: Owner.optional(),
    /** The day it is due: past it, the drift is no longer acknowledged. */
    due: IsoDate.optional(),
    /** Where the work is tracked (an issue, a change request). */
    link: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional(),
    /** References in other trackers, by tracker: `refs: { jira: OPS-1234 }`. */
    refs: z
      .record(
        z.string().regex(/^[a-z][a-z0-9_-]*$/, "a tracker name like jira or servicenow"),
        z.string().min(1),
      )
      .optional(),
  })
  // A signature decides what the ticket acknowledges: it must be the one of the drift the ticket
  // states, or an edit to it alone would acknowledge other drift unseen.
  .superRefine((ticket, ctx) => {
    const of = (item: {
      key: string;
      declared: unknown;
      live: unknown;
      latent?: { after: string; becomes: unknown } | undefined;
    }) =>
      itemSignatureOf(ticket.domain, {
        key: item.key,
        declared: item.declared as JsonValue,
        live: item.live as JsonValue,
        ...(item.latent && {
          latent: { after: item.latent.after, becomes: item.latent.becomes as JsonValue },
        }),
      });
    const stated = ticket.items ? setSignature(ticket.items.map(of)) : of(ticket);
    ticket.items?.forEach((item, i) => {
      if (item.signature !== of(item))
        ctx.addIssue({
          code: "custom",
          path: ["items", i, "signature"],
          message: `${item.signature} is not the signature of ${ticket.domain} "${item.key}" with the declared and live values (and latent part) beside it (${of(item)})`,
        });
    });
    if (ticket.signature !== stated)
      ctx.addIssue({
        code: "custom",
        path: ["signature"],
        message: `${ticket.signature} is not the signature of the ${ticket.items ? "items" : `${ticket.domain} drift of "${ticket.key}"`} this ticket states (${stated})`,
      });
  });
export type Ticket = z.infer<typeof Ticket>;
