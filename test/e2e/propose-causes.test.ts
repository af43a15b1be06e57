// One pull request per cause end to end: drift audited on real sshd test hosts through the real
// CLI, its causes written into the report JSON as the audit records them, `propose --report`
// against the real git server and the GitHub double. Needs root.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import type { Cause } from "../../src/domains/cause.js";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { scheduledRun, type Audited } from "../support/scheduled-run.js";

const TOKEN = "ghs_propose_causes";
const M = "fleet-manifests";
const DB = ["db-01", "db-02", "db-03"];
const WEB = ["web-01", "web-02"];
const APP = ["app-01", "app-02"];
const RESET = [
  "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_keepalive_time",
  "net.ipv4.tcp_syn_retries",
];

const webGroup = (somaxconn: number) =>
  [
    "system:",
    "  sysctl_parameters:",
    "    net.ipv4.tcp_fin_timeout: 60",
    "    net.ipv4.tcp_keepalive_time: 7200",
    "    net.ipv4.tcp_syn_retries: 6",
    "",
    `    net.core.somaxconn: ${somaxconn}   # listen backlog`,
    "",
  ].join("\n");

const FILES: Record<string, string> = {
  [`${M}/fleet.yaml`]:
    "policy:\n  sysctl: { on_drift: accept }\n  packages: { on_drift: accept }\n",
  // One apt upgrade moves both packages: adjacent lines, which as two PRs would conflict.
  [`${M}/groups/db.yaml`]: [
    "packages:",
    "  installed_manifest:",
    "    qm-postgresql-16: 16.4-1",
    "    qm-postgresql-client-16: 16.4-1",
    "",
  ].join("\n"),
  [`${M}/groups/web.yaml`]: webGroup(4096),
  // Drift of no known cause on adjacent lines (two PRs would conflict) and on a line apart.
  [`${M}/groups/app.yaml`]: [
    "system:",
    "  sysctl_parameters:",
    "    net.ipv4.tcp_retries2: 15",
    "    net.ipv4.tcp_orphan_retries: 0",
    "    # handshakes",
    "    net.ipv4.tcp_fastopen: 1",
    "    net.ipv4.tcp_synack_retries: 5",
    "",
  ].join("\n"),
  ...Object.fromEntries(DB.map((n) => [`${M}/nodes/${n}.yaml`, "groups: [db]\n"])),
  ...Object.fromEntries(WEB.map((n) => [`${M}/nodes/${n}.yaml`, "groups: [web]\n"])),
  ...Object.fromEntries(APP.map((n) => [`${M}/nodes/${n}.yaml`, "groups: [app]\n"])),
};

const upgraded = (real: string) =>
  `${real.trimEnd()}\n\n${["qm-postgresql-16", "qm-postgresql-client-16"]
    .map((p) => `Package: ${p}\nStatus: install ok installed\nVersion: 16.6-1\n`)
    .join("\n")}\n`;

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-causes-",
  files: { "README.md": "Fleet manifests.\n", ...FILES },
  setup: async () => {
    fleet = await startFleet(
      [
        ...DB.map((name) => ({ name, dpkgStatus: upgraded })),
        // One `sysctl --system` applied a persisted file that resets three keys; the listen backlog
        // still runs the value declared before the merged change below.
        ...WEB.map((name) => ({
          name,
          sysctls: {
            "net.ipv4.tcp_fin_timeout": "30",
            "net.ipv4.tcp_keepalive_time": "600",
            "net.ipv4.tcp_syn_retries": "3",
            "net.core.somaxconn": "4096",
          },
        })),
        ...APP.map((name) => ({
          name,
          sysctls: {
            "net.ipv4.tcp_retries2": "8",
            "net.ipv4.tcp_orphan_retries": "2",
            "net.ipv4.tcp_fastopen": "1",
            "net.ipv4.tcp_synack_retries": "2",
          },
        })),
      ],
      { prefix: "qmk" },
    );
  },
});

after(async () => {
  await fleet?.stop();
});

// The audits read no history: each item's cause is the one written below.
const run = scheduledRun(forge, () => fleet.sshConfig, { stateFromRepo: false });
let rolloutCommit = "";

/** The cause the audit records for an item: one transaction, one persisted file, one rollout. */
function causeOf(key: string): Cause | undefined {
  if (key.startsWith("qm-postgresql"))
    return {
      kind: "package",
      at: "2026-12-01T03:12:00Z",
      by: "unattended-upgrades",
      evidence: `${key} 16.4-1 → 16.6-1`,
      group: "apt 2026-12-01T03:12:00Z /usr/bin/unattended-upgrade",
    };
  if (RESET.includes(key))
    return {
      kind: "persisted",
      at: "2026-12-01T09:40:00Z",
      evidence: `/etc/sysctl.d/99-tune.conf sets ${key}`,
      group: "persisted /etc/sysctl.d/99-tune.conf 2026-12-01T09:40:00Z",
    };
  if (key === "net.core.somaxconn")
    return {
      kind: "rollout",
      evidence: "groups/web.yaml declares 8192 since the node's last clean audit",
      group: `rollout ${rolloutCommit}`,
      commit: rolloutCommit,
    };
  return undefined;
}

/** Audits the fleet, then writes each drift item's cause into the report as the audit finds it. */
async function audit(name: string, exitCode: number): Promise<Audited> {
  const audited = await run.audit(name, exitCode);
  const items = audited.report.nodes.filter((n) => !APP.includes(n.name)).flatMap((n) => n.drift);
  for (const item of items) {
    const cause = causeOf(item.key);
    if (cause) item.cause = cause;
  }
  await writeFile(audited.file, JSON.stringify(audited.report));
  return audited;
}

