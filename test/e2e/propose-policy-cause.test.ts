// Policy by cause end to end: `policy.kernel.on_drift: { package: accept, otherwise: ticket }`. One
// real test host booted into a kernel that an apt transaction installed before the boot (its
// dpkg.log and apt history say so): a planned kernel upgrade, proposed as an accept PR. Another
// booted into a kernel nothing on the host records installing: a ticket. Needs root.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { release } from "node:os";
import { after, describe, it } from "node:test";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { assertNoSelfChange } from "../support/pull-text.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_propose_policy_cause";
const M = "fleet-manifests";
const PLANNED = "kern-apt";
const UNPLANNED = "kern-odd";
const DECLARED = "6.1.0-28-amd64";
// The hosts share this machine's kernel: each runs it.
const RUNNING = release();

/** This machine's boot, which the test hosts share, as epoch seconds. */
const bootedAt = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))![1]);
/** Epoch seconds as the hosts' logs write them: local time, which is UTC on the test machines. */
const logTime = (seconds: number, sep = " ") =>
  new Date(seconds * 1000).toISOString().slice(0, 19).replace("T", sep);
const installedAt = bootedAt - 600;

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-policy-cause-",
  files: {
    "README.md": "Fleet manifests.\n",
    [`${M}/fleet.yaml`]:
      "policy:\n  kernel:\n    on_drift: { package: accept, otherwise: ticket }\n",
    [`${M}/nodes/${PLANNED}.yaml`]: `system:\n  kernel_version: ${DECLARED}   # the running release\n`,
    [`${M}/nodes/${UNPLANNED}.yaml`]: `system:\n  kernel_version: ${DECLARED}\n`,
  },
  setup: async () => {
    fleet = await startFleet(
      [
        {
          name: PLANNED,
          files: {
            [`/boot/vmlinuz-${RUNNING}`]: { contents: "kernel\n" },
            "/var/log/dpkg.log": {
              contents: `${logTime(installedAt)} install linux-image-${RUNNING}:amd64 <none> ${RUNNING}-1\n`,
            },
            "/var/log/apt/history.log": {
              contents: [
                "",
                `Start-Date: ${logTime(installedAt - 5, "  ")}`,
                "Commandline: apt-get -y upgrade",
                "Requested-By: alice (1000)",
                `Install: linux-image-${RUNNING}:amd64 (${RUNNING}-1, automatic)`,
                `End-Date: ${logTime(installedAt + 5, "  ")}`,
                "",
              ].join("\n"),
            },
          },
        },
        { name: UNPLANNED, files: { "/var/log/dpkg.log": { contents: "" } } },
      ],
      { prefix: "qmp" },
    );
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig);

describe("policy by cause", () => {
  it("a kernel a package transaction installed before the boot is an accept PR; one nothing recorded is a ticket", async () => {
    const { file, report } = await run.audit("run-1", 1);
    const item = (name: string) => report.nodes.find((n) => n.name === name)!.drift[0]!;
    assert.deepEqual(
      [item(PLANNED).cause?.kind, item(PLANNED).cause?.by, item(PLANNED).onDrift],
      ["package", "apt-get (alice)", "accept"],
    );
    assert.equal(
      item(PLANNED).cause?.evidence,
      `booted ${RUNNING} at ${new Date(bootedAt * 1000).toISOString().replace(/\.000Z$/, "Z")}; linux-image-${RUNNING} (new) → ${RUNNING}-1`,
    );
    assert.deepEqual([item(UNPLANNED).cause?.kind, item(UNPLANNED).onDrift], ["reboot", "ticket"]);

    await run.propose(["--report", file]);
    const pulls = forge.double.pulls().filter((p) => p.state === "open");
    assertNoSelfChange(pulls);
    assert.deepEqual(pulls.map((p) => p.title).sort(), [
      `Accept kernel drift from one package transaction on ${PLANNED}: kernel_version: ${DECLARED} → ${RUNNING}`,
      `Remediate kernel drift from one reboot on ${UNPLANNED}: kernel_version: ${DECLARED} → ${RUNNING}`,
    ]);
    const accept = pulls.find((p) => p.title.startsWith("Accept"))!;
    // Merging it declares the running kernel: no reboot into the old one is asked for.
    assert.doesNotMatch(accept.body ?? "", /Remediation|Schedule a reboot/);
    const ticket = pulls.find((p) => p.title.startsWith("Remediate"))!;
    assert.match(
      ticket.body ?? "",
      /^Remediation: Schedule a reboot into the declared kernel, or update the manifest\.$/m,
    );
    assert.deepEqual(await forge.changedFiles(accept.head), [`${M}/nodes/${PLANNED}.yaml`]);
    assert.equal(
      await forge.fileAt(accept.head, `${M}/nodes/${PLANNED}.yaml`),
      `system:\n  kernel_version: ${RUNNING} # the running release\n`,
    );
  });
});
