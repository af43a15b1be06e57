// An sshd setting from audit to an accept pull request and back, on a real sshd test host through
// the real CLI, the real git server and the OpenAPI-checked GitHub double: the accept PR writes the
// live value where the manifest declares it, keeping the keyword as written, and once merged the
// next audit is clean. Needs root.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";
import { OWNER, REPO, suiteForge } from "../support/forge.js";
import { testOctokit } from "../support/octokit.js";
import { assertNoSelfChange } from "../support/pull-text.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_sshd_propose";
const M = "fleet-manifests";
const HOST = "sshd-02";
const FLEET = [
  "policy:",
  "  sshd: { on_drift: accept }",
  "sshd:",
  "  settings:",
  "    # who may log in as root",
  "    PermitRootLogin: no",
  "    X11Forwarding: no",
  "",
].join("\n");

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-sshd-propose-",
  files: {
    "README.md": "Fleet manifests.\n",
    [`${M}/fleet.yaml`]: FLEET,
    [`${M}/nodes/${HOST}.yaml`]: "ssh:\n  become: sudo\n",
  },
  setup: async () => {
    fleet = await startFleet(
      [
        {
          name: HOST,
          sshdOptions: ["PermitRootLogin prohibit-password"],
          files: {
            "/etc/sudoers.d/qm-audit": {
              contents: `${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh\n`,
              mode: "0440",
            },
          },
        },
      ],
      { prefix: "qms" },
    );
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig);

describe("sshd: an accept pull request round-trips", () => {
  it("accepts the live PermitRootLogin into the file that declares it; merged, the next audit is clean", async () => {
    const { file, report } = await run.audit("run-1", 1);
    assert.deepEqual(
      report.nodes[0]!.drift.map((d) => [d.key, d.declared, d.live]),
      // OpenSSH 9.2's sshd -T prints prohibit-password by its older name.
      [["permitrootlogin", "no", "without-password"]],
    );
    await run.propose(["--report", file]);
    const pulls = forge.double.pulls().filter((p) => p.state === "open");
    assertNoSelfChange(pulls);
    assert.equal(pulls.length, 1);
    const pull = pulls[0]!;
    assert.deepEqual(await forge.changedFiles(pull.head), [`${M}/fleet.yaml`]);
    assert.equal(
      await forge.fileAt(pull.head, `${M}/fleet.yaml`),
      FLEET.replace("PermitRootLogin: no", "PermitRootLogin: without-password"),
    );
    const github = testOctokit({ baseUrl: forge.double.apiUrl, auth: TOKEN, retries: 0 }).octokit
      .rest.pulls;
    await github.merge({ owner: OWNER, repo: REPO, pull_number: pull.number });
    const after = await run.audit("run-2", 0);
    assert.deepEqual(
      after.report.nodes.map((n) => [n.name, n.status, n.drift]),
      [[HOST, "clean", []]],
    );
  });
});
