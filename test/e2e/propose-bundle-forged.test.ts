// Bundling decided by the bot, not the host, end to end: three real sshd test hosts audited through
// the real CLI, `propose --report` against the real git server and the GitHub double. app-01 and
// app-02 ran one apt upgrade of two packages; app-03 carries a line-for-line copy of app-01's
// dpkg.log and apt history but shows another change (one of the two packages upgraded). The two
// that changed alike are one PR; app-03's copied text joins nothing, and closing the one PR rejects
// nothing of app-03's. Needs root.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { assertNoSelfChange } from "../support/pull-text.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_propose_bundle_forged";
const M = "fleet-manifests";
const ALIKE = ["app-01", "app-02"];
const COPIER = "app-03";
const PACKAGES = ["qm-libfoo", "qm-libbar"];

/** Epoch seconds as the hosts' logs write them: local time, which is UTC on the test machines. */
const logTime = (seconds: number, sep = " ") =>
  new Date(seconds * 1000).toISOString().slice(0, 19).replace("T", sep);
const upgradedAt = Math.floor(Date.now() / 1000) - 3600;

/** The machine's dpkg status with the two packages at the versions given. */
const withPackages = (versions: Record<string, string>) => (real: string) =>
  `${real.trimEnd()}\n\n${Object.entries(versions)
    .map(([p, v]) => `Package: ${p}\nStatus: install ok installed\nVersion: ${v}\n`)
    .join("\n")}\n`;

// One `apt-get upgrade` of both packages, as dpkg and apt log it.
const LOGS = {
  "/var/log/dpkg.log": {
    contents: PACKAGES.map((p) => `${logTime(upgradedAt)} upgrade ${p}:all 1.0-1 1.1-1\n`).join(""),
  },
  "/var/log/apt/history.log": {
    contents: [
      "",
      `Start-Date: ${logTime(upgradedAt - 5, "  ")}`,
      "Commandline: apt-get -y upgrade",
      "Requested-By: alice (1000)",
      `Upgrade: ${PACKAGES.map((p) => `${p}:all (1.0-1, 1.1-1)`).join(", ")}`,
      `End-Date: ${logTime(upgradedAt + 5, "  ")}`,
      "",
    ].join("\n"),
  },
};

const declare = [
  "packages:",
  "  installed_manifest:",
  ...PACKAGES.map((p) => `    ${p}: 1.0-1`),
  "",
].join("\n");

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-bundle-forged-",
  files: {
    "README.md": "Fleet manifests.\n",
    [`${M}/groups/app.yaml`]: declare,
    ...Object.fromEntries(ALIKE.map((n) => [`${M}/nodes/${n}.yaml`, "groups: [app]\n"])),
    // Its own declaration: its accept edits a file of its own, never lines next to the others'.
    [`${M}/nodes/${COPIER}.yaml`]: declare,
  },
  setup: async () => {
    fleet = await startFleet(
      [
        ...ALIKE.map((name) => ({
          name,
          dpkgStatus: withPackages({ "qm-libfoo": "1.1-1", "qm-libbar": "1.1-1" }),
          files: LOGS,
        })),
        {
          name: COPIER,
          dpkgStatus: withPackages({ "qm-libfoo": "1.1-1", "qm-libbar": "1.0-1" }),
          files: LOGS,
        },
      ],
      { prefix: "qmbf" },
    );
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig, { stateFromRepo: false });
const openPulls = () => forge.double.pulls().filter((p) => p.state === "open");

describe("bundling decided by the bot, not the host", () => {
  it("a host copying another's transaction line for line but showing another change joins nothing: its own PR, untouched when the alike hosts' PR is closed", async () => {
    const { file, report } = await run.audit("run-1", 1);
    const group = (name: string) =>
      report.nodes.find((n) => n.name === name)!.drift.map((d) => d.cause?.group);
    // The copy worked: the auditor reads the same transaction on all three.
    const [transaction] = group("app-01");
    assert.match(transaction!, /^package: qm-libbar 1\.0-1 → 1\.1-1, qm-libfoo 1\.0-1 → 1\.1-1$/);
    for (const name of [...ALIKE, COPIER])
      assert.ok(
        group(name).every((g) => g === transaction),
        `${name}: ${group(name).join()}`,
      );
    assert.equal(group(COPIER).length, 1);

    await run.propose(["--report", file]);
    const pulls = openPulls();
    assertNoSelfChange(pulls);
    assert.deepEqual(pulls.map((p) => p.title).sort(), [
      "Accept drift from one package transaction on app-01, app-02: packages qm-libfoo and 1 more",
      `Accept packages drift from one package transaction on ${COPIER}: qm-libfoo: 1.0-1 → 1.1-1`,
    ]);
    const alike = pulls.find((p) => p.title.includes("app-01"))!;
    const copier = pulls.find((p) => p.title.includes(COPIER))!;
    assert.ok(!alike.body!.includes(COPIER), alike.body!);
    assert.deepEqual(await forge.changedFiles(copier.head), [`${M}/nodes/${COPIER}.yaml`]);

    // A reviewer closes the alike hosts' PR: theirs becomes a ticket, app-03's PR stays as it was.
    await forge.double.closePull(alike.number);
    await run.propose(["--report", file]);
    const after = openPulls();
    assert.deepEqual(after.map((p) => p.title).sort(), [
      `Accept packages drift from one package transaction on ${COPIER}: qm-libfoo: 1.0-1 → 1.1-1`,
      "Remediate drift from one package transaction on app-01, app-02: packages qm-libfoo and 1 more",
    ]);
    const kept = after.find((p) => p.number === copier.number)!;
    assert.equal(kept.body, copier.body);
  });
});
