import assert from "node:assert/strict";
import { test } from "node:test";
import { parse } from "yaml";
import { snapshotSpec, snapshotText } from "../../../src/runs/snapshot.js";
import { systemd } from "../../../src/domains/systemd/index.js";
import { fixture, FIXTURE_NONCE, liveFrom } from "../domains/fixtures.js";
import { scriptedTransport } from "../../support/probe-output.js";

const APP = "[Service]\nExecStart=/usr/bin/app\n";

test("a node's declared units come out at their live state; what cannot be written stays declared, with the reason", async () => {
  const units = systemd.schema.parse([
    {
      name: "app.service",
      enabled: true,
      contents: APP,
      dropins: { "limits.conf": "[Service]\nLimitNOFILE=1024\n" },
    },
    { name: "metrics.service", enabled: true },
    { name: "nginx.service", active: true },
    { name: "backup.service", active: true },
    { name: "ghost.service", active: false },
    { name: "retired.service", contents: "[Service]\nExecStart=/usr/bin/retired\n" },
    { name: "blob.service", contents: "[Service]\n" },
  ]);
  const output = fixture("systemd", "units-drifted.txt");
  const transport = scriptedTransport((nonce) => output.replaceAll(FIXTURE_NONCE, nonce));
  const snapshot = await snapshotSpec(transport, [systemd], undefined, {
    declared: { systemd: { units } },
  });

  const taken = (snapshot.spec.systemd as { units: unknown[] }).units;
  assert.deepEqual(taken, [
    {
      name: "app.service",
      enabled: true,
      contents:
        "[Unit]\nDescription=App, hotfixed\n\n[Service]\nExecStart=/usr/bin/app --workers 8\n\n[Install]\nWantedBy=multi-user.target\n",
      dropins: {
        "limits.conf": "[Service]\nLimitNOFILE=65536\n",
        "debug.conf": "[Service]\nEnvironment=DEBUG=1\n",
      },
    },
    { name: "metrics.service", enabled: false },
    { name: "nginx.service", active: true },
    { name: "backup.service", active: false },
    { name: "ghost.service", active: false },
    { name: "blob.service", contents: "[Service]\n" },
  ]);
  assert.equal(snapshot.unknown.length, 1);
  assert.match(
    snapshot.unknown[0]!,
    /^systemd: the live blob\.service:contents \(.*\) cannot be written into the manifest; kept as declared$/,
  );
  // Audited against the same host, only the unit that could not be written drifts.
  const findings = systemd.compare(
    systemd.schema.parse(taken),
    liveFrom(systemd, "units-drifted.txt"),
  );
  assert.deepEqual(
    findings.map((f) => f.key),
    ["blob.service:contents"],
  );
  const text = snapshotText("web-01", snapshot, new Date("2026-11-30T00:00:00Z"));
  assert.match(
    text,
    /^# not shown by this host: systemd: the live blob\.service:contents .* kept as declared$/m,
  );
  assert.deepEqual(parse(text), snapshot.spec);
});

test("without a declaration, files and units are left out of a snapshot", async () => {
  const output = fixture("systemd", "units-drifted.txt");
  const transport = scriptedTransport((nonce) => output.replaceAll(FIXTURE_NONCE, nonce));
  const snapshot = await snapshotSpec(transport, [systemd], undefined, {
    declared: { host: "web-01" },
  });
  assert.deepEqual(snapshot.spec, {});
});
