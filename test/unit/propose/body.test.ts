// The PR body a reviewer reads and the marker the bot finds its PRs by.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { MAX_BODY_CHARS, pullBody } from "../../../src/propose/body.js";
import {
  formatMarker,
  markerNodes,
  nodesDigest,
  parseMarker,
} from "../../../src/propose/marker.js";
import { plan } from "../../../src/propose/plan.js";
import type { DriftItem } from "../../../src/report/schema.js";
import { input, opens, planOnTree, report, somaxconn } from "./fixtures.js";

/** An accept PR's body for `group`, its marker naming `hosts` (by default the group's nodes). */
function acceptBody(
  group: Parameters<typeof pullBody>[0]["group"],
  file: string,
  detected: string,
  hosts: string[] = group.map((g) => g.node),
) {
  return pullBody({
    kind: "accept",
    group,
    marker: {
      v: 1,
      kind: "accept",
      signature: "0".repeat(16),
      ...markerNodes(hosts),
      detected,
      content: "c",
    },
    files: [file],
  });
}

describe("body: what reviewers read", () => {
  const forgedMarker = (marker: unknown) => `<!-- quartermaster-pr ${JSON.stringify(marker)} -->`;

  it("over five causes: the package change is shown before the file edits, whatever the items' order", () => {
    const item = report({ "web-01": [somaxconn(8192)] }).nodes.find((n) => n.name === "web-01")!
      .drift[0]!;
    const edits = Array.from({ length: 6 }, (_, i) => ({
      node: `web-0${i}`,
      item: {
        ...item,
        cause: {
          kind: "file-edit" as const,
          at: `2026-03-02T06:0${i}:00Z`,
          evidence: `/etc/app.conf modified, edit ${i}`,
        },
      },
    }));
    const upgrade = {
      node: "web-09",
      item: {
        ...item,
        cause: {
          kind: "package" as const,
          at: "2026-03-02T05:59:00Z",
          by: "apt-get (ops)",
          evidence: "app 1.0 → 1.1",
        },
      },
    };
    const body = acceptBody(
      [...edits, upgrade],
      "fleet-manifests/groups/web.yaml",
      "2026-03-02T06:00:00.000Z",
    );
    const shown = body.split("\n").filter((line) => / at 2026-03-02 \d\d:\d\d UTC: /.test(line));
    assert.match(
      shown[0] ?? "",
      /^Changed by `apt-get \(ops\)` at 2026-03-02 05:59 UTC: `app 1\.0 → 1\.1`\.$/,
    );
    assert.equal(shown.length, 5);
    assert.match(body, /^And 2 more causes\.$/m);
  });

  it("one apt run on eight hosts: one line per cause across the hosts, the replaced conffile first; one diff for eight hosts", () => {
    const item = report({ "web-01": [somaxconn(8192)] }).nodes.find((n) => n.name === "web-01")!
      .drift[0]!;
    const hosts = Array.from({ length: 8 }, (_, i) => `db-0${i + 1}`);
    const group = hosts.flatMap((node, i) => {
      const at = `2026-12-01T03:1${i}:00Z`;
      const by = "apt-get (alice)";
      const transaction =
        "package: postgresql-16 16.4-1 → 16.6-1, postgresql-client-16 16.4-1 → 16.6-1";
      return [
        ...["postgresql-16", "postgresql-client-16"].map((name) => ({
          node,
          item: {
            ...item,
            key: name,
            cause: {
              kind: "package" as const,
              at,
              by,
              evidence: `${name} 16.4-1 → 16.6-1`,
              group: transaction,
            },
          },
        })),
        {
          node,
          item: {
            ...item,
            key: "/etc/postgresql/db.conf",
            diff: "--- want\n+++ got\n@@ -1 +1 @@\n-max_connections = 100\n+max_connections = 200\n",
            cause: {
              kind: "package-file" as const,
              at,
              by,
              evidence: "/etc/postgresql/db.conf replaced by postgresql-16 16.4-1 → 16.6-1",
              group: transaction,
            },
          },
        },
      ];
    });
    const body = acceptBody(
      group,
      "fleet-manifests/groups/db.yaml",
      "2026-12-01T04:00:00.000Z",
      hosts,
    );
    const causes = body.split("\n").filter((line) => /^(Replaced|Changed) by /.test(line));
    assert.deepEqual(causes, [
      "Replaced by `apt-get (alice)` between 2026-12-01 03:10 UTC and 2026-12-01 03:17 UTC: `/etc/postgresql/db.conf replaced by postgresql-16 16.4-1 → 16.6-1`, `postgresql-16 16.4-1 → 16.6-1`, `postgresql-client-16 16.4-1 → 16.6-1` (as each of `db-01`, `db-02`, `db-03`, `db-04`, `db-05` and 3 more recorded it).",
    ]);
    assert.equal(body.split("max_connections = 200").length - 1, 1, body);
    assert.match(
      body,
      /<summary><code>db-01<\/code>, <code>db-02<\/code>, .* and 3 more <code>\/etc\/postgresql\/db\.conf<\/code>: -want \+got<\/summary>/,
    );
  });

  it("a PR carrying items of several domains names each in its head line, as its title does, with the worst severity", () => {
    const item = report({ "web-01": [somaxconn(8192)] }).nodes.find((n) => n.name === "web-01")!
      .drift[0]!;
    const hosts = ["db-01", "db-02"];
    const group = hosts.flatMap((node) => [
      {
        node,
        item: { ...item, domain: "packages" as const, key: "acme-db", severity: "high" as const },
      },
      {
        node,
        item: {
          ...item,
          domain: "files" as const,
          key: "/etc/default/acme-db",
          severity: "medium" as const,
        },
      },
    ]);
    const body = acceptBody(
      group,
      "fleet-manifests/groups/db.yaml",
      "2026-12-01T04:00:00.000Z",
      hosts,
    );
    assert.equal(
      body.split("\n")[0],
      "Quartermaster found **high** files and packages drift on 2 nodes: 2 items differ, listed below.",
    );
  });

  it("a latent ticket: its sentence, the table, the marker, one blank line between paragraphs", () => {
    const item = report({ "web-01": [somaxconn(4096)] }).nodes.find((n) => n.name === "web-01")!
      .drift[0]!;
    const latent = {
      ...item,
      live: item.declared,
      latent: {
        after: "reboot" as const,
        becomes: "8192",
        because: "/etc/sysctl.d/99-tune.conf:2",
      },
    };
    const marker = {
      v: 1 as const,
      kind: "ticket" as const,
      signature: "0".repeat(16),
      ...markerNodes(["web-01"]),
      detected: "2026-12-01T04:00:00.000Z",
      content: "c",
    };
    const MEANING_TICKET = [
      "**Merging records a remediation ticket**: the operator commits to bring the hosts back to the declared state. While the ticket is open, this drift is reported as acknowledged and opens no new PR. When the drift is gone, Quartermaster proposes resolving the ticket.",
      "",
      "**Closing** without merging leaves the drift unacknowledged: it stays in every audit report, and this ticket is not proposed again.",
    ];
    const body = pullBody({
      kind: "ticket",
      group: [{ node: "web-01", item: latent }],
      marker,
      files: ["fleet-manifests/remediations/web-01/t.yaml"],
      reason: { text: "policy: sysctl drift is remediated on the host" },
    });
    assert.ok(!body.includes("\n\n\n"), JSON.stringify(body));
    assert.deepEqual(body.split("\n"), [
      "Quartermaster found **medium** latent sysctl drift on 1 node: The next boot sets `net.core.somaxconn` to `8192`, as `/etc/sysctl.d/99-tune.conf:2` says: make that file set the declared value, or declare its value, before rebooting.",
      "",
      "This is a ticket because policy: sysctl drift is remediated on the host.",
      "",
      ...MEANING_TICKET,
      "",
      "Files changed: `fleet-manifests/remediations/web-01/t.yaml`",
      "",
      "Remediation: Make the sysctl.d (or sysctl.conf) line the next boot applies set the declared value, or remove it, before rebooting; or declare the value it sets.",
      "",
      "| node | key | declared | live | declared at |",
      "|---|---|---|---|---|",
      "| `web-01` | `net.core.somaxconn` | `4096` | `4096` (`reboot pending, becomes 8192`) | `fleet-manifests/groups/web.yaml:4` |",
      "",
      formatMarker(marker),
    ]);
  });

  it("a cause several nodes recorded names each of them: one host can copy another's record", () => {
    const item = report({ "web-01": [somaxconn(8192)] }).nodes.find((n) => n.name === "web-01")!
      .drift[0]!;
    const cause = {
      kind: "package" as const,
      at: "2026-03-02T05:59:00Z",
      by: "apt-get (ops)",
      evidence: "app 1.0 → 1.1",
      group: "package: app 1.0 → 1.1",
    };
    const group = ["web-01", "db-01"].map((node) => ({ node, item: { ...item, cause } }));
    const body = acceptBody(group, "fleet-manifests/groups/web.yaml", "2026-03-02T06:00:00.000Z");
    assert.match(
      body,
      /^Changed by `apt-get \(ops\)` at 2026-03-02 05:59 UTC: `app 1\.0 → 1\.1` \(as each of `db-01`, `web-01` recorded it\)\.$/m,
    );
  });

  it("5,000 drifted nodes: the body stays under GitHub's limit and points to the report", () => {
    const nodes = Array.from({ length: 5000 }, (_, i) => `web-${String(i).padStart(4, "0")}`);
    const item = report({ "web-01": [somaxconn(8192)] }).nodes.find((n) => n.name === "web-01")!
      .drift[0]!;
    const group = nodes.map((node) => ({
      node,
      item: { ...item, diff: `--- want\n+++ got\n@@ -1 +1 @@\n-4096\n+8192 ${node}\n` },
    }));
    const marker = {
      v: 1 as const,
      kind: "accept" as const,
      signature: "0".repeat(16),
      ...markerNodes(nodes),
      detected: "2026-03-02T06:00:00.000Z",
      content: "c",
    };
    const body = pullBody({
      kind: "accept",
      group,
      marker,
      files: ["fleet-manifests/groups/web.yaml"],
    });
    assert.ok(body.length <= MAX_BODY_CHARS, `${body.length} characters`);
    assert.match(
      body,
      /more rows and \d+ diffs are left out .* the audit report artifact has them all/,
    );
    assert.deepEqual(
      parseMarker(body, `quartermaster--accept--sysctl--net-core-somaxconn--${"0".repeat(16)}`),
      { ...marker, nodeCount: 5000, nodeDigest: nodesDigest(nodes) },
      "the marker names every node by count and digest",
    );
  });

  it('a ports item in the allow-list\'s words: an unauthorized listener is not "declared closed"', () => {
    const item = (key: string, declared: string, live: string): DriftItem => ({
      domain: "ports",
      key,
      declared,
      live,
      severity: "high",
      fingerprint: "f".repeat(16),
      source: { file: "fleet-manifests/nodes/web-01.yaml", line: 2 },
      remediation: "r",
      onDrift: "ticket",
      path: ["networking", "listening_ports"],
    });
    const marker = {
      v: 1 as const,
      kind: "accept" as const,
      signature: "0".repeat(16),
      nodes: ["web-01"],
      detected: "2026-03-02T06:00:00.000Z",
      content: "c",
    };
    const body = (i: DriftItem) =>
      pullBody({ kind: "accept", group: [{ node: "web-01", item: i }], marker, files: [] });
    const listener = body(item("tcp/9999", "closed", "listening"));
    assert.match(
      listener,
      /drift on 1 node: `tcp\/9999` listens on the host, and networking\.listening_ports \(the allow-list\) does not allow it\./,
    );
    assert.doesNotMatch(listener, /is declared `closed`/);
    // The table too: nothing declares the port closed.
    assert.match(listener, /\| `tcp\/9999` \| `not in the allow-list` \| `listening` \|/);
    assert.doesNotMatch(listener, /`closed`/);
    assert.match(
      body(item("tcp/443", "listening", "closed")),
      /`tcp\/443` is in networking\.listening_ports, which expects it to listen, but nothing listens on it on the host\./,
    );
  });

  it("a rule added at runtime: the title and the table say where it is, never the rule twice", async () => {
    const rule = "tcp dport 8080 accept";
    const [ticket, ...more] = opens(
      await planOnTree(
        {
          "nodes/edge-01.yaml": [
            "networking:",
            "  firewall:",
            "    inet filter:",
            "      chains:",
            "        input:",
            "          rules:",
            "            - tcp dport 22 accept",
            "",
          ].join("\n"),
        },
        {
          "edge-01": [
            {
              domain: "firewall",
              finding: {
                key: `inet filter input: ${rule}`,
                declared: null,
                live: rule,
                path: ["networking", "firewall", "inet filter", "chains", "input", "rules", 1],
              },
            },
          ],
        },
      ),
    );
    assert.equal(more.length, 0);
    assert.equal(
      ticket!.title,
      `Remediate firewall drift on edge-01: inet filter input: ${rule}: not in networking.firewall → in the running ruleset`,
    );
    assert.match(
      ticket!.body,
      /^\| `edge-01` \| `inet filter input: tcp dport 8080 accept` \| `not in networking\.firewall` \| `in the running ruleset` \|/m,
    );
  });

  it("the marker cannot be closed early, and the remediation is the domain's, not the report's", () => {
    const item = report({ "web-01": [somaxconn(8192)] }).nodes.find((n) => n.name === "web-01")!
      .drift[0]!;
    const marker = {
      v: 1 as const,
      kind: "accept" as const,
      signature: "0".repeat(16),
      nodes: ["web-01"],
      detected: "2026 --> @octocat [approve](https://evil.example) <!--",
      content: "c",
    };
    const body = pullBody({
      kind: "accept",
      group: [{ node: "web-01", item: { ...item, remediation: "<!-- hidden @octocat" } }],
      marker,
      files: ["fleet-manifests/groups/web.yaml"],
    });
    const [markerLine] = body.split("\n").slice(-1);
    assert.equal(
      markerLine!.indexOf("-->"),
      markerLine!.length - 3,
      "the marker ends only at its end",
    );
    // Inside the hidden comment, a mention notifies no one and shows nowhere.
    assert.doesNotMatch(body.slice(0, -markerLine!.length), /@octocat|<!-- hidden/);
    // An accept PR changes the manifest, not the hosts: no remediation. A ticket has the domain's.
    assert.doesNotMatch(body, /Remediation/);
    const ticket = pullBody({
      kind: "ticket",
      group: [{ node: "web-01", item: { ...item, remediation: "<!-- hidden @octocat" } }],
      marker: { ...marker, kind: "ticket" },
      files: ["fleet-manifests/remediations/web-01.yaml"],
    });
    assert.doesNotMatch(ticket, /<!-- hidden/);
    assert.match(ticket, /^Remediation: Apply the manifest baseline with `sysctl -p`/m);
    const branch = `quartermaster--accept--sysctl--net-core-somaxconn--${"0".repeat(16)}`;
    assert.equal(parseMarker(body, branch)?.detected, marker.detected);
  });

  it("secrets never reach a body: no diff for a file compared by hash, even if one were present", () => {
    const secret: DriftItem = {
      ...report({ "web-01": [somaxconn(8192)] }).nodes.find((n) => n.name === "web-01")!.drift[0]!,
      domain: "files",
      key: "/etc/app/secret.env",
      declared: "a".repeat(64),
      live: "b".repeat(64),
      path: ["files", "/etc/app/secret.env", "sha256"],
      diff: "-PASSWORD=hunter2\n+PASSWORD=swordfish\n",
    };
    const marker = {
      v: 1 as const,
      kind: "accept" as const,
      signature: "0".repeat(16),
      nodes: ["web-01"],
      detected: "x",
      content: "c",
    };
    const body = pullBody({
      kind: "accept",
      group: [{ node: "web-01", item: secret }],
      marker,
      files: [],
    });
    assert.doesNotMatch(body, /hunter2|swordfish|```diff/);
  });

  it("only the marker at the very end of the body counts, and only when its branch agrees", () => {
    const [pr] = opens(plan(input(report({ "web-01": [somaxconn(8192)] }))));
    const marker = parseMarker(pr!.body, pr!.branch)!;
    assert.equal(marker.signature, pr!.marker.signature);
    const forged = { ...marker, signature: "f".repeat(16), nodes: ["db-01"] };
    assert.deepEqual(
      parseMarker(`${forgedMarker(forged)}\n\n${pr!.body}`, pr!.branch),
      marker,
      "an earlier marker is text",
    );
    assert.equal(
      parseMarker(`${pr!.body}\n\nsomething after`, pr!.branch),
      undefined,
      "a marker not at the end is none",
    );
    assert.equal(
      parseMarker(
        `${pr!.body.replace(/<!-- quartermaster-pr .*$/s, "")}${forgedMarker(forged)}`,
        pr!.branch,
      ),
      undefined,
      "a marker naming another signature than its branch",
    );
    assert.equal(
      parseMarker(pr!.body, pr!.branch.replace("--accept--", "--ticket--")),
      undefined,
      "an accept marker on a ticket branch",
    );
  });

  it("any input, thousands of nodes with long names included, makes a body under the limit whose marker reads back", () => {
    const item = report({ "web-01": [somaxconn(8192)] }).nodes.find((n) => n.name === "web-01")!
      .drift[0]!;
    // Up to `max` characters of a short sample repeated: markup, backticks, comment openers and
    // wide characters at any length (fast-check's own strings stay short).
    const text = (max: number) =>
      fc
        .tuple(fc.integer({ min: 0, max }), fc.string({ unit: "grapheme", minLength: 1 }))
        .map(([n, sample]) => sample.repeat(Math.ceil(n / sample.length)).slice(0, n));
    const branch = `quartermaster--accept--sysctl--net-core-somaxconn--${"0".repeat(16)}`;
    fc.assert(
      fc.property(
        fc.record({
          nodes: fc.integer({ min: 0, max: 12_000 }),
          nameChars: fc.integer({ min: 1, max: 255 }),
          items: fc.array(
            fc.record({
              key: text(400),
              live: text(400),
              detail: text(2_000),
              diff: text(30_000),
              lapsed: text(500),
            }),
            { minLength: 1, maxLength: 4, size: "max" },
          ),
          files: fc.integer({ min: 0, max: 12_000 }),
          notes: fc.array(text(5_000), { maxLength: 40, size: "max" }),
          reason: text(5_000),
        }),
        (input) => {
          const names = Array.from({ length: input.nodes }, (_, i) =>
            `${i}-`.padEnd(input.nameChars, "n"),
          );
          const items = input.items.map((it, i) => ({
            ...item,
            key: `${i}${it.key}`,
            live: it.live,
            detail: it.detail,
            diff: it.diff,
            lapsed: it.lapsed,
          }));
          const marker = {
            v: 1 as const,
            kind: "accept" as const,
            signature: "0".repeat(16),
            ...markerNodes(names),
            detected: "2026-03-02T06:00:00.000Z",
            content: "c".repeat(16),
          };
          const body = pullBody({
            kind: "accept",
            group: names.flatMap((node) => items.map((it) => ({ node, item: it }))),
            marker,
            files: Array.from(
              { length: input.files },
              (_, i) => `fleet-manifests/nodes/${names[i] ?? i}.yaml`,
            ),
            reason: { text: "policy", detail: input.reason },
            notes: input.notes,
          });
          assert.ok(body.length <= MAX_BODY_CHARS, `${body.length} characters`);
          assert.deepEqual(parseMarker(body, branch), marker);
          assert.match(body, /^Files changed: /m, "the files, however many, are named or counted");
        },
      ),
      { numRuns: 40 },
    );
  });
});
