// Accept PRs round-trip for the domains no test host can show here (systemd, kernel modules):
// captured probe output replayed by a fake transport through the real audit, the JSON report,
// the planner, each PR's files merged in turn, and the audit again until nothing is proposed.
import assert from "node:assert/strict";
import { readFile, readdir, rm, writeFile, mkdir } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { auditFleet } from "../../../src/audit/fleet.js";
import { defaultAuditSettings } from "../../../src/audit/node.js";
import { NodeAuditError } from "../../../src/errors.js";
import { loadFleet, type Fleet } from "../../../src/manifest/load.js";
import { plan } from "../../../src/propose/plan.js";
import type { Action } from "../../../src/propose/proposal.js";
import { Report } from "../../../src/report/schema.js";
import type { Transport } from "../../../src/transport/transport.js";
import { fixture, FIXTURE_NONCE } from "../domains/fixtures.js";
import { removeTree, writeTree } from "../../support/tree.js";

const PREFIX = "fleet-manifests";
type Merged = { kind: string; title: string; files: string[] };

/**
 * Replays a captured probe output under the nonce of the probe it is asked to run; null: the host
 * is unreachable.
 */
function replay(outputs: ReadonlyMap<string, string | null>) {
  return (node: { name: string }): Transport => ({
    describe: () => node.name,
    async run(script) {
      const output = outputs.get(node.name);
      if (output == null) throw new NodeAuditError(node.name, "unreachable", "connection refused");
      const nonce = /^QM_N=(\S+)$/m.exec(script)![1]!;
      return {
        stdout: output.replaceAll(FIXTURE_NONCE, nonce),
        stderr: "",
        durationMs: 1,
        timeoutMs: 60_000,
      };
    },
  });
}

async function audit(
  fleet: Fleet,
  outputs: ReadonlyMap<string, string | null>,
  now: Date,
): Promise<Report> {
  const report = await auditFleet({
    nodes: fleet.nodes,
    transportFor: replay(outputs),
    settings: defaultAuditSettings({ maxFileBytes: 1024 }),
    drift: {
      policy: fleet.settings.policy ?? {},
      waivers: [],
      tickets: fleet.tickets.map((t) => t.ticket),
      now,
    },
    concurrency: 4,
    manifestRevision: null,
  });
  // What propose reads: the report as `audit --format json` wrote it.
  return Report.parse(JSON.parse(JSON.stringify(report)));
}

async function manifestTexts(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const file = path.join(entry.parentPath, entry.name);
    if (entry.isFile())
      files.set(path.posix.join(PREFIX, path.relative(dir, file)), await readFile(file, "utf8"));
  }
  return files;
}

/**
 * Audits, plans and merges the first PR the planner opens, over and over, as a reviewer merging
 * every PR would; returns the PRs merged and the last report, once a run proposes nothing. Every
 * audit runs at `now`, and the planner after it: a report from the past.
 */
async function mergeUntilQuiet(
  dir: string,
  outputs: ReadonlyMap<string, string | null>,
  now = new Date(),
) {
  const before = await loadFleet(dir, { displayPrefix: PREFIX });
  const merged: Merged[] = [];
  for (let round = 0; round < 20; round++) {
    const fleet = await loadFleet(dir, { displayPrefix: PREFIX });
    const report = await audit(fleet, outputs, now);
    const files = await manifestTexts(dir);
    const actions = plan({
      report,
      nodes: fleet.nodes,
      tickets: fleet.tickets,
      files,
      manifestsPath: PREFIX,
      pulls: [],
    });
    const open = actions.find((a): a is Extract<Action, { type: "open" }> => a.type === "open");
    if (!open) return { merged, report, before, after: fleet, actions };
    for (const [file, text] of Object.entries(open.files)) {
      const target = path.join(dir, path.relative(PREFIX, file));
      if (text === null) {
        await rm(target);
        continue;
      }
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, text);
    }
    merged.push({ kind: open.kind, title: open.title, files: Object.keys(open.files).sort() });
  }
  assert.fail("the planner kept proposing after 20 merges");
}

const specOf = (fleet: Fleet, name: string) =>
  fleet.nodes.find((n) => n.name === name)!.spec as Record<string, any>;

