// Packages on an rpm host, audited over SSH: a test host whose package database is rpm's at
// /var/lib/rpm (dpkg's hidden), as on RHEL, Fedora or SUSE. Needs root and rpm.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { stringify } from "yaml";
import type { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";
import { removeTree, scratchTrees, writeTree } from "../support/tree.js";

describe("an rpm host over ssh", () => {
  let fleet: TestFleet;
  let manifests: string;
  let report: Report;
  let audit: Awaited<ReturnType<typeof runCli>>;

  before(async () => {
    fleet = await startFleet([
      {
        name: "rhel-01",
        rpmPackages: [
          { name: "qm-tool", version: "1.2", release: "3.el9" },
          { name: "qm-epoch", version: "1.0", release: "1", epoch: 2 },
          { name: "qm-zero", version: "4.5", release: "6", epoch: 0 },
          { name: "qm-tilde", version: "2.0~rc1", release: "1" },
          { name: "qm-caret", version: "1.0^git5", release: "1" },
          { name: "openssl", version: "3.0.7", release: "27.el9", epoch: 1 },
        ],
        files: {
          "/etc/sudoers.d/qm-rpm": {
            contents: `${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh -s\n`,
            mode: "0440",
          },
        },
      },
    ]);
    const node = (declared: Record<string, string>) =>
      stringify({ host: "rhel-01", packages: { installed_manifest: declared } });
    manifests = await writeTree({
      // Every declaration here holds on the host: exact, epoch, zero epoch, any, absent,
      // constraints.
      "nodes/rpm-clean.yaml": node({
        "qm-tool": "1.2-3.el9",
        "qm-epoch": "2:1.0-1",
        "qm-zero": "4.5-6",
        "qm-caret": "> 1.0",
        openssl: ">= 1:3.0.7-27.el9, < 1:3.1",
        "qm-tilde": "2.0*",
        // Installed in this machine's dpkg database, not in the host's rpm one.
        bash: "absent",
      }),
      // The same host, declared otherwise: each declaration drifts.
      "nodes/rpm-drift.yaml": node({
        "qm-epoch": "1.0-1",
        "qm-tool": "absent",
        "qm-gone": "*",
        "qm-tilde": ">= 2.0-1",
        openssl: "< 3.1",
      }),
    });
    const out = `${manifests}-report.json`;
    audit = await runCli([
      "audit",
      "--format",
      "json",
      "--out",
      out,
      "--manifests",
      manifests,
      "--ssh-config",
      fleet.sshConfig,
    ]);
    report = JSON.parse(await readFile(out, "utf8")) as Report;
    await removeTree(out);
  });

  after(async () => {
    await fleet?.stop();
    if (manifests) await removeTree(manifests);
  });

  test("the host's rpm database is what the audit reads", async () => {
    const listed = await fleet.exec(
      "rhel-01",
      "su -s /bin/sh qm-audit -c 'rpm -q qm-epoch; test -e /var/lib/dpkg/status || echo no-dpkg'",
    );
    assert.equal(listed, "qm-epoch-1.0-1.noarch\nno-dpkg\n");
  });

  test("installed, exact versions, epochs and constraints that hold are clean", () => {
    const clean = report.nodes.find((n) => n.name === "rpm-clean");
    assert.ok(clean, audit.stderr);
    assert.equal(clean.status, "clean", JSON.stringify(clean, null, 2));
    assert.deepEqual(clean.unknown ?? [], []);
  });

  test("a missing epoch, an installed package declared absent, a missing one and rpm's version order drift", () => {
    const drift = report.nodes.find((n) => n.name === "rpm-drift");
    assert.ok(drift, audit.stderr);
    assert.equal(drift.status, "drift");
    const found = Object.fromEntries(drift.drift.map((d) => [d.key, [d.declared, d.live]]));
    assert.deepEqual(found, {
      "qm-epoch": ["1.0-1", "2:1.0-1"],
      "qm-tool": ["absent", "1.2-3.el9"],
      "qm-gone": ["*", "absent"],
      // rpm sorts a tilde before the release it precedes: 2.0~rc1 is older than 2.0.
      "qm-tilde": [">= 2.0-1", "2.0~rc1-1"],
      // An epoch outranks any version: 1:3.0.7 is newer than 3.1.
      openssl: ["< 3.1", "1:3.0.7-27.el9"],
    });
    assert.equal(drift.drift.find((d) => d.key === "qm-gone")?.detail, "not in the rpm database");
    assert.equal(audit.exitCode, 1, audit.stderr);
  });

  const tree = scratchTrees();
  test("a database the audit user cannot read is unknown, not every package missing, as root too", async () => {
    await fleet.exec("rhel-01", "chmod 0600 /var/lib/rpm/rpmdb.sqlite");
    const declared = { packages: { installed_manifest: { "qm-tool": "1.2-3.el9" } } };
    const dir = await tree({
      "nodes/rpm-user.yaml": stringify({ host: "rhel-01", ...declared }),
      // As root, rpm reads the database as user 65534: no better than the audit user.
      "nodes/rpm-root.yaml": stringify({ host: "rhel-01", ssh: { become: "sudo" }, ...declared }),
    });
    const out = `${dir}-report.json`;
    const unreadable = await runCli([
      ...["audit", "--format", "json", "--out", out, "--manifests", dir],
      ...["--ssh-config", fleet.sshConfig],
    ]);
    const nodes = (JSON.parse(await readFile(out, "utf8")) as Report).nodes;
    await removeTree(out);
    assert.equal(unreadable.exitCode, 0, unreadable.stderr);
    for (const node of nodes) {
      assert.deepEqual(node.drift, [], node.name);
      assert.deepEqual(
        node.unknown,
        [{ domain: "packages", reason: "rpm could not read its database" }],
        node.name,
      );
    }
  });
});
