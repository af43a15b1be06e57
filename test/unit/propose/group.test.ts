// Drift grouped into proposals: identical drift on several nodes, the items of a set domain, and
// every item of one cause.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { ticketCovers } from "../../../src/drift/drift.js";
import { Ticket } from "../../../src/manifest/tickets.js";
import { plan } from "../../../src/propose/plan.js";
import type { ExistingPull } from "../../../src/propose/pulls.js";
import type { Cause } from "../../../src/domains/cause.js";
import {
  asPulls,
  driftSignatureOf,
  input,
  kernel,
  listener,
  motd,
  opens,
  planOnTree,
  PREFIX,
  report,
  somaxconn,
  swappiness,
  syncookies,
  type Drift,
} from "./fixtures.js";

describe("group: one proposal per drift signature", () => {
  it("many unauthorized listeners on one node are one PR; the same set on two nodes too; its ticket acknowledges each", () => {
    const ports = Array.from({ length: 50 }, (_, i) => listener(`tcp/${9000 + i}`));
    const actions = opens(plan(input(report({ "web-01": ports, "web-02": ports }))));
    assert.equal(actions.length, 1);
    const [pr] = actions;
    assert.equal(pr!.kind, "ticket");
    assert.deepEqual(pr!.nodes, ["web-01", "web-02"]);
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

// Causes as cause detection writes them on report items: node-independent `group`, host-recorded
// time, who, and one line of evidence.
const sysctlSystem: Cause = {
  kind: "persisted",
  at: "2026-12-01T09:14:03Z",
  by: "root",
  evidence: "/etc/sysctl.d/99-tuning.conf changed at 2026-12-01 09:14 UTC (sysctl --system)",
  group: "persisted:/etc/sysctl.d/99-tuning.conf:5d41402abc4b2a76",
};
const upgrade: Cause = {
  kind: "package",
  at: "2026-12-01T03:12:07Z",
  by: "unattended-upgrades",
  evidence: "base-files 12.4+deb12u7 → 12.4+deb12u8, procps 2:4.0.2-3 → 2:4.0.2-3+b1",
  group: "package:2026-12-01T03:12:07Z:/usr/bin/unattended-upgrade",
};
const because = (cause: Cause, drift: Drift): Drift => ({
  ...drift,
  finding: { ...drift.finding, cause },
});

describe("group: one proposal per cause", () => {
  it("one `sysctl --system` resetting three keys on every web node is one PR, named by the cause, stable across runs", () => {
    const keys = [somaxconn(8192), swappiness(60), syncookies("0")].map((d) =>
      because(sysctlSystem, d),
    );
    const r = report({ "web-01": keys, "web-02": keys, "web-03": keys });
    const actions = plan(input(r));
    const [pr, ...rest] = opens(actions);
    assert.equal(rest.length, 0, actions.map((a) => a.type).join());
    assert.equal(actions.length, 1);
    assert.match(pr!.branch, /^quartermaster--accept--sysctl--persisted--c[0-9a-f]{16}$/);
    assert.match(pr!.title, /^Accept drift from one persisted file on web-01, web-02, web-03: /);
    assert.deepEqual(Object.keys(pr!.files).sort(), [
      `${PREFIX}/groups/web.yaml`,
      `${PREFIX}/nodes/web-01.yaml`,
      `${PREFIX}/nodes/web-02.yaml`,
      `${PREFIX}/nodes/web-03.yaml`,
    ]);
    const web = parse(pr!.files[`${PREFIX}/groups/web.yaml`]!).system.sysctl_parameters;
    assert.deepEqual([web["net.core.somaxconn"], web["vm.swappiness"]], [8192, 60]);
    assert.equal(pr!.body.match(/^\| `web-0\d` \|/gm)?.length, 9, "a row per node and key");
    // Re-planning with the PR it opened changes nothing; a node joining updates the same branch.
    assert.deepEqual(plan(input(r, asPulls(actions))), []);
    const fewer = report({ "web-01": keys, "web-02": keys });
    const [update] = plan(input(fewer, asPulls(actions)));
    assert.equal(update!.type, "update");
    assert.equal((update as Extract<typeof update, { type: "update" }>).branch, pr!.branch);
    // One of its keys accepted or set back on every node: the same branch still.
    const two = keys.slice(1);
    const [narrowed] = plan(
      input(report({ "web-01": two, "web-02": two, "web-03": two }), asPulls(actions)),
    );
    assert.equal(narrowed!.type, "update");
    assert.equal((narrowed as Extract<typeof narrowed, { type: "update" }>).branch, pr!.branch);
  });

  it("one package transaction across nodes and domains is one accept PR naming every domain, its ticketed part one ticket PR; one PR of the budget", () => {
    const changed = [
      because(upgrade, somaxconn(8192)),
      because(upgrade, motd("hello from base-files\n")),
      because(upgrade, kernel),
    ];
    const r = report({ "web-01": changed, "db-01": changed });
    const actions = plan(input(r));
    assert.deepEqual(
      actions.map((a) => [a.type, "kind" in a ? a.kind : ""]),
      [
        ["open", "accept"],
        ["open", "ticket"],
      ],
    );
    const [accept, ticket] = opens(actions);
    assert.deepEqual(accept!.marker.domains, ["files", "sysctl"]);
    assert.deepEqual(accept!.nodes, ["db-01", "web-01"]);
    assert.ok(accept!.labels.includes("drift:files") && accept!.labels.includes("drift:sysctl"));
    assert.match(accept!.title, /^Accept drift from one package transaction on db-01, web-01: /);
    assert.deepEqual(Object.keys(accept!.files).sort(), [
      `${PREFIX}/fleet.yaml`,
      `${PREFIX}/nodes/db-01.yaml`,
      `${PREFIX}/nodes/web-01.yaml`,
    ]);
    assert.match(ticket!.branch, /^quartermaster--ticket--kernel--package--c[0-9a-f]{16}$/);
    assert.equal(ticket!.marker.domain, "kernel");
    assert.deepEqual(plan(input(r, asPulls(actions))), [], "the markers agree with their branches");
    // The budget counts pull requests, not items.
    assert.deepEqual(
      plan(input(r, [], undefined, 1)).map((a) => a.type),
      ["open", "defer"],
    );
  });

  it("a node whose host text copies another's transaction but shows another change joins nothing: each its own PR, and closing one rejects only its node's items", () => {
    const r = report({
      "web-01": [because(upgrade, somaxconn(8192)), because(upgrade, swappiness(60))],
      "web-02": [because(upgrade, somaxconn(8192))],
    });
    const actions = opens(plan(input(r))).sort((a, b) =>
      a.nodes.join().localeCompare(b.nodes.join()),
    );
    assert.deepEqual(
      actions.map((a) => [a.kind, a.nodes]),
      [
        ["accept", ["web-01"]],
        ["accept", ["web-02"]],
      ],
      actions.map((a) => a.title).join("\n"),
    );
    const [own, copied] = actions;
    assert.notEqual(own!.branch, copied!.branch);
    const closed: ExistingPull = { ...asPulls([own!])[0]!, state: "closed" };
    const after = plan(input(r, [closed, ...asPulls([copied!], 2)]));
    const ticket = opens(after);
    assert.deepEqual(
      ticket.map((a) => [a.kind, a.nodes]),
      [["ticket", ["web-01"]]],
      "web-02's accept PR stays as it is",
    );
  });

  it("items whose cause is unknown or absent are grouped as before; one cause on nodes of different owners is one PR per owners", async () => {
    const unknown: Cause = { kind: "unknown", evidence: "nothing on the host recorded it" };
    const r = report({
      "web-01": [because(unknown, somaxconn(8192))],
      "web-02": [because(unknown, swappiness(60))],
    });
    assert.equal(opens(plan(input(r))).length, 2);
    const tree = {
      "fleet.yaml": "system:\n  sysctl_parameters:\n    net.ipv4.tcp_syncookies: 1\n",
      "groups/web.yaml": "owners: [acme/web-team]\n",
      "groups/db.yaml": "owners: [bob]\n",
      "nodes/web-01.yaml": "groups: [web]\n",
      "nodes/db-01.yaml": "groups: [db]\n",
    };
    const drift = [because(upgrade, syncookies("0"))];
    const prs = opens(await planOnTree(tree, { "web-01": drift, "db-01": drift }));
    assert.deepEqual(prs.map((p) => p.owners).sort(), [["acme/web-team"], ["bob"]]);
    assert.notEqual(prs[0]!.branch, prs[1]!.branch);
  });
});
