import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chmod } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { parse } from "yaml";
import type { DriftItem } from "../../src/report/schema.js";
import { pathKey } from "../../src/spec-path.js";
import { auditFleet } from "../../src/audit/fleet.js";
import { defaultAuditSettings } from "../../src/audit/node.js";
import { snapshotSpec } from "../../src/runs/snapshot.js";
import { DOMAINS } from "../../src/domains/registry.js";
import { loadFleet } from "../../src/manifest/load.js";
import { localTransport } from "../../src/transport/local.js";
import { runCli } from "../support/cli.js";
import { pyyamlLoad } from "../support/pyyaml.js";
import { nodeTree, unprivilegedTransport } from "../support/local-node.js";
import { removeTree, writeTree } from "../support/tree.js";

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));

/**
 * The drift a live-state snapshot leaves: none but what the next boot changes (this machine's
 * sysctl.d may set values it does not run), each of which the snapshot commented.
 */
function uncommented(drift: DriftItem[], commented: (item: DriftItem) => boolean): DriftItem[] {
  return drift.filter(
    (item) => !(item.latent && item.latentPolicy === "ticket" && commented(item)),
  );
}

/** Whether the snapshot text has the item's latent finding as a comment beside its key. */
const inText = (text: string) => (item: DriftItem) =>
  text
    .split("\n")
    .some(
      (line) =>
        line.trimStart().startsWith(`${item.key}: `) &&
        line.endsWith(
          ` # will become ${String(item.latent!.becomes)} at ${item.latent!.after}: ${item.latent!.because}`,
        ),
    );

describe("auditing this machine", () => {
  it("`snapshot --local` then `audit --local` on the same machine: exit 0, zero drift", async () => {
    const snapshot = await runCli(["snapshot", "--local"]);
    assert.equal(snapshot.exitCode, 0, snapshot.stderr);
    // The default declares packages installed at any version: an upgrade is no drift.
    const packages = (
      parse(snapshot.stdout) as { packages: { installed_manifest: Record<string, string> } }
    ).packages;
    assert.deepEqual(new Set(Object.values(packages.installed_manifest)), new Set(["*"]));
    const dir = await writeTree({ "nodes/localhost.yaml": snapshot.stdout });
    dirs.push(dir);
    const audit = await runCli(["audit", "--local", "--manifests", dir, "--format", "json"]);
    const report = JSON.parse(audit.stdout);
    assert.deepEqual(uncommented(report.nodes[0].drift, inText(snapshot.stdout)), []);
    assert.equal(report.nodes[0].status, "clean");
    assert.equal(audit.exitCode, 0, audit.stderr);
  });

  it("`snapshot --local --packages versions` then `audit --local`: the pinned versions are clean too", async () => {
    const snapshot = await runCli([
      "snapshot",
      "--local",
      "--packages",
      "versions",
      "--category",
      "packages",
    ]);
    assert.equal(snapshot.exitCode, 0, snapshot.stderr);
    const dir = await writeTree({ "nodes/localhost.yaml": snapshot.stdout });
    dirs.push(dir);
    const audit = await runCli(["audit", "--local", "--manifests", dir, "--format", "json"]);
    const report = JSON.parse(audit.stdout);
    assert.deepEqual(report.nodes[0].drift, []);
    const pinned = (
      parse(snapshot.stdout) as { packages: { installed_manifest: Record<string, string> } }
    ).packages;
    assert.match(pinned.installed_manifest.bash!, /^\d/, "bash is pinned to its version");
    assert.equal(audit.exitCode, 0, audit.stderr);
  });

  it("a declared node's snapshot carries its files' live state, and auditing that snapshot is clean", async () => {
    const place = await writeTree({
      "app.conf": "role = live\n",
      "secret.key": "live key\n",
      "keep.conf": "same\n",
    });
    dirs.push(place);
    // World-readable: a root-only file's contents are never written (test/e2e/adopt-secrets.test.ts).
    await chmod(path.join(place, "app.conf"), 0o644);
    const file = (name: string) => path.join(place, name);
    const declared = {
      files: [
        { path: file("app.conf"), contents: "role = declared\n", mode: "0600" },
        { path: file("secret.key"), sha256: "0".repeat(64), secret: true },
        { path: file("keep.conf"), contents: "same\n" },
        { path: file("gone.conf"), contents: "was here\n" },
      ],
    };
    const manifests = await writeTree(nodeTree(declared, "here"));
    dirs.push(manifests);
    const snapshot = await runCli([
      "snapshot",
      "--local",
      "--manifests",
      manifests,
      "--node",
      "here",
    ]);
    assert.equal(snapshot.exitCode, 0, snapshot.stderr);
    assert.match(snapshot.stdout, /^# Live state of here, taken /m);
    const spec = parse(snapshot.stdout) as { files: Record<string, unknown>[] };
    assert.deepEqual(spec.files, [
      { path: file("app.conf"), contents: "role = live\n", mode: "0644" },
      {
        path: file("secret.key"),
        sha256: createHash("sha256").update("live key\n").digest("hex"),
        secret: true,
      },
      { path: file("keep.conf"), contents: "same\n" },
      { path: file("gone.conf"), absent: true },
    ]);
    assert.doesNotMatch(
      snapshot.stdout,
      /live key/,
      "a secret's contents never reach the snapshot",
    );
    const [py] = await pyyamlLoad([snapshot.stdout]);
    assert.deepEqual(py, { value: spec });
    const dir = await writeTree({ "nodes/here.yaml": snapshot.stdout });
    dirs.push(dir);
    const audit = await runCli([
      "audit",
      "--local",
      "--manifests",
      dir,
      "--nodes",
      "here",
      "--format",
      "json",
    ]);
    const report = JSON.parse(audit.stdout);
    assert.deepEqual(uncommented(report.nodes[0].drift, inText(snapshot.stdout)), []);
    assert.equal(audit.exitCode, 0, audit.stderr);
  });

  it("as a non-root user with PATH=/usr/bin:/bin, the live values declared report no drift", async () => {
    // The truth as root; the audit as an unprivileged user who has no sysctl, ip or ss on PATH.
    const { spec, latent } = await snapshotSpec(localTransport("localhost"), DOMAINS);
    const dir = await writeTree(nodeTree(spec));
    dirs.push(dir);
    const fleet = await loadFleet(dir);
    const report = await auditFleet({
      nodes: fleet.nodes,
      transportFor: () => unprivilegedTransport(),
      settings: defaultAuditSettings(),
      drift: { policy: {}, waivers: [], tickets: [], now: new Date() },
      concurrency: 1,
      manifestRevision: null,
    });
    const node = report.nodes[0]!;
    assert.equal(node.status, "clean", JSON.stringify(node, null, 2));
    assert.deepEqual(
      uncommented(node.drift, (item) => latent.has(pathKey(item.path))),
      [],
    );
    assert.ok(Object.keys(spec).length > 0, "the snapshot declared something");
  });
});
