import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MAX_BODY_CHARS } from "../../../src/propose/body.js";
import {
  dashboardBody,
  renderDashboard,
  tickedBranches,
  type DashboardInput,
} from "../../../src/propose/dashboard.js";
import type { Ticket } from "../../../src/manifest/tickets.js";
import type { DriftItem, NodeResult } from "../../../src/report/schema.js";
import { summarize } from "../../../src/report/tally.js";

const NOW = "2026-12-01T10:00:00.000Z";

function input(nodes: NodeResult[], extra: Partial<DashboardInput> = {}): DashboardInput {
  return {
    report: { startedAt: NOW, manifestRevision: "a".repeat(40), summary: summarize(nodes), nodes },
    pulls: [],
    deferred: [],
    tickets: [],
    waivers: [],
    ...extra,
  };
}
const dark = (name: string, since: string, runs: number): NodeResult => ({
  name,
  host: name,
  status: "unreachable",
  durationMs: 1,
  drift: [],
  unaudited: { since, runs },
});

const DOMAIN_OF = {
  reboot: "sysctl",
  restart: "systemd",
  "daemon-reload": "systemd",
  expiry: "certificates",
} as const;
const latentItem = (key: string, after: keyof typeof DOMAIN_OF, because: string): DriftItem => ({
  domain: DOMAIN_OF[after],
  key,
  declared: "0",
  live: "0",
  severity: "medium",
  fingerprint: key,
  source: { file: "fleet.yaml", line: 1 },
  remediation: "",
  onDrift: "ticket",
  path: [key],
  latent: { after, becomes: "1", because },
  latentPolicy: "ticket",
});

