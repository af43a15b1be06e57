// The planner as data in, data out: manifests from a real tree, drift items made by the audit's
// own code from synthetic findings, existing PRs as GitHub would list them.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parse } from "yaml";
import type { Finding } from "../../../src/domains/domain.js";
import { domainByName } from "../../../src/domains/registry.js";
import { toDriftItems } from "../../../src/drift/drift.js";
import { loadFleet, type Fleet } from "../../../src/manifest/load.js";
import { Ticket } from "../../../src/manifest/tickets.js";
import { MAX_BODY_CHARS, parseMarker, pullBody } from "../../../src/propose/body.js";
import { waitingAfter } from "../../../src/propose/budget.js";
import { plan, type PlanInput } from "../../../src/propose/plan.js";
import type { Action } from "../../../src/propose/proposal.js";
import type { ExistingPull } from "../../../src/propose/pulls.js";
import { driftSignature, ticketCovers } from "../../../src/drift/drift.js";
import { Report, summarize, type DriftItem, type NodeResult } from "../../../src/report/schema.js";
import { outsideCode } from "../../support/markdown.js";
import { removeTree, writeTree } from "../../support/tree.js";

const TREE: Record<string, string> = {
  "fleet.yaml": "system:\n  sysctl_parameters:\n    net.ipv4.tcp_syncookies: 1\n",
  "groups/web.yaml": [
    "# Front-end web servers.",
    "system:",
    "  sysctl_parameters:",
    "    net.core.somaxconn: 4096   # tuned for nginx",
    "    vm.swappiness: 10",
    "networking:",
    "  listening_ports: [tcp/22, tcp/443]",
    "",
  ].join("\n"),
  "nodes/web-01.yaml": "groups: [web]\n",
  "nodes/web-02.yaml": "groups: [web]\n",
  "nodes/web-03.yaml": "# the third web node\ngroups: [web]\n",
  "nodes/db-01.yaml":
    'system:\n  kernel_version: 6.1.0-28-amd64\nfiles:\n  - { path: /etc/motd, contents: "hello\\n" }\n',
};
const PREFIX = "fleet-manifests";

let dir: string;
let fleet: Fleet;
let files: Map<string, string>;
before(async () => {
  dir = await writeTree(TREE);
  fleet = await loadFleet(dir, { displayPrefix: PREFIX });
  files = new Map(Object.entries(TREE).map(([name, text]) => [`${PREFIX}/${name}`, text]));
});
after(() => removeTree(dir));

type Drift = { domain: string; finding: Finding };
const somaxconn = (live: number): Drift => ({
  domain: "sysctl",
  finding: {
    key: "net.core.somaxconn",
    declared: "4096",
    live: String(live),
    path: ["system", "sysctl_parameters", "net.core.somaxconn"],
  },
});
const listener = (port: string): Drift => ({
  domain: "ports",
  finding: {
    key: port,
    declared: "closed",
    live: "listening",
    path: ["networking", "listening_ports"],
  },
});
const motd = (live: string): Drift => ({
  domain: "files",
  finding: {
    key: "/etc/motd",
    declared: "hello\n",
    live,
    path: ["files", "/etc/motd", "contents"],
    diff: `--- want /etc/motd\n+++ got /etc/motd\n@@ -1 +1 @@\n-hello\n+${live}`,
  },
});
const syncookies = (live: string): Drift => ({
  domain: "sysctl",
  finding: {
    key: "net.ipv4.tcp_syncookies",
    declared: "1",
    live,
    path: ["system", "sysctl_parameters", "net.ipv4.tcp_syncookies"],
  },
});
const kernel: Drift = {
  domain: "kernel",
  finding: {
    key: "kernel_version",
    declared: "6.1.0-28-amd64",
    live: "6.1.0-31-amd64",
    path: ["system", "kernel_version"],
  },
};

