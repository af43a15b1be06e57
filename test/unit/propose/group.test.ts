// Drift grouped into proposals: identical drift on several nodes, and the items of a set domain.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { ticketCovers } from "../../../src/drift/drift.js";
import { Ticket } from "../../../src/manifest/tickets.js";
import { plan } from "../../../src/propose/plan.js";
import { driftSignatureOf, input, listener, opens, report } from "./fixtures.js";

describe("group: one proposal per drift signature", () => {
  it("many unauthorized listeners on one node are one PR; the same set on two nodes too; its ticket acknowledges each", () => {
    const ports = Array.from({ length: 50 }, (_, i) => listener(`tcp/${9000 + i}`));
    const actions = opens(plan(input(report({ "web-01": ports, "web-02": ports }))));
    assert.equal(actions.length, 1);
    const [pr] = actions;
    assert.equal(pr!.kind, "ticket");
    assert.deepEqual(pr!.marker.nodes, ["web-01", "web-02"]);
    assert.match(pr!.title, /^Remediate ports drift on web-01, web-02: tcp\/9000 and 49 more$/);
    const ticket = Ticket.parse(parse(Object.values(pr!.files)[0]!));
    assert.equal(ticket.items!.length, 50);
    // An item's signature swapped for another's, or the set's for one item's, is refused.
    const [first, second] = ticket.items!;
    const swapped = { ...ticket, items: [{ ...first!, signature: second!.signature }, second!] };
    assert.deepEqual(
      Ticket.safeParse(swapped).error?.issues.map((i) => i.path.join(".")),
      ["items.0.signature", "signature"],
    );
    assert.equal(Ticket.safeParse({ ...ticket, signature: first!.signature }).success, false);
    const items = report({ "web-01": ports }).nodes.find((n) => n.name === "web-01")!.drift;
    assert.ok(
      items.every((item) => ticketCovers(ticket, driftSignatureOf(item))),
      "every listener is acknowledged by the ticket",
    );
    // One more listener later is a new, separate proposal; a different set on another node is its
    // own PR.
    assert.equal(
      opens(plan(input(report({ "web-01": ports, "web-02": ports.slice(0, 3) })))).length,
      2,
    );
  });
});