describe("dashboard", () => {
  it("lists nodes pending a reboot and nodes pending a restart or daemon-reload, reasons as code", () => {
    const node = (name: string, drift: DriftItem[]): NodeResult => ({
      name,
      host: name,
      status: "clean",
      durationMs: 1,
      drift,
    });
    const body = renderDashboard(
      input([
        node("web-01", [latentItem("fs.protected_fifos", "reboot", "/usr/lib/sysctl.d/x.conf:7")]),
        node("app-01", [
          latentItem("app.service:loaded", "daemon-reload", "NeedDaemonReload=yes"),
          latentItem("app.service:running", "restart", "`evil` <!--"),
        ]),
        node("db-01", []),
      ]),
    );
    assert.match(
      body,
      /### Pending reboot: latent drift a reboot sets off \(1\)\n\n- `web-01`: the next boot sets `fs\.protected_fifos` to `1`, as `\/usr\/lib\/sysctl\.d\/x\.conf:7` says: [^\n]*\n/,
    );
    assert.match(
      body,
      /### Pending restart: latent drift a restart or daemon-reload sets off \(1\)\n\n- `app-01`: the next daemon-reload loads `app\.service` from its changed files \(`NeedDaemonReload=yes`\) \(and 1 item more\)\n/,
    );
    assert.ok(!body.includes("db-01"), body);
    assert.ok(!renderDashboard(input([node("db-01", [])])).includes("Pending"));
  });

  it("lists nodes whose certificates expire under their bound before the next audit", () => {
    const because =
      "expires in 35 days, on 2027-01-16T08:00:00Z: under the 30d declared before the next audit (2026-12-08T10:00:00Z)";
    const body = renderDashboard(
      input([
        {
          name: "web-01",
          host: "web-01",
          status: "clean",
          durationMs: 1,
          drift: [latentItem("/etc/tls/web.pem", "expiry", because)],
        },
      ]),
    );
    assert.match(
      body,
      /### Expiring before the next audit: latent drift the days to it set off \(1\)\n\n- `web-01`: `\/etc\/tls\/web\.pem` expires in 35 days \(`2027-01-16T08:00:00Z`\): under the 30d declared before the next audit/,
    );
    assert.ok(!body.includes("Pending"), body);
  });

  it("lists unaudited nodes longest dark first, with since and runs, names only as code", () => {
    const body = renderDashboard(
      input([
        dark("web-03", "2026-11-30T10:00:00.000Z", 2),
        dark("evil`@team <!--", "2026-11-29T10:00:00.000Z", 5),
        { name: "db-01", host: "db-01", status: "clean", durationMs: 1, drift: [] },
      ]),
    );
    assert.match(body, /\*\*Fleet\*\*: 3 nodes: 1 clean, 0 drift, 2 unreachable/);
    const evil = body.indexOf("evil");
    const web = body.indexOf(
      "`web-03`: unreachable, unaudited since 2026-11-30T10:00:00.000Z, 2 runs",
    );
    assert.ok(evil > 0 && web > evil, body);
    // In a code span: no @mention pings, and no comment hides what follows.
    assert.ok(body.includes("- ``evil`@team <\\x21--``: unreachable, unaudited since"), body);
  });

  it("stays under GitHub's body limit on a large fleet, worst first and the rest counted", () => {
    const nodes = Array.from({ length: 20_000 }, (_, i) =>
      dark(`node-${String(i).padStart(5, "0")}-${"x".repeat(200)}`, NOW, 1),
    );
    const body = dashboardBody(renderDashboard(input(nodes)), { at: NOW });
    assert.ok(body.length <= MAX_BODY_CHARS, String(body.length));
    assert.match(body, /### Nodes not audited \(20000\)/);
    assert.match(body, /…and \d+ more/);
  });

  it("offers deferred pull requests as boxes, and reads back the ticked ones", () => {
    const content = renderDashboard(
      input([], {
        deferred: [
          {
            branch: "quartermaster--accept--sysctl--aa",
            title: "Accept vm.swappiness",
            since: NOW,
          },
          { branch: "quartermaster--ticket--kernel--bb", title: "Ticket kernel", since: NOW },
        ],
      }),
    );
    assert.deepEqual([...tickedBranches(content)], []);
    const ticked = content.replace("- [ ] `Ticket kernel`", "- [x] `Ticket kernel`");
    assert.deepEqual([...tickedBranches(ticked)], ["quartermaster--ticket--kernel--bb"]);
  });

  it("lists tickets past due and waivers expired or expiring within 14 days", () => {
    const ticket = {
      id: "sysctl-vm-swappiness-1",
      status: "open",
      domain: "sysctl",
      key: "vm.swappiness",
      nodes: ["db-01"],
      due: "2026-11-20",
    } as unknown as Ticket;
    const body = renderDashboard(
      input([], {
        tickets: [{ ticket, file: "fleet-manifests/remediations/db/x.yaml" }],
        waivers: [
          { node: "*", domain: "sysctl", key: "a", reason: "old", expires: "2026-11-30" },
          { node: "*", domain: "sysctl", key: "b", reason: "soon", expires: "2026-12-10" },
          { node: "*", domain: "sysctl", key: "c", reason: "later", expires: "2027-06-01" },
        ],
      }),
    );
    assert.match(
      body,
      /`sysctl-vm-swappiness-1` \(sysctl `vm.swappiness` on 1 node\), due `2026-11-20`/,
    );
    assert.match(body, /- expired `2026-11-30`.*`old`/);
    assert.match(body, /- expires `2026-12-10`.*`soon`/);
    assert.ok(!body.includes("later"));
  });

  it("lists open pull requests oldest first, with the day each was opened", () => {
    const body = renderDashboard(
      input([], {
        pulls: [
          { number: 7, title: "Accept `x` | y", createdAt: "2026-11-20T09:00:00Z" },
          { number: 3, title: "Ticket kernel", createdAt: "2026-10-01T09:00:00Z" },
        ],
      }),
    );
    assert.match(
      body,
      /### Open pull requests, oldest first \(2\)\n\n\| PR \| title \| opened \|\n\|---\|---\|---\|\n\| #3 \| `Ticket kernel` \| 2026-10-01 \|\n\| #7 \| ``Accept `x` \\\| y`` \| 2026-11-20 \|/,
    );
  });
});
