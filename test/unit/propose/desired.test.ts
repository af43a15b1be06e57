// The PRs drift calls for: accept PRs editing the manifest, ticket PRs, resolve PRs.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parse } from "yaml";
import { domainByName } from "../../../src/domains/registry.js";
import { loadFleet, type Fleet } from "../../../src/manifest/load.js";
import { Ticket } from "../../../src/manifest/tickets.js";
import { parseMarker } from "../../../src/propose/marker.js";
import { ManifestEditError } from "../../../src/errors.js";
import { plan } from "../../../src/propose/plan.js";
import type { Action } from "../../../src/propose/proposal.js";
import type { ExistingPull } from "../../../src/propose/pulls.js";
import { outsideCode } from "../../support/markdown.js";
import { removeTree, writeTree } from "../../support/tree.js";
import {
  asPulls,
  changedLines,
  input,
  kernel,
  latentKernel,
  listener,
  motd,
  opens,
  planOnTree,
  PREFIX,
  report,
  somaxconn,
  syncookies,
  TREE,
} from "./fixtures.js";

describe("desired: from drift to pull requests", () => {
  const forgedMarker = (marker: unknown) => `<!-- quartermaster-pr ${JSON.stringify(marker)} -->`;

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
    assert.deepEqual(pr!.nodes, ["web-01", "web-02", "web-03"]);
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

  it("a dark member never holds an accept back: the audited members all drifted alike, so the group file is edited in the same run and the dark one keeps the old value in its own file", () => {
    const drifted = { "web-01": [somaxconn(8192)], "web-02": [somaxconn(8192)] };
    const dark = [report(drifted, { unreachable: ["web-03"] }), report(drifted)];
    // A node missing from the report (another shard, --nodes) is not audited either.
    dark[1]!.nodes = dark[1]!.nodes.filter((n) => n.name !== "web-03");
    for (const run of dark) {
      const [pr, ...rest] = plan(input(run));
      assert.equal(rest.length, 0);
      assert.equal(pr!.type, "open");
      assert.deepEqual(Object.keys((pr as Extract<Action, { type: "open" }>).files).sort(), [
        `${PREFIX}/groups/web.yaml`,
        `${PREFIX}/nodes/web-03.yaml`,
      ]);
    }
  });

  it("identical drift on nodes of different owners is one PR per owners, each asking them to review", async () => {
    const tree = {
      "fleet.yaml": "system:\n  sysctl_parameters:\n    net.ipv4.tcp_syncookies: 1\n",
      "groups/web.yaml": "owners: [acme/web-team, alice]\n",
      "groups/db.yaml": "owners: [bob]\n",
      "nodes/web-01.yaml": "groups: [web]\n",
      "nodes/db-01.yaml": "groups: [db]\n",
    };
    const drift = { "web-01": [syncookies("0")], "db-01": [syncookies("0")] };
    const prs = opens(await planOnTree(tree, drift)).sort((a, b) =>
      a.nodes[0]! < b.nodes[0]! ? -1 : 1,
    );
    assert.deepEqual(
      prs.map((p) => [p.nodes, p.owners, p.labels.filter((l) => l.startsWith("owner:"))]),
      [
        [["db-01"], ["bob"], ["owner:bob"]],
        [["web-01"], ["acme/web-team", "alice"], ["owner:acme/web-team", "owner:alice"]],
      ],
    );
    assert.notEqual(prs[0]!.branch, prs[1]!.branch);
    // Each writes its own node's override: fleet.yaml's value is shared with the other owner's node.
    assert.deepEqual(
      prs
        .map((p) => Object.keys(p.files))
        .flat()
        .sort(),
      [`${PREFIX}/nodes/db-01.yaml`, `${PREFIX}/nodes/web-01.yaml`],
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
    assert.match(file, /^fleet-manifests\/remediations\/web\/ports-tcp-8080-[0-9a-f]{16}\.yaml$/);
    const ticket = Ticket.parse(parse(text!));
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

  it("closing an accept PR rejects exactly its items (node, key, live value): the same drift on another node, and another live value, are accepted", () => {
    const [first] = opens(plan(input(report({ "web-01": [somaxconn(8192)] }))));
    const rejected: ExistingPull = { ...asPulls([first!])[0]!, state: "closed" };
    const both = plan(
      input(report({ "web-01": [somaxconn(8192)], "web-02": [somaxconn(8192)] }), [rejected]),
    );
    assert.deepEqual(
      opens(both).map((a) => [a.kind, Object.keys(a.files), a.nodes]),
      [
        ["accept", ["fleet-manifests/nodes/web-02.yaml"], ["web-02"]],
        ["ticket", [Object.keys(opens(both)[1]!.files)[0]], ["web-01"]],
      ],
    );
    assert.match(opens(both)[1]!.body, /the accept PR #1 was closed without merging/);
    assert.doesNotMatch(opens(both)[0]!.body, /closed without merging/);
    const other = opens(plan(input(report({ "web-01": [somaxconn(16384)] }), [rejected])));
    assert.deepEqual(
      other.map((a) => a.kind),
      ["accept"],
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

  /** Plans one sysctl drift with the sysctl domain's accept replaced by `accept`. */
  const planWithAccept = (accept: () => never) => {
    const sysctl = domainByName("sysctl")!;
    const original = sysctl.accept;
    sysctl.accept = accept;
    try {
      return plan(input(report({ "web-01": [somaxconn(8192)] })));
    } finally {
      sysctl.accept = original;
    }
  };

  it("an error that is not a refused edit is a bug: planning throws it instead of proposing a ticket", () => {
    assert.throws(
      () =>
        planWithAccept(() => {
          throw new TypeError("a bug in accept");
        }),
      { name: "TypeError", message: "a bug in accept" },
    );
  });

  it("an edit the manifest cannot take becomes a ticket saying why", () => {
    const [pr, ...rest] = opens(
      planWithAccept(() => {
        throw new ManifestEditError("this value cannot be written");
      }),
    );
    assert.equal(rest.length, 0);
    assert.equal(pr!.kind, "ticket");
    assert.match(
      pr!.body,
      /This is a ticket because the manifest cannot be edited to accept it: `this value cannot be written`\./,
    );
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

    it("a ticket takes an owner, a due date, a link and references; past due, its drift is drift again, saying so, and no fresh PR", async () => {
      const text = withTicket.files.get(ticketFile)!;
      const ticket = {
        ...Ticket.parse(parse(text)),
        owner: "acme/db-team",
        due: "2026-03-01",
        link: "https://tracker.example/OPS-1234",
        refs: { jira: "OPS-1234" },
      };
      assert.deepEqual(Ticket.parse(ticket), ticket);
      for (const [field, value] of [
        ["link", "javascript:alert(1)"],
        ["due", "2026-02-30"],
        ["refs", { "Jira Key": "OPS-1" }],
      ] as const)
        assert.equal(Ticket.safeParse({ ...ticket, [field]: value }).success, false, field);
      const dir = await writeTree({
        ...TREE,
        [ticketFile.slice(PREFIX.length + 1)]:
          `${text}owner: acme/db-team\ndue: 2026-03-01\nlink: https://tracker.example/OPS-1234\nrefs: { jira: OPS-1234 }\n`,
      });
      try {
        const overdue = await loadFleet(dir, { displayPrefix: PREFIX });
        const item = report({ "db-01": [kernel] }, { fleetOverride: overdue }).nodes.find(
          (n) => n.name === "db-01",
        )!.drift[0]!;
        // Due long before this run.
        assert.equal(item.acknowledged, undefined);
        assert.equal(item.lapsed, `ticket ${ticket.id} past due since 2026-03-01`);
        // Raised on that ticket (the dashboard lists it), not as a fresh PR for the same drift.
        const overdueReport = report({ "db-01": [kernel] }, { fleetOverride: overdue });
        assert.deepEqual(plan(input(overdueReport, [], { ...withTicket, fleet: overdue })), []);
      } finally {
        await removeTree(dir);
      }
    });

    it("while a merged ticket is open, its drift is acknowledged and gets no PR", () => {
      const r = report({ "db-01": [kernel] }, { fleetOverride: withTicket.fleet });
      assert.equal(r.nodes.find((n) => n.name === "db-01")!.drift[0]!.acknowledged, true);
      assert.deepEqual(plan(input(r, [], withTicket)), []);
    });

    it("a report audited before the ticket was merged (what a refresh plans from) proposes nothing for the drift it covers", () => {
      const before = report({ "db-01": [kernel] });
      assert.equal(before.nodes.find((n) => n.name === "db-01")!.drift[0]!.acknowledged, undefined);
      assert.deepEqual(plan(input(before, [], withTicket, 0)), []);
    });

    it("when the drift is gone, resolving the ticket is proposed; not while a node of it is unaudited", () => {
      const [resolve] = opens(
        plan(input(report({}, { fleetOverride: withTicket.fleet }), [], withTicket)),
      );
      assert.equal(resolve!.kind, "resolve");
      // Filed in the node's folder; resolved, it moves out of the open ones into resolved/ beside
      // them, so the folder never empties: git would read the last ticket leaving it as the folder
      // renamed, and move a sibling PR's new ticket after it.
      assert.match(ticketFile, /^fleet-manifests\/remediations\/db-01\/kernel-/);
      const resolvedFile = ticketFile.replace("/db-01/", "/db-01/resolved/");
      assert.deepEqual(resolve!.files, {
        [ticketFile]: null,
        [resolvedFile]: resolve!.files[resolvedFile],
      });
      const ticket = Ticket.parse(parse(resolve!.files[resolvedFile]!));
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

  describe("a latent ticket covers the value its event was to give, not another", () => {
    const NEXT = "6.1.0-30-amd64";
    const LATER = "6.1.0-31-amd64";
    const ticketPr = () => opens(plan(input(report({ "db-01": [latentKernel(NEXT)] }))))[0]!;
    /** The first ticket PR merged: its ticket file in the tree, loaded as propose loads it. */
    const withMergedTicket = async (
      run: (
        merged: { fleet: Awaited<ReturnType<typeof loadFleet>>; files: Map<string, string> },
        text: string,
      ) => Promise<void>,
    ) => {
      const [file, text] = Object.entries(ticketPr().files)[0]!;
      const tree = { ...TREE, [file.slice(PREFIX.length + 1)]: text! };
      const dir = await writeTree(tree);
      try {
        await run(
          {
            fleet: await loadFleet(dir, { displayPrefix: PREFIX }),
            files: new Map(Object.entries(tree).map(([name, t]) => [`${PREFIX}/${name}`, t])),
          },
          text!,
        );
      } finally {
        await removeTree(dir);
      }
    };

    it("an open ticket PR for kernel X is closed when kernel Y is installed, and Y gets a ticket of its own", () => {
      const first = ticketPr();
      const later = plan(input(report({ "db-01": [latentKernel(LATER)] }), asPulls([first])));
      assert.deepEqual(
        later.map((a) => [a.type, a.type === "open" ? a.title : a.type === "close" ? a.number : a]),
        [
          [
            "open",
            `Remediate latent kernel drift on db-01: kernel_version: reboot pending, becomes ${LATER}`,
          ],
          ["close", 1],
        ],
      );
      const ticket = Ticket.parse(parse(Object.values(opens(later)[0]!.files)[0]!));
      assert.deepEqual(ticket.latent, { after: "reboot", becomes: LATER });
    });

    it("a merged ticket for kernel X acknowledges X only: Y is a new ticket, and X's is resolved", async () => {
      await withMergedTicket(async (merged, text) => {
        const item = (becomes: string) =>
          report({ "db-01": [latentKernel(becomes)] }, { fleetOverride: merged.fleet }).nodes.find(
            (n) => n.name === "db-01",
          )!.drift[0]!;
        assert.equal(item(NEXT).acknowledged, true);
        assert.equal(item(LATER).acknowledged, undefined);
        const later = report({ "db-01": [latentKernel(LATER)] }, { fleetOverride: merged.fleet });
        assert.deepEqual(
          opens(plan(input(later, [], merged))).map((a) => [a.kind, a.title]),
          [
            [
              "ticket",
              `Remediate latent kernel drift on db-01: kernel_version: reboot pending, becomes ${LATER}`,
            ],
            [
              "resolve",
              `Resolve remediation ticket ${Ticket.parse(parse(text)).id}: drift gone from db-01`,
            ],
          ],
        );
      });
    });

    it("a merged ticket for kernel X acknowledges the host running X after the reboot: no new ticket, no resolve until it runs the declared kernel", async () => {
      await withMergedTicket(async (merged, text) => {
        const booted = (live: string) =>
          report(
            { "db-01": [{ domain: "kernel", finding: { ...kernel.finding, live } }] },
            { fleetOverride: merged.fleet },
          );
        const id = Ticket.parse(parse(text)).id;
        assert.equal(
          booted(NEXT).nodes.find((n) => n.name === "db-01")!.drift[0]!.acknowledged,
          true,
        );
        assert.deepEqual(opens(plan(input(booted(NEXT), [], merged))), []);
        // Another kernel is other drift: its own ticket, and X's ticket is resolved.
        assert.deepEqual(
          opens(plan(input(booted(LATER), [], merged))).map((a) => [a.kind, a.title]),
          [
            [
              "ticket",
              `Remediate kernel drift on db-01: kernel_version: 6.1.0-28-amd64 → ${LATER}`,
            ],
            ["resolve", `Resolve remediation ticket ${id}: drift gone from db-01`],
          ],
        );
      });
    });

    it("a ticket's latent part is part of its signature: an edit to it alone is refused", () => {
      const ticket = Ticket.parse(parse(Object.values(ticketPr().files)[0]!));
      const edited = Ticket.safeParse({ ...ticket, latent: { after: "reboot", becomes: LATER } });
      assert.equal(edited.success, false);
      assert.match(
        JSON.stringify(edited.error?.issues),
        /is not the signature of the kernel drift/,
      );
    });
  });

  it("a missing file reads absent in the title, not null", () => {
    const [pr] = opens(
      plan(
        input(
          report({
            "db-01": [
              {
                ...motd(""),
                finding: {
                  ...motd("").finding,
                  path: ["files", "/etc/motd"],
                  live: null,
                  declared: "present",
                },
              },
            ],
          }),
        ),
      ),
    );
    assert.match(pr!.title, /: \/etc\/motd: present → absent$/);
  });

  it("a list of words reads as an operator writes it, in the title and the body, never as JSON", async () => {
    const tree = {
      "fleet.yaml": "{}\n",
      "nodes/db-01.yaml": "storage:\n  mounts:\n    - { path: /srv/data, options: [nosuid] }\n",
    };
    const finding = {
      key: "/srv/data:options",
      declared: ["rw", "nosuid"],
      live: ["rw", "noexec"],
      path: ["storage", "mounts", "/srv/data", "options"],
    };
    const [pr] = opens(await planOnTree(tree, { "db-01": [{ domain: "mounts", finding }] }));
    assert.match(pr!.title, /: \/srv\/data:options: rw,nosuid → rw,noexec$/);
    assert.match(pr!.body, /is declared `rw,nosuid` but the host runs `rw,noexec`/);
    assert.doesNotMatch(`${pr!.title}\n${pr!.body}`, /\["rw"/);
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