describe("accept round trip from captured probe output", () => {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map(removeTree)));

  it("systemd: what a shared group declares is edited in the group when its one audited member drifted, the dark member keeping its value in its own file; a binary unit is a ticket", async () => {
    const group = [
      "systemd:",
      "  units:",
      "    - name: app.service",
      "      enabled: true",
      "      contents: |",
      "        [Unit]",
      "        Description=App",
      "",
      "        [Service]",
      "        ExecStart=/usr/bin/app",
      "",
      "        [Install]",
      "        WantedBy=multi-user.target",
      "      dropins:",
      '        limits.conf: "[Service]\\nLimitNOFILE=1024\\n"',
      "    - { name: metrics.service, enabled: true }   # scraped by prometheus",
      "",
    ].join("\n");
    const dir = await writeTree({
      "fleet.yaml": "# Fleet-wide defaults.\n",
      "groups/apps.yaml": group,
      "nodes/web-01.yaml": [
        "groups: [apps]",
        "systemd:",
        "  units:",
        "    - { name: nginx.service, active: true }",
        "    - { name: backup.service, active: true }",
        "    - { name: ghost.service, active: false }",
        '    - { name: retired.service, contents: "[Service]\\nExecStart=/usr/bin/retired\\n" }',
        '    - { name: blob.service, contents: "[Service]\\n" }',
        "",
      ].join("\n"),
      // Shares the group and could not be audited: the group keeps its value for it.
      "nodes/web-02.yaml": "groups: [apps]\n",
    });
    dirs.push(dir);
    const outputs = new Map([
      ["web-01", fixture("systemd", "units-drifted.txt")],
      ["web-02", null],
    ]);
    const { merged, report, before, after, actions } = await mergeUntilQuiet(dir, outputs);

    // Decided in this run from the one audited member: web-02 being dark holds nothing back. What
    // the group declares is edited there, web-02 keeping the old value in its own file; web-01's
    // own units in its own file. Edits on adjacent lines are one PR.
    const accepted = merged.filter((m) => m.kind === "accept");
    assert.deepEqual(
      [...new Set(accepted.flatMap((m) => m.files))].sort(),
      [`${PREFIX}/groups/apps.yaml`, `${PREFIX}/nodes/web-01.yaml`, `${PREFIX}/nodes/web-02.yaml`],
      JSON.stringify(merged),
    );
    const [ticket, ...others] = merged.filter((m) => m.kind === "ticket");
    assert.equal(others.length, 0);
    assert.match(
      ticket!.files.join(),
      /^fleet-manifests\/remediations\/web-01\/systemd-blob-service-contents-[0-9a-f]{16}\.yaml$/,
    );
    const web01 = report.nodes.find((n) => n.name === "web-01")!;
    assert.deepEqual(
      web01.drift.map((d) => [d.key, d.acknowledged ?? false]),
      [["blob.service:contents", true]],
      "merging the PRs leaves web-01 with only its ticketed drift",
    );
    assert.deepEqual(actions, []);
    assert.deepEqual(specOf(after, "web-02"), specOf(before, "web-02"));
    const units = new Map(
      (specOf(after, "web-01").systemd.units as { name: string }[]).map((u) => [u.name, u]),
    );
    assert.equal(units.has("retired.service"), false);
    assert.equal((units.get("metrics.service") as { enabled?: boolean }).enabled, false);
    assert.deepEqual(units.get("backup.service"), { name: "backup.service", active: false });
    assert.notEqual(await readFile(path.join(dir, "groups/apps.yaml"), "utf8"), group);
  });

  it("kernel_modules: between loaded and absent, as overrides of a base group shared with a control, and in a node file", async () => {
    const dir = await writeTree({
      "fleet.yaml": "# Fleet-wide defaults.\n",
      "groups/modules-base.yaml":
        "system:\n  kernel_modules:\n    loaded: [bridge, cramfs]   # initrd tools\n    absent: [floppy]\n",
      "groups/modules.yaml": "groups: [modules-base]\n",
      "nodes/km-01.yaml": "groups: [modules]\n",
      "nodes/km-02.yaml": "groups: [modules]\n",
      "nodes/km-03.yaml": "system:\n  kernel_modules:\n    absent: [bridge, cramfs]\n",
    });
    dirs.push(dir);
    const drifted = fixture("kernel_modules", "debian-bridge-host.txt");
    // km-02 cannot show its modules: it did not drift, so the base group it shares stays as it is.
    const unknown = fixture("kernel_modules", "no-module-support.txt");
    const outputs = new Map([
      ["km-01", drifted],
      ["km-02", unknown],
      ["km-03", drifted],
    ]);
    const { merged, report, before, after } = await mergeUntilQuiet(dir, outputs);

    assert.ok(
      merged.every((m) => m.kind === "accept"),
      JSON.stringify(merged),
    );
    const edited = new Set(merged.flatMap((m) => m.files));
    assert.deepEqual(edited, new Set([`${PREFIX}/nodes/km-01.yaml`, `${PREFIX}/nodes/km-03.yaml`]));
    assert.equal(
      merged.length,
      2,
      "one PR per node for its set of modules: cramfs and floppy on km-01, bridge on km-03",
    );
    for (const name of ["km-01", "km-03"])
      assert.deepEqual(report.nodes.find((n) => n.name === name)!.drift, [], name);
    assert.deepEqual(specOf(after, "km-02"), specOf(before, "km-02"));
    const km01 = { loaded: ["bridge", "floppy"], absent: ["cramfs"] };
    assert.deepEqual(specOf(after, "km-01").system.kernel_modules, km01);
    assert.deepEqual(specOf(after, "km-03").system.kernel_modules, {
      absent: ["cramfs"],
      loaded: ["bridge"],
    });
  });

  it("kernel_modules: a list a group declares is edited there, a list each node declares stays in the node files", async () => {
    const dir = await writeTree({
      "fleet.yaml": "# Fleet-wide defaults.\n",
      "groups/bridges.yaml": "system:\n  kernel_modules:\n    loaded: [bridge, cramfs]\n",
      "nodes/km-01.yaml": "groups: [bridges]\nsystem:\n  kernel_modules:\n    absent: [floppy]\n",
      "nodes/km-02.yaml": "groups: [bridges]\nsystem:\n  kernel_modules:\n    absent: [floppy]\n",
    });
    dirs.push(dir);
    const drifted = fixture("kernel_modules", "debian-bridge-host.txt");
    const { merged, report, after } = await mergeUntilQuiet(
      dir,
      new Map([
        ["km-01", drifted],
        ["km-02", drifted],
      ]),
    );
    // One merge for the set of modules both nodes drifted in alike: it alone makes the drift go
    // away.
    const titles = merged.map((m) => `${m.kind} ${m.title.replace(/^.*km-02: /, "")}`).sort();
    assert.deepEqual(titles, ["accept cramfs and 1 more"]);
    // Each list is edited where it is declared: loaded in the group, absent in each node file.
    const bridges = await readFile(path.join(dir, "groups/bridges.yaml"), "utf8");
    assert.equal(bridges, "system:\n  kernel_modules:\n    loaded: [bridge, floppy]\n");
    const km01 = await readFile(path.join(dir, "nodes/km-01.yaml"), "utf8");
    assert.equal(km01, "groups: [bridges]\nsystem:\n  kernel_modules:\n    absent: [cramfs]\n");
    for (const name of ["km-01", "km-02"]) {
      assert.deepEqual(report.nodes.find((n) => n.name === name)!.drift, [], name);
      assert.deepEqual(specOf(after, name).system.kernel_modules, {
        loaded: ["bridge", "floppy"],
        absent: ["cramfs"],
      });
    }
  });

  it("certificates: a validity accept from a report of the past lowers valid_for to the days left then", async () => {
    const isrg = "/usr/share/ca-certificates/mozilla/ISRG_Root_X1.crt";
    const dir = await writeTree({
      "fleet.yaml": "policy:\n  certificates: { on_drift: accept }\n",
      "nodes/ca-01.yaml": `certificates:\n  - { path: ${isrg}, valid_for: 30d }\n`,
    });
    dirs.push(dir);
    // Audited 23 days and an hour before it expires (2035-06-04T11:04:38Z); planned today.
    const { merged, report } = await mergeUntilQuiet(
      dir,
      new Map([["ca-01", fixture("certificates", "debian12-nobody.txt")]]),
      new Date("2035-05-12T10:04:38Z"),
    );
    // Then a ticket for its latent expiry (under 23d by the next audit), as policy.latent says.
    assert.deepEqual(
      merged.map((m) => m.kind),
      ["accept", "ticket"],
    );
    assert.equal(
      await readFile(path.join(dir, "nodes/ca-01.yaml"), "utf8"),
      `certificates:\n  - { path: ${isrg}, valid_for: 23d }\n`,
    );
    // Re-audited at that time: it holds (under it only by the next audit).
    assert.deepEqual(
      report.nodes[0]!.drift.map((d) => [d.latent?.after, d.acknowledged]),
      [["expiry", true]],
    );
  });
});
