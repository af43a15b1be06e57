// An operator's `sysctl -w` read as `runtime` only when the live value itself changed since the
// node's last audit, through scheduled runs that keep the history on the state branch. Both hosts'
// sysctl.d file was written after the boot (as configuration management pushes files without
// rebooting) and not since the first audit. Needs root.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_sysctl_runtime";
const M = "fleet-manifests";
const KEY = "net.ipv4.tcp_fin_timeout";
/** Set by no sysctl.d file: only the node's last audit tells a runtime write from the default. */
const UNSET = "net.ipv4.tcp_keepalive_probes";
/** Declared from the second run on, at a value no host has: its live value is the kernel's default. */
const NEW = "net.ipv4.tcp_keepalive_intvl";
const PERSISTED = "/etc/sysctl.d/60-qm-fin.conf";
/** Written by hand before the first audit: drift that run sees already. */
const EARLY = "rt-early";
/** As declared at the first audit, written by hand after it. */
const LATER = "rt-later";

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-sysctl-runtime-",
  files: {
    "README.md": "Fleet manifests.\n",
    [`${M}/fleet.yaml`]: `system:\n  sysctl_parameters:\n    ${KEY}: 60\n    ${UNSET}: 9\n`,
    [`${M}/nodes/${EARLY}.yaml`]: "{}\n",
    [`${M}/nodes/${LATER}.yaml`]: "{}\n",
  },
  setup: async () => {
    const files = { [PERSISTED]: { contents: `${KEY} = 60\n` } };
    fleet = await startFleet(
      [
        { name: EARLY, sysctls: { [KEY]: "45", [UNSET]: "9" }, files },
        { name: LATER, sysctls: { [KEY]: "60", [UNSET]: "9" }, files },
      ],
      { prefix: "qmr" },
    );
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig);

describe("a runtime write is a change since the node's last audit", () => {
  it("the value a host had at its last audit is no runtime write now; one written since is", async () => {
    const first = await run.auditAndPropose("run-1", 1);
    const causeOf = (report: typeof first.report, name: string, key = KEY) =>
      report.nodes.find((n) => n.name === name)!.drift.find((d) => d.key === key)?.cause;
    // The file changed since the boot: nothing tells a runtime write from a value it held.
    assert.equal(causeOf(first.report, EARLY)?.kind, "unknown");
    assert.equal(causeOf(first.report, LATER), undefined);

    await fleet.exec(LATER, `echo 45 > /proc/sys/net/ipv4/tcp_fin_timeout`);
    await fleet.exec(LATER, `echo 5 > /proc/sys/net/ipv4/tcp_keepalive_probes`);
    await forge.pushToMain(
      {
        [`${M}/fleet.yaml`]: `system:\n  sysctl_parameters:\n    ${KEY}: 60\n    ${UNSET}: 9\n    ${NEW}: 33\n`,
      },
      `Declare ${NEW}`,
    );
    const { report } = await run.auditAndPropose("run-2", 1);
    const runtime = causeOf(report, LATER);
    assert.deepEqual(runtime?.kind, "runtime");
    // A key no file sets, written since the first audit, though a file changed since the boot.
    const unset = causeOf(report, LATER, UNSET);
    assert.equal(unset?.kind, "runtime");
    assert.match(
      unset.evidence,
      /^live 5 is set by no persisted file and neither a boot nor a persisted file's change happened since this node's last audit at \S+: a runtime write such as sysctl -w$/,
    );
    assert.equal(causeOf(report, EARLY, UNSET), undefined);
    // Declared since the first audit: its kernel default is no runtime write, on either host.
    for (const name of [EARLY, LATER]) {
      const declared = causeOf(report, name, NEW);
      assert.equal(declared?.kind, "unknown");
      assert.match(
        declared.evidence,
        /^the manifests changed this value since this node's last audit at \S+: when the live value changed is not known$/,
      );
    }
    const bodies = () =>
      forge.double
        .pulls()
        .filter((p) => p.state === "open")
        .map((p) => ({ title: p.title, body: p.body }));
    const opened = bodies();
    // No file changed since the first audit, but that audit saw 45 already: it keeps the why of
    // its first sighting, word for word.
    assert.deepEqual(causeOf(report, EARLY), causeOf(first.report, EARLY));

    // The runtime write persists: the next run no longer sees it happen, but the drift keeps the
    // cause found when it was first seen, and its pull request says the same; so does the newly
    // declared key's, which no longer changed since the last audit either.
    const third = await run.auditAndPropose("run-3", 1);
    assert.deepEqual(causeOf(third.report, LATER), runtime);
    assert.deepEqual(causeOf(third.report, LATER, UNSET), unset);
    assert.deepEqual(bodies(), opened);
  });
});
