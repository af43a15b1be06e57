// Owners as GitHub takes them, end to end: a real sshd test host audited through the real CLI,
// `propose` against the real git server and the GitHub double, which refuses a label over 50
// characters and a review request naming one non-collaborator whole, as GitHub does. A long team
// slug still labels the PR; a stale owner costs only itself and is asked again on a later run; a
// team of another organization is never read as this organization's. Needs root.
import assert from "node:assert/strict";
import path from "node:path";
import { after, describe, it } from "node:test";
import { runCli } from "../support/cli.js";
import { OWNER, suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";

const TOKEN = "ghs_propose_owners";
const M = "fleet-manifests";
const LONG_TEAM = "infrastructure-platform-reliability-engineering";
const OWNERS = ["alice", `${OWNER}/${LONG_TEAM}`, "gone-user", "other-org/web-team"];

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-owners-",
  files: {
    "README.md": "Fleet manifests.\n",
    [`${M}/fleet.yaml`]: "policy:\n  sysctl: { on_drift: accept }\n",
    [`${M}/groups/web.yaml`]: `owners: [${OWNERS.join(", ")}]\n`,
    [`${M}/nodes/web-01.yaml`]:
      "groups: [web]\nsystem:\n  sysctl_parameters:\n    net.ipv4.ip_forward: 0\n",
  },
  setup: async ({ double }) => {
    fleet = await startFleet([{ name: "web-01", sysctls: { "net.ipv4.ip_forward": "1" } }], {
      prefix: "qmo",
    });
    double.addCollaborator("alice", "write");
    double.addTeam(LONG_TEAM);
    // This organization has a `web-team` too: asking it for `other-org/web-team` would succeed.
    double.addTeam("web-team");
  },
});

after(async () => {
  await fleet?.stop();
});

const env = () => forge.double.cliEnv();
/** Audits the fleet into `out` as JSON; every run here finds drift (exit 1). */
async function auditTo(out: string): Promise<void> {
  const audit = await runCli(
    [
      "audit",
      ...forge.repoArgs(),
      "--ssh-config",
      fleet.sshConfig,
      "--format",
      "json",
      "--out",
      out,
    ],
    { env: env() },
  );
  assert.equal(audit.exitCode, 1, audit.stderr);
}
const dashboard = () => forge.double.issues().find((i) => i.title === "Quartermaster dashboard")!;
const thePull = () => {
  const open = forge.double.pulls().filter((p) => p.state === "open");
  assert.equal(open.length, 1, open.map((p) => p.title).join("\n"));
  return open[0]!;
};

describe("owners GitHub refuses", () => {
  let report: string;

  it("labels the PR with every owner (a long one shortened), asks the owners it can, and says which it could not and why", async () => {
    report = path.join(forge.work, "report.json");
    await auditTo(report);
    const result = await runCli(["propose", "--report", report, ...forge.repoArgs()], {
      env: env(),
    });
    assert.equal(result.exitCode, 0, result.stderr);
    const pull = thePull();
    const long = pull.labels.find((l) => l.startsWith(`owner:${OWNER}/infrastructure`));
    assert.ok(long && long.length <= 50, `labels: ${pull.labels.join(", ")}`);
    for (const owner of ["alice", "gone-user", "other-org/web-team"])
      assert.ok(pull.labels.includes(`owner:${owner}`), `labels: ${pull.labels.join(", ")}`);
    assert.deepEqual(pull.requestedReviewers, ["alice"]);
    assert.deepEqual(pull.requestedTeams, [LONG_TEAM]);
    assert.match(
      result.stderr,
      /could not ask gone-user to review #\d+: .*Reviews may only be requested from collaborators/,
    );
    assert.match(
      result.stderr,
      /could not ask other-org\/web-team to review #\d+: a team of another organization than acme/,
    );
    const body = dashboard().body ?? "";
    assert.match(body, /### Owners not asked to review: asked again on the next run \(2\)/);
    assert.match(body, /^- #\d+: `gone-user`, `GitHub API: asking gone-user/m);
    assert.match(body, /^- #\d+: `other-org\/web-team`, /m);
  });

  it("a later run asks again: the owner who became a collaborator is asked, the other is still listed", async () => {
    forge.double.addCollaborator("gone-user", "write");
    const result = await runCli(["propose", "--report", report, ...forge.repoArgs()], {
      env: env(),
    });
    assert.equal(result.exitCode, 0, result.stderr);
    assert.deepEqual(thePull().requestedReviewers, ["alice", "gone-user"]);
    assert.doesNotMatch(result.stderr, /gone-user/);
    assert.match(result.stderr, /could not ask other-org\/web-team/);
    const body = dashboard().body ?? "";
    assert.match(body, /### Owners not asked to review: asked again on the next run \(1\)/);
    assert.doesNotMatch(body, /`gone-user`/);
  });
});

describe("a rejection when owners change", () => {
  it("keeps the reviewer's decision: the ticket PR stays open, and the accept is not proposed again", async () => {
    const accept = thePull();
    assert.match(accept.head, /^quartermaster--accept--/);
    await forge.double.closePull(accept.number);
    const report1 = path.join(forge.work, "report.json");
    const first = await runCli(["propose", "--report", report1, ...forge.repoArgs()], {
      env: env(),
    });
    assert.equal(first.exitCode, 0, first.stderr);
    const ticket = thePull();
    assert.match(ticket.head, /^quartermaster--ticket--/);

    await forge.double.pushCommit("main", {
      [`${M}/groups/web.yaml`]: "owners: [alice]\n",
    });
    const report2 = path.join(forge.work, "report-new-owners.json");
    await auditTo(report2);
    const second = await runCli(["propose", "--report", report2, ...forge.repoArgs()], {
      env: env(),
    });
    assert.equal(second.exitCode, 0, second.stderr);
    assert.doesNotMatch(second.stdout, /^(open|close) /m, second.stdout);
    const still = thePull();
    assert.equal(still.number, ticket.number);
    assert.ok(still.labels.includes("owner:alice"));
  });
});
