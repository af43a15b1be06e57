// A pending rollout end to end: a scheduled run (audit over real sshd hosts, then propose) leaves
// each node's declared prints in the history on the state branch; an operator then merges a new
// sysctl value; the next audit, reading that history (--state-from-repo), names the live value the
// previous declaration, cause `rollout`, and propose opens a ticket, never an accept.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import type { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_rollout_e2e";
const M = "fleet-manifests";
const KEY = "net.core.somaxconn";
const WEB = ["web-01", "web-02"];

const webGroup = (value: number) => `system:\n  sysctl_parameters:\n    ${KEY}: ${value}\n`;

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-rollout-e2e-",
  files: {
    [`${M}/fleet.yaml`]: "policy:\n  sysctl: { severity: medium, on_drift: accept }\n",
    [`${M}/groups/web.yaml`]: webGroup(4096),
    ...Object.fromEntries(WEB.map((n) => [`${M}/nodes/${n}.yaml`, "groups: [web]\n"])),
  },
  setup: async () => {
    fleet = await startFleet(
      WEB.map((name) => ({ name, sysctls: { [KEY]: "4096" } })),
      { prefix: "qmy" },
    );
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig);

describe("pending rollout", () => {
  let first: Report;

  it("run 1: the hosts match the manifests; each node's declared prints are recorded", async () => {
    const { report } = await run.auditAndPropose("run-1", 0);
    first = report;
    for (const node of report.nodes) {
      assert.equal(node.status, "clean", node.error);
      assert.match(node.declared ?? "", /^(?:[A-Za-z0-9_-]{8})+$/);
    }
    assert.equal(forge.double.pulls().length, 0);
  });

  it("run 2: after a merged 8192 the drift is a rollout of the new revision, and propose opens one ticket, no accept", async () => {
    const pushed = new Date(Math.floor(Date.now() / 1000) * 1000);
    const commit = await forge.double.pushCommit("main", {
      [`${M}/groups/web.yaml`]: webGroup(8192),
    });
    const { file, report } = await run.auditAndPropose("run-2", 1);
    assert.equal(report.manifestRevision, commit);
    for (const node of report.nodes) {
      const [item, ...rest] = node.drift;
      assert.equal(rest.length, 0);
      assert.equal(item!.key, KEY);
      const { at, ...cause } = item!.cause!;
      // When the merged revision was committed: after the push began, and before this audit.
      assert.ok(at && new Date(at) >= pushed && new Date(at) <= new Date(report.startedAt), at);
      assert.deepEqual(cause, {
        kind: "rollout",
        evidence: `the live value is the one declared at revision ${first.manifestRevision!.slice(0, 12)} (this node's last audit); the manifests changed it by revision ${commit.slice(0, 12)}`,
        commit,
        group: `rollout ${commit}`,
      });
    }
    const text = await runCli(["report", "--report", file, "--format", "text"]);
    assert.match(text.stdout, /rollout pending/);

    const pulls = forge.double.pulls();
    assert.equal(pulls.length, 1, pulls.map((p) => p.title).join("\n"));
    const [ticket] = pulls;
    assert.match(ticket!.head, /--ticket--/);
    assert.match(
      ticket!.title,
      /^Remediate sysctl drift from one manifest rollout on web-01, web-02: net\.core\.somaxconn: 8192 → 4096$/,
    );
    assert.ok(ticket!.body!.includes(`\`${commit}\``), ticket!.body!);
  });
});
