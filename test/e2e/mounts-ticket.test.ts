// Mount drift as scheduled runs handle it, on a real sshd test host (its own mount namespace and
// /etc/fstab), through the real CLI against the git server and the GitHub double: a tmpfs mounted
// by hand over a declared mount point is a ticket (the default for mounts) caused at runtime, which
// the fleet page shows with what the next boot mounts; the merged ticket acknowledges the drift and
// the next run opens no second one; once /etc/fstab is edited to mount what is mounted now, the
// cause is that edit, naming the file. Needs root.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { runCli } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { assertNoSelfChange } from "../support/pull-text.js";
import { scheduledRun } from "../support/scheduled-run.js";
import type { NodeResult } from "../../src/report/schema.js";

const TOKEN = "ghs_mounts_ticket";
const M = "fleet-manifests";
const HOST = "mtk-01";

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-mounts-ticket-",
  files: {
    "README.md": "Fleet manifests.\n",
    [`${M}/fleet.yaml`]: "{}\n",
    [`${M}/nodes/${HOST}.yaml`]: [
      "storage:",
      "  mounts:",
      "    - { path: /srv/data, source: tmpfs, fstype: tmpfs, options: [rw, nosuid, nodev] }",
      "",
    ].join("\n"),
  },
  setup: async () => {
    fleet = await startFleet(
      [
        {
          name: HOST,
          files: { "/etc/fstab": { contents: "tmpfs /srv/data tmpfs nosuid,nodev 0 0\n" } },
        },
      ],
      { prefix: "qmmt" },
    );
    await fleet.exec(
      HOST,
      [
        "mount -t tmpfs -o mode=755 tmpfs /srv",
        "mkdir /srv/data",
        "mount -t tmpfs -o nosuid,nodev tmpfs /srv/data",
        // fstab unchanged since long before this boot.
        "touch -d 2020-01-01 /etc/fstab",
      ].join(" && "),
    );
  },
});
after(() => fleet?.stop());

const run = scheduledRun(forge, () => fleet.sshConfig);
const node = (report: { nodes: NodeResult[] }) => report.nodes.find((n) => n.name === HOST)!;
const items = (n: NodeResult) =>
  n.drift.map((d) => [d.key, d.live, d.latent?.becomes ?? "-", d.cause?.kind, d.onDrift]);

describe("mounts drift through scheduled runs", () => {
  it("a clean first run", async () => {
    const { report } = await run.auditAndPropose("run-1", 0);
    assert.deepEqual([node(report).status, node(report).drift], ["clean", []]);
  });

  it("a tmpfs mounted by hand: a ticket caused at runtime, shown on the fleet page with what the next boot mounts", async () => {
    await fleet.exec(HOST, "mount -t tmpfs -o noexec 'by hand' /srv/data");
    const { file, report } = await run.auditAndPropose("run-2", 1);
    assert.deepEqual(items(node(report)), [
      ["/srv/data:source", "by hand", "tmpfs", "runtime", "ticket"],
      ["/srv/data:options", ["rw", "noexec"], ["rw", "nosuid", "nodev"], "runtime", "ticket"],
    ]);
    const text = await runCli(["report", "--report", file, "--format", "text"]);
    assert.match(
      text.stdout,
      /changed at runtime: the live mount is not what \/etc\/fstab:1 mounts, and \/etc\/fstab has not changed since this node's last audit at [^:]+:[^:]+:\S+: mounted or remounted since, by hand or by a program/,
    );

    const pulls = forge.double.pulls().filter((p) => p.state === "open");
    assertNoSelfChange(pulls);
    assert.ok(pulls.length >= 1);
    for (const pull of pulls) {
      assert.match(pull.title, new RegExp(`^Remediate mounts drift on ${HOST}`));
      assert.match(pull.body ?? "", /Remediation: Mount or remount it as the manifest declares/);
      assert.match(pull.body ?? "", /`\/etc\/fstab:1`/);
    }

    // The fleet page: each item on a row of its own, the host's words as code, and what the next
    // boot mounts apart.
    const page = await runCli(["report", "--report", file, "--format", "html"]);
    assert.equal(page.exitCode, 0, page.stderr);
    for (const attribute of ["source", "options"])
      assert.match(
        page.stdout,
        new RegExp(
          `<td>mounts <code>/srv/data&#58;${attribute}</code> \\(high\\)</td>(<td>[^<]*</td>){2}<td>runtime: <code>the live mount is not what /etc/fstab&#58;1 mounts`,
        ),
      );
    assert.ok(
      page.stdout.includes(
        "<td>reboot</td><td>mounts <code>/srv/data&#58;source</code></td><td>the next boot mounts <code>/srv/data</code> from <code>tmpfs</code>, as <code>/etc/fstab&#58;1</code> says</td>",
      ) &&
        page.stdout.includes(
          "<td>reboot</td><td>mounts <code>/srv/data&#58;options</code></td><td>the next boot mounts <code>/srv/data</code> with options <code>rw,nosuid,nodev</code>, as <code>/etc/fstab&#58;1</code> says</td>",
        ),
      page.stdout,
    );

    for (const pull of pulls) await forge.double.mergePull(pull.number);
  });

  it("the merged ticket acknowledges the drift, and the next run opens no second one", async () => {
    const before = forge.double.pulls().length;
    const { report } = await run.auditAndPropose("run-3", 0);
    assert.equal(node(report).status, "clean");
    assert.deepEqual(
      node(report).drift.map((d) => [
        d.key,
        d.acknowledged ?? false,
        d.acknowledgedBy?.replace(/-[0-9a-f]{16}$/, "-…"),
      ]),
      [
        ["/srv/data:source", true, "ticket mounts-srv-data-source-…"],
        ["/srv/data:options", true, "ticket mounts-srv-data-options-…"],
      ],
    );
    assert.equal(forge.double.pulls().length, before);
  });

  it("fstab edited to mount what is mounted now: the cause is that edit, naming the file", async () => {
    // Rewritten in place: the file is bind-mounted.
    await fleet.exec(HOST, "printf 'by\\\\040hand /srv/data tmpfs noexec 0 0\\n' > /etc/fstab");
    const { file, report } = await run.audit("run-4", 0);
    assert.deepEqual(
      node(report).drift.map((d) => [d.key, d.latent ?? "-", d.cause?.kind]),
      [
        ["/srv/data:source", "-", "file-edit"],
        ["/srv/data:options", "-", "file-edit"],
      ],
    );
    for (const item of node(report).drift)
      assert.match(
        item.cause?.evidence ?? "",
        /^\/etc\/fstab modified at \S+, owner root, since this node's last audit: \/etc\/fstab:1 mounts it so$/,
      );
    // Acknowledged by the merged ticket, the items keep their cause on the fleet page.
    const page = await runCli(["report", "--report", file, "--format", "html"]);
    assert.match(
      page.stdout,
      /<td>file-edit at [^<]+: <code>\/etc\/fstab modified at [^<]+, owner root, since this node&#39;s last audit&#58; \/etc\/fstab&#58;1 mounts it so<\/code><\/td>/,
    );
  });
});