/** A report as `audit --format json` writes it, drift items made by the audit's own code. */
function report(
  drift: Record<string, Drift[]>,
  options: { unreachable?: string[]; fleetOverride?: Fleet } = {},
): Report {
  const source = options.fleetOverride ?? fleet;
  const ctx = {
    policy: source.settings.policy ?? {},
    waivers: [],
    tickets: source.tickets.map((t) => t.ticket),
    now: new Date(),
  };
  const nodes: NodeResult[] = source.nodes.map((node) => {
    if (options.unreachable?.includes(node.name))
      return {
        name: node.name,
        host: node.host,
        status: "unreachable",
        error: "connection refused",
        durationMs: 5,
        drift: [],
      };
    const items: DriftItem[] = (drift[node.name] ?? []).flatMap((d) =>
      toDriftItems(node, domainByName(d.domain)!, [d.finding], ctx),
    );
    return {
      name: node.name,
      host: node.host,
      status: items.some((i) => !i.acknowledged) ? "drift" : "clean",
      durationMs: 5,
      drift: items,
    };
  });
  return Report.parse({
    schemaVersion: 1,
    startedAt: "2026-03-02T06:00:00.000Z",
    finishedAt: "2026-03-02T06:01:00.000Z",
    manifestRevision: null,
    nodes,
    summary: summarize(nodes),
  });
}

function input(
  r: Report,
  pulls: ExistingPull[] = [],
  source: { fleet: Fleet; files: Map<string, string> } = { fleet, files },
  maxNewPrs?: number,
): PlanInput {
  return {
    report: r,
    nodes: source.fleet.nodes,
    tickets: source.fleet.tickets,
    files: source.files,
    manifestsPath: PREFIX,
    pulls,
    maxNewPrs,
  };
}

/** The PRs GitHub would list after the actions ran, numbered from `first`. */
function asPulls(actions: Action[], first = 1): ExistingPull[] {
  return actions.flatMap((a, i) =>
    a.type === "open"
      ? [
          {
            number: first + i,
            state: "open" as const,
            merged: false,
            branch: a.branch,
            title: a.title,
            body: a.body,
            labels: a.labels,
            marker: parseMarker(a.body, a.branch),
          },
        ]
      : [],
  );
}

const opens = (actions: Action[]) =>
  actions.filter((a): a is Extract<Action, { type: "open" }> => a.type === "open");
/** Lines of `after` that differ from `before`, position by position (edits here never add or remove lines). */
const changedLines = (before: string, after: string) => {
  const a = before.split("\n");
  const b = after.split("\n");
  return b.flatMap((line, i) => (line === a[i] ? [] : [[a[i], line]]));
};

