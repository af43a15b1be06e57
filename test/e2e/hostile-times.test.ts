// Host times that are not times, over real ssh: a host whose boot time, file mtimes and dpkg.log
// times lie far ahead (as a wrong clock, or a file's owner on tmpfs, can make them) costs only the
// causes those times would date: each is `unknown`, saying why. The report the audit writes is one
// its own reader takes: `report` renders it and `propose` plans both nodes from it. Needs root.
import assert from "node:assert/strict";
import path from "node:path";
import { describe, test } from "node:test";
import { execa } from "execa";
import { auditReport, suiteFleet } from "../support/audited-fleet.js";
import { runCli } from "../support/cli.js";

const CONF = "/etc/qm-times/app.conf";
const SYSCTL_FILE = "/etc/sysctl.d/99-qm-times.conf";
// Year 33658 as seconds since the epoch.
const FAR = "999999999999";
const { stdout: BASE_FILES } = await execa("dpkg-query", ["-W", "-f", "${Version}", "base-files"]);
// Every time the host gives, moved far ahead: the btime lines of the sysctl and systemd sections,
// the cause section's boot time, each stat line of a file under /etc (its owner and type may come
// before the path), and one dpkg.log line.
const farTimes = [
  "sed",
  `-e 's/^btime [0-9]*$/btime ${FAR}/'`,
  `-e '/ mark boot$/{n;s/^[0-9][0-9]*$/${FAR}/;}'`,
  `-e 's/^[0-9]\\{9,10\\} \\(\\([a-z_-]* \\)\\{0,2\\}\\/etc\\/\\)/${FAR} \\1/'`,
  `-e '/ mark dpkg-log$/a 9999-12-31 23:59:59 upgrade base-files:all 1.0 ${BASE_FILES}'`,
].join(" ");
const spec = [
  "system:",
  "  kernel_version: 0.0.0-declared",
  "  sysctl_parameters: { net.ipv4.ip_forward: 1 }",
  "packages:",
  '  installed_manifest: { base-files: "1.0" }',
  "files:",
  `  - { path: ${CONF}, contents: "level = 1\\n" }`,
  "",
].join("\n");

describe("host times that are not times", () => {
  const host = {
    sysctls: { "net.ipv4.ip_forward": "0" },
    files: {
      [CONF]: { contents: "level = 2\n" },
      [SYSCTL_FILE]: { contents: "net.ipv4.ip_forward = 0\n" },
    },
  };
  // A committed checkout: propose plans commits on top of the manifests' commit.
  const suite = suiteFleet(
    [
      { name: "clock-01", ...host, probeFilter: farTimes },
      { name: "honest-01", ...host },
    ],
    { "fleet-manifests/nodes/clock-01.yaml": spec, "fleet-manifests/nodes/honest-01.yaml": spec },
    { committed: true },
  );

  test("cost only their causes; report and propose read the audit's report", async () => {
    const { manifests } = suite;
    const audit = await auditReport(manifests, suite.fleet.sshConfig, {
      out: path.join(suite.work, "report.json"),
    });
    assert.equal(audit.exitCode, 1, audit.stderr);
    const { report, out: file } = audit;
    const byNode = new Map(report.nodes.map((n) => [n.name, n]));
    const clock = byNode.get("clock-01")!;
    const causes = Object.fromEntries(clock.drift.map((d) => [d.domain, d.cause]));
    assert.deepEqual(Object.keys(causes).sort(), ["files", "kernel", "packages", "sysctl"]);
    for (const [domain, cause] of Object.entries(causes)) {
      assert.equal(cause?.kind, "unknown", `${domain}: ${JSON.stringify(cause)}`);
      assert.equal(cause.at, undefined);
      assert.match(cause.evidence, /is later than the audit by more than a day/, domain);
    }
    const year33658 = "\\+033658-09-27T01:46:39Z";
    assert.match(
      causes.kernel!.evidence,
      new RegExp(`^the time the host recorded for this reboot change, ${year33658}, `),
    );
    assert.match(
      causes.files!.evidence,
      new RegExp(`^the time the host recorded for this file-edit change, ${year33658}, `),
    );
    assert.match(causes.sysctl!.evidence, new RegExp(`^${SYSCTL_FILE}'s mtime, ${FAR}, `));
    assert.match(
      causes.packages!.evidence,
      /^the time the host recorded for this package change, 9999-12-31T23:59:59Z, /,
    );
    // The honest host's causes are dated as before.
    const honest = byNode.get("honest-01")!;
    assert.equal(honest.drift.find((d) => d.domain === "kernel")?.cause?.kind, "reboot");
    assert.equal(honest.drift.find((d) => d.domain === "files")?.cause?.kind, "file-edit");

    const rendered = await runCli(["report", "--report", file, "--format", "markdown"]);
    assert.equal(rendered.exitCode, 0, rendered.stderr);
    assert.match(rendered.stdout, /clock-01/);
    const plan = await runCli(["propose", "--dry-run", "--report", file, "--manifests", manifests]);
    assert.equal(plan.exitCode, 0, plan.stderr);
    assert.match(plan.stdout, /clock-01/);
    assert.match(plan.stdout, /honest-01/);
  });
});