const propose = (file: string) => run.propose(["--report", file]);

const openPulls = () => forge.double.pulls().filter((p) => p.state === "open");

describe("one pull request per cause", () => {
  it("one upgrade on three db hosts is one accept PR, one persisted file's three keys one more, a merged change not rolled out a ticket, never an accept, unrelated drift on adjacent lines one PR; each merges after the others", async () => {
    rolloutCommit = await forge.double.pushCommit("main", {
      [`${M}/groups/web.yaml`]: webGroup(8192),
    });
    const { file, report } = await audit("run-1", 1);
    assert.deepEqual(
      report.nodes.map((n) => [n.name, n.drift.map((d) => d.key).sort()]),
      [
        ...APP.map((n) => [
          n,
          ["net.ipv4.tcp_orphan_retries", "net.ipv4.tcp_retries2", "net.ipv4.tcp_synack_retries"],
        ]),
        ...DB.map((n) => [n, ["qm-postgresql-16", "qm-postgresql-client-16"]]),
        ...WEB.map((n) => [n, ["net.core.somaxconn", ...RESET]]),
      ],
    );

    await propose(file);
    const pulls = openPulls();
    assert.equal(pulls.length, 5, pulls.map((p) => p.title).join("\n"));
    const upgrade = pulls.find((p) => p.title.includes("from one package transaction"))!;
    assert.match(
      upgrade.title,
      /^Accept drift from one package transaction on db-01, db-02, db-03: packages qm-postgresql-\S+ and 1 more$/,
    );
    assert.deepEqual(await forge.changedFiles(upgrade.head), [`${M}/groups/db.yaml`]);
    const persisted = pulls.find((p) => p.title.includes("from one persisted file"))!;
    assert.match(
      persisted.title,
      /^Accept drift from one persisted file on web-01, web-02: sysctl net\.ipv4\.\S+ and 2 more$/,
    );
    assert.deepEqual(await forge.changedFiles(persisted.head), [`${M}/groups/web.yaml`]);
    for (const key of RESET) assert.ok(persisted.body!.includes(key), persisted.body!);

    // The rollout is a ticket that says why; no accept reverts the merged 8192.
    const [ticket, ...accepts] = [...pulls].sort(
      (a, b) => Number(b.head.includes("--ticket--")) - Number(a.head.includes("--ticket--")),
    );
    assert.match(ticket!.head, /--ticket--/);
    assert.match(
      ticket!.title,
      /^Remediate sysctl drift from one manifest rollout on web-01, web-02: net\.core\.somaxconn: 8192 → 4096$/,
    );
    assert.ok(ticket!.body!.includes("rollout pending: the manifest moved and the host did not"));
    assert.ok(ticket!.body!.includes(`\`${rolloutCommit}\``), ticket!.body!);
    for (const pull of accepts) assert.doesNotMatch(pull.body!, /somaxconn/);

    // Unrelated drift on adjacent lines is one PR saying why; the line apart is a PR of its own.
    const combined = pulls.find((p) => p.body!.includes("edits adjacent lines of one file"))!;
    assert.match(
      combined.title,
      /^Accept drift on app-01, app-02: sysctl net\.ipv4\.\S+ and 1 more$/,
    );
    const apart = pulls.find((p) => p.title.includes("net.ipv4.tcp_synack_retries"))!;
    assert.doesNotMatch(apart.body!, /adjacent lines/);
    for (const pull of [combined, apart])
      assert.deepEqual(await forge.changedFiles(pull.head), [`${M}/groups/app.yaml`]);

    // Merging each in turn: none is left unmergeable by the ones merged before it.
    for (const pull of pulls) await forge.double.mergePull(pull.number);
    const dir = await forge.checkout();
    const read = (name: string) => readFile(path.join(dir, M, name), "utf8");
    assert.equal(
      await read("groups/db.yaml"),
      FILES[`${M}/groups/db.yaml`]!.replaceAll("16.4-1", "16.6-1"),
    );
    assert.equal(
      await read("groups/web.yaml"),
      webGroup(8192)
        .replace("fin_timeout: 60", "fin_timeout: 30")
        .replace("keepalive_time: 7200", "keepalive_time: 600")
        .replace("syn_retries: 6", "syn_retries: 3"),
    );
    assert.equal(
      await read("groups/app.yaml"),
      FILES[`${M}/groups/app.yaml`]!.replace("retries2: 15", "retries2: 8")
        .replace("orphan_retries: 0", "orphan_retries: 2")
        .replace("synack_retries: 5", "synack_retries: 2"),
    );
  });

  it("the next run proposes nothing again: the accepted drift is gone and the rollout is ticketed", async () => {
    const { file, report } = await audit("run-2", 0); // acknowledged by its ticket
    assert.deepEqual(
      report.nodes.map((n) => [n.name, n.drift.map((d) => [d.key, d.acknowledged ?? false])]),
      [
        ...APP.map((n) => [n, []]),
        ...DB.map((n) => [n, []]),
        ...WEB.map((n) => [n, [["net.core.somaxconn", true]]]),
      ],
    );
    const result = await propose(file);
    assert.equal(
      openPulls().length,
      0,
      openPulls()
        .map((p) => p.title)
        .join("\n"),
    );
    assert.doesNotMatch(result.stdout, /^open /m);
  });
});