describe("plan: from drift to pull requests", () => {
  it("identical drift on several nodes is one PR; every member of the group drifted alike, so the group file is edited", () => {
    const actions = plan(
      input(
        report({
          "web-01": [somaxconn(8192)],
          "web-02": [somaxconn(8192)],
          "web-03": [somaxconn(8192)],
        }),
      ),
    );
    assert.equal(actions.length, 1);
    const [pr] = opens(actions);
    assert.equal(pr!.kind, "accept");
    assert.deepEqual(pr!.marker.nodes, ["web-01", "web-02", "web-03"]);
    assert.deepEqual(Object.keys(pr!.files), [`${PREFIX}/groups/web.yaml`]);
    // Only the value changed: the comment keeps its column, every other line is byte-identical.
    assert.deepEqual(
      changedLines(TREE["groups/web.yaml"]!, pr!.files[`${PREFIX}/groups/web.yaml`]!),
      [
        [
          "    net.core.somaxconn: 4096   # tuned for nginx",
          "    net.core.somaxconn: 8192   # tuned for nginx",
        ],
      ],
    );
    assert.match(pr!.branch, /^quartermaster--accept--sysctl--net-core-somaxconn--[0-9a-f]{16}$/);
    assert.ok(
      pr!.labels.includes("quartermaster") &&
        pr!.labels.includes("drift:sysctl") &&
        pr!.labels.includes("severity:medium"),
    );
  });

  it("when only some members drifted, each drifted node gets an override in its own file", () => {
    const [pr, ...rest] = plan(
      input(report({ "web-01": [somaxconn(8192)], "web-03": [somaxconn(8192)] })),
    );
    assert.equal(rest.length, 0);
    assert.equal(pr!.type, "open");
    const edited = (pr as Extract<Action, { type: "open" }>).files;
    assert.deepEqual(Object.keys(edited).sort(), [
      `${PREFIX}/nodes/web-01.yaml`,
      `${PREFIX}/nodes/web-03.yaml`,
    ]);
    assert.equal(
      parse(edited[`${PREFIX}/nodes/web-03.yaml`]!).system.sysctl_parameters["net.core.somaxconn"],
      8192,
    );
    assert.ok(
      edited[`${PREFIX}/nodes/web-03.yaml`]!.startsWith("# the third web node\ngroups: [web]\n"),
      "the node file keeps what it had",
    );
  });

  it("different drift is a different PR; ports drift is a ticket by policy, with the seed's remediation", () => {
    const actions = opens(
      plan(
        input(
          report({
            "web-01": [somaxconn(8192), listener("tcp/8080")],
            "web-02": [somaxconn(1024)],
          }),
        ),
      ),
    );
    assert.equal(actions.length, 3);
    const ticketPr = actions.find((a) => a.kind === "ticket")!;
    const [file, text] = Object.entries(ticketPr.files)[0]!;
    assert.match(file, /^fleet-manifests\/remediations\/ports-tcp-8080-[0-9a-f]{16}\.yaml$/);
    const ticket = Ticket.parse(parse(text));
    assert.deepEqual(
      { ...ticket, signature: "-" },
      {
        id: file.replace(/^.*\/|\.yaml$/g, ""),
        status: "open",
        domain: "ports",
        key: "tcp/8080",
        declared: "closed",
        live: "listening",
        severity: "high",
        nodes: ["web-01"],
        remediation: domainByName("ports")!.remediation,
        detected: "2026-03-02T06:00:00.000Z",
        signature: "-",
        reason: "policy: ports drift is remediated on the host",
      },
    );
    assert.match(ticketPr.body, /Merging records a remediation ticket/);
  });

  it("a rejected accept PR becomes a ticket, and the accept PR is never reopened", () => {
    const r = report({ "web-01": [somaxconn(8192)] });
    const [first] = opens(plan(input(r)));
    const rejected: ExistingPull = { ...asPulls([first!])[0]!, state: "closed" };
    for (let run = 0; run < 3; run++) {
      const actions = plan(input(r, [rejected]));
      assert.deepEqual(
        actions.map((a) => a.type),
        ["open"],
      );
      const [ticket] = opens(actions);
      assert.equal(ticket!.kind, "ticket");
      assert.notEqual(ticket!.branch, first!.branch);
      assert.match(ticket!.body, /the accept PR #1 was closed without merging/);
    }
  });

  it("planning again with the PRs the first plan opened changes nothing", () => {
    const r = report({
      "web-01": [somaxconn(8192), listener("tcp/8080")],
      "web-02": [somaxconn(8192)],
      "db-01": [kernel],
    });
    const first = plan(input(r));
    assert.equal(first.length, 3);
    assert.deepEqual(plan(input(r, asPulls(first))), []);
    // A later run's report has a later start time: bodies and tickets keep the first detection.
    assert.deepEqual(
      plan(input({ ...r, startedAt: "2026-03-03T06:00:00.000Z" }, asPulls(first))),
      [],
    );
  });

  it("changed drift updates its PR: a node joins identical drift", () => {
    const pulls = asPulls(plan(input(report({ "web-01": [somaxconn(8192)] }))), 7);
    const actions = plan(
      input(report({ "web-01": [somaxconn(8192)], "web-02": [somaxconn(8192)] }), pulls),
    );
    assert.equal(actions.length, 1);
    const update = actions[0] as Extract<Action, { type: "update" }>;
    assert.equal(update.type, "update");
    assert.equal(update.number, 7);
    assert.equal(update.updateFiles, true);
    assert.deepEqual(update.marker.nodes, ["web-01", "web-02"]);
  });

  it("drift that disappeared closes its PR with a comment; drift on nodes not audited this run does not", () => {
    const pulls = asPulls(plan(input(report({ "web-01": [somaxconn(8192)] }))));
    const [close] = plan(input(report({}), pulls));
    assert.equal(close!.type, "close");
    assert.match(
      (close as Extract<Action, { type: "close" }>).comment,
      /no longer present on web-01/,
    );
    assert.deepEqual(plan(input(report({}, { unreachable: ["web-01"] }), pulls)), []);
  });

  it("a partial audit (--category) decides only about PRs of the domains it audited", () => {
    const pulls = asPulls(plan(input(report({ "web-01": [somaxconn(8192)] }))));
    assert.deepEqual(
      plan(input({ ...report({}), categories: ["files"] }, pulls)),
      [],
      "a files-only audit says nothing about sysctl",
    );
    const [close] = plan(input({ ...report({}), categories: ["sysctl"] }, pulls));
    assert.equal(close!.type, "close");
  });

  it("a PR with a human's commit is left alone, with one comment saying why", () => {
    const pulls = asPulls(plan(input(report({ "web-01": [somaxconn(8192)] }))));
    const touched = pulls.map((p) => ({ ...p, humanCommits: true }));
    const changed = report({ "web-01": [somaxconn(8192)], "web-02": [somaxconn(8192)] });
    const [leave] = plan(input(changed, touched));
    assert.equal(leave!.type, "leave");
    assert.match(
      (leave as Extract<Action, { type: "leave" }>).comment!,
      /someone other than Quartermaster pushed commits/,
    );
    const [again] = plan(
      input(
        changed,
        touched.map((p) => ({ ...p, leftAloneNotice: true })),
      ),
    );
    assert.deepEqual(again, {
      type: "leave",
      number: 1,
      reason: "someone other than Quartermaster pushed commits to its branch",
    });
    const [gone] = plan(input(report({}), touched));
    assert.equal(gone!.type, "leave", "vanished drift does not close a branch a human pushed to");
  });

  it("labels a failed run did not add are added, and nothing else is written", () => {
    const r = report({ "web-01": [somaxconn(8192)] });
    const pulls = asPulls(plan(input(r))).map((p) => ({
      ...p,
      labels: ["quartermaster", "needs-review"],
    }));
    const [update] = plan(input(r, pulls));
    assert.equal(update!.type, "update");
    assert.deepEqual((update as Extract<Action, { type: "update" }>).addLabels, [
      "drift:sysctl",
      "severity:medium",
    ]);
    assert.equal((update as Extract<Action, { type: "update" }>).updateFiles, false);
  });

  describe("tickets recorded in the repository", () => {
    let withTicket: { fleet: Fleet; files: Map<string, string> };
    let ticketDir: string;
    let ticketFile: string;
    before(async () => {
      const [ticketPr] = opens(plan(input(report({ "db-01": [kernel] }))));
      ticketFile = Object.keys(ticketPr!.files)[0]!;
      const tree = { ...TREE, [ticketFile.slice(PREFIX.length + 1)]: ticketPr!.files[ticketFile]! };
      ticketDir = await writeTree(tree);
      withTicket = {
        fleet: await loadFleet(ticketDir, { displayPrefix: PREFIX }),
        files: new Map(Object.entries(tree).map(([name, text]) => [`${PREFIX}/${name}`, text])),
      };
    });
    after(() => removeTree(ticketDir));

    it("while a merged ticket is open, its drift is acknowledged and gets no PR", () => {
      const r = report({ "db-01": [kernel] }, { fleetOverride: withTicket.fleet });
      assert.equal(r.nodes.find((n) => n.name === "db-01")!.drift[0]!.acknowledged, true);
      assert.deepEqual(plan(input(r, [], withTicket)), []);
    });

    it("when the drift is gone, resolving the ticket is proposed; not while a node of it is unaudited", () => {
      const [resolve] = opens(
        plan(input(report({}, { fleetOverride: withTicket.fleet }), [], withTicket)),
      );
      assert.equal(resolve!.kind, "resolve");
      assert.deepEqual(Object.keys(resolve!.files), [ticketFile]);
      const ticket = Ticket.parse(parse(resolve!.files[ticketFile]!));
      assert.equal(ticket.status, "resolved");
      assert.equal(ticket.resolved, "2026-03-02T06:00:00.000Z");
      assert.deepEqual(
        plan(
          input(
            report({}, { fleetOverride: withTicket.fleet, unreachable: ["db-01"] }),
            [],
            withTicket,
          ),
        ),
        [],
      );
    });

    it("drift seen again after its ticket was recorded is a new ticket with its own id", () => {
      const r = report({ "web-01": [kernel] }, { fleetOverride: withTicket.fleet });
      const [pr] = opens(plan(input(r, [], withTicket)));
      assert.ok(pr && !(ticketFile in pr.files));
      assert.match(Object.keys(pr.files)[0]!, /-2\.yaml$/);
    });
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
      nodes,
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
      parseMarker(body, `quartermaster--accept--sysctl--net-core-somaxconn--${"0".repeat(16)}`)
        ?.nodes.length,
      5000,
      "the marker keeps every node",
    );
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
});

describe("plan: pull requests reviewers can trust", () => {
  const forgedMarker = (marker: unknown) => `<!-- quartermaster-pr ${JSON.stringify(marker)} -->`;

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

  it("host text holding another PR's marker changes nothing about that PR, and re-planning is a no-op", () => {
    const honest = plan(input(report({ "web-01": [somaxconn(8192)] })));
    const [victim] = asPulls(honest);
    const hostile = `${forgedMarker({ ...victim!.marker, kind: "ticket" })}\n-->\n${forgedMarker(victim!.marker)}`;
    const r = report({ "web-01": [somaxconn(8192)], "db-01": [syncookies(hostile)] });
    const actions = plan(input(r, [victim!]));
    assert.deepEqual(
      actions.map((a) => a.type),
      ["open"],
      "only db-01's own PR",
    );
    const pulls = [victim!, ...asPulls(actions, 2)];
    assert.equal(
      pulls[1]!.marker!.nodes.join(),
      "db-01",
      "db-01's PR is recognised by its own marker",
    );
    assert.deepEqual(plan(input(r, pulls)), []);
    // The host's PR closed by a reviewer: a ticket for db-01's drift only; web-01's PR is untouched.
    const next = plan(input(r, [victim!, { ...pulls[1]!, state: "closed" }]));
    assert.deepEqual(
      next.map((a) => a.type === "open" && [a.kind, a.marker.nodes.join()]),
      [["ticket", "db-01"]],
    );
  });

  it("a closed PR is a rejection only when its branch is an accept branch", () => {
    const r = report({ "db-01": [kernel] });
    const [ticket] = asPulls(plan(input(r)));
    // A ticket PR whose body a host filled with an accept marker of its own signature, then closed.
    const forged = {
      ...ticket!,
      state: "closed" as const,
      body: `${ticket!.body}\n${forgedMarker({ ...ticket!.marker, kind: "accept" })}`,
    };
    forged.marker = parseMarker(forged.body, forged.branch);
    assert.equal(forged.marker, undefined);
    const actions = plan(input(r, [forged]));
    assert.ok(
      !actions.some((a) => a.type === "open" && a.replaces),
      "no ticket claims to replace a rejected accept PR",
    );
  });

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
    const items = report({ "web-01": ports }).nodes.find((n) => n.name === "web-01")!.drift;
    assert.ok(
      items.every((item) => ticketCovers(ticket, driftSignatureOf(item))),
      "every listener is acknowledged by the ticket",
    );
    // One more listener later is a new, separate proposal; a different set on another node is its own PR.
    assert.equal(
      opens(plan(input(report({ "web-01": ports, "web-02": ports.slice(0, 3) })))).length,
      2,
    );
  });

  it("at most N new PRs per run, the rest deferred and opened on the next run; updates are not limited", () => {
    const r = report({
      "web-01": [somaxconn(8192), listener("tcp/8080")],
      "web-02": [somaxconn(1024)],
      "db-01": [kernel, motd("bye\n")],
    });
    const first = plan(input(r, [], undefined, 2));
    assert.deepEqual(first.map((a) => a.type).sort(), ["defer", "defer", "defer", "open", "open"]);
    // Most severe first: three high-severity groups compete for the two slots, by branch order.
    assert.ok(opens(first).every((a) => a.labels.includes("severity:high")));
    assert.deepEqual(plan(input(r, [], undefined, 2)), first, "stable");
    const pulls = asPulls(first);
    const second = plan(input(r, pulls, undefined, 2));
    assert.deepEqual(second.map((a) => a.type).sort(), ["defer", "open", "open"]);
    const third = plan(input(r, [...pulls, ...asPulls(second, 10)], undefined, 2));
    assert.deepEqual(
      third.map((a) => a.type),
      ["open"],
    );
    const changed = report({
      "web-01": [somaxconn(8192), listener("tcp/8080")],
      "web-02": [somaxconn(1024)],
      "web-03": [somaxconn(8192)],
      "db-01": [kernel, motd("bye\n")],
    });
    const all = [...pulls, ...asPulls(second, 10), ...asPulls(third, 20)];
    assert.deepEqual(
      plan(input(changed, all, undefined, 0)).map((a) => a.type),
      ["update"],
      "an update with a budget of 0",
    );
  });

  it("deferred PRs keep their place: the one waiting longest opens first, ahead of newer, more severe drift", () => {
    const r = report({
      "web-01": [somaxconn(8192), listener("tcp/8080")],
      "web-02": [somaxconn(1024)],
      "db-01": [kernel, motd("bye\n")],
    });
    const first = plan(input(r, [], undefined, 1));
    const deferred = first.filter(
      (a): a is Extract<Action, { type: "defer" }> => a.type === "defer",
    );
    assert.ok(
      deferred.every((a) => a.since === r.startedAt),
      "first deferred now",
    );
    const waiting = waitingAfter(first);
    assert.deepEqual([...waiting.keys()].sort(), deferred.map((a) => a.branch).sort());
    // The least severe deferred PR has waited since an earlier run: it goes before every other.
    const lowest = [...deferred]
      .sort((a, b) => (a.title < b.title ? -1 : 1))
      .find((a) => a.branch.includes("--sysctl--"))!;
    const older = new Map([...waiting, [lowest.branch, "2026-01-01T00:00:00.000Z"]]);
    const next = plan({ ...input(r, asPulls(first), undefined, 1), waiting: older });
    assert.deepEqual(
      opens(next).map((a) => a.branch),
      [lowest.branch],
    );
    assert.equal(waitingAfter(next).get(lowest.branch), undefined, "opened: no longer waiting");
    for (const [branch, since] of waitingAfter(next))
      assert.equal(since, older.get(branch), "the others keep their time");
  });

  it("titles are one escaped line and short; bodies show host text only as code", () => {
    const hostile = [
      "@octocat look",
      "<img src=x onerror=alert(1)>",
      "[Approve in one click](https://evil.example)",
      "<!-- x -->",
      "nul\u0000 esc\u001b[31m",
      "::error::pwned",
      "``` ```` `",
      ...Array.from({ length: 300 }, (_, i) => `line ${i}`),
    ].join("\n");
    const [pr] = opens(plan(input(report({ "db-01": [motd(hostile)] }))));
    assert.doesNotMatch(pr!.title, /[\n\r\u0000\u001b]/);
    assert.ok(pr!.title.length <= 200);
    const live = outsideCode(pr!.body.replace(/<!-- quartermaster-pr .*$/s, ""));
    for (const bad of ["@octocat", "<img", "](https", "<!--", "::error", "\u0000", "\u001b"])
      assert.ok(!live.includes(bad), `${JSON.stringify(bad)} outside code`);
    assert.ok(pr!.body.includes("@octocat look"), "the text itself is shown, as code");
    assert.doesNotMatch(
      Object.values(pr!.files).join(""),
      /[\u0000\u001b]/,
      "the manifest edit escapes control characters",
    );
  });
});

function driftSignatureOf(item: DriftItem): string {
  return driftSignature(item.domain, item.key, item.declared as never, item.live as never);
}
