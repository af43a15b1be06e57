// Short-lived SSH certificates and agents, through the real CLI over real sshd: hosts that trust a
// local CA (`TrustedUserCAKeys`), one of them only a jump host reaches, and an audit key that no
// host authorizes on its own. A certificate valid for minutes audits every node; an expired one
// fails every node in the certificate class, is named once, and is never retried; the key and
// certificate held only by an agent audit through SSH_AUTH_SOCK or `ssh.identity_agent`. Needs root.
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
import { stringify } from "yaml";
import type { Report } from "../../src/report/schema.js";
import { runCli, spawnCli, type CliResult } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();
const NODES = ["web-01", "web-02", "private-01"];

describe("SSH certificates from a local CA, and an agent", () => {
  let fleet: TestFleet;
  let dir: string;
  let ca: string;
  let key: string;
  const certificates: Record<string, string> = {};

  /** Signs the audit key as `name`, for the audit user, valid over `validity` (ssh-keygen -V). */
  const sign = async (name: string, validity: string) => {
    await execa(
      "ssh-keygen",
      ["-q", "-s", ca, "-I", name, "-n", fleet.user, "-V", validity, `${key}.pub`],
      {
        env: { TZ: "UTC" },
      },
    );
    const file = path.join(dir, `${name}.cert`);
    await execa("mv", [`${key}-cert.pub`, file]);
    return file;
  };

  /**
   * An ssh_config reaching every host with the audit key alone (no host authorizes it), the jump
   * host with `certificate` too: the jump's own ssh reads this file, never the first one's options.
   */
  const sshConfig = async (
    name: string,
    identity: { key?: string; certificate?: string; jumpAgent?: string },
  ) => {
    const file = path.join(dir, `${name}.ssh_config`);
    await writeFile(
      file,
      fleet.hosts
        .map((h) =>
          [
            `Host ${h.name}`,
            `  HostName ${h.address}`,
            `  Port ${h.port}`,
            `  User ${fleet.user}`,
            ...(h.behind ? [`  ProxyJump ${h.behind}`] : []),
            ...(identity.key ? [`  IdentityFile ${identity.key}`, "  IdentitiesOnly yes"] : []),
            ...(identity.certificate && h.name === "jump-01"
              ? [`  CertificateFile ${identity.certificate}`]
              : []),
            ...(identity.jumpAgent && h.name === "jump-01"
              ? [`  IdentityAgent ${identity.jumpAgent}`]
              : []),
            `  UserKnownHostsFile ${fleet.knownHosts}`,
            "  GlobalKnownHostsFile /dev/null",
            "  StrictHostKeyChecking yes",
            "  BatchMode yes",
            "",
          ].join("\n"),
        )
        .join("\n"),
    );
    return file;
  };

  /** A manifest tree of the three nodes, `ssh` in its fleet.yaml. */
  const manifests = (ssh: Record<string, unknown>) =>
    tree({
      // Through the jump host, ssh's wait for the node's banner includes the hop's whole login.
      "fleet.yaml": stringify({ ssh: { connect_timeout: 60, ...ssh } }),
      ...Object.fromEntries(NODES.map((n) => [`nodes/${n}.yaml`, stringify({ host: n })])),
    });

  const audit = async (
    manifestDir: string,
    config: string,
    run: typeof runCli = runCli,
    env?: Record<string, string>,
  ): Promise<CliResult & { report: Report }> => {
    const out = path.join(manifestDir, "report.json");
    const args = ["audit", "--manifests", manifestDir, "--ssh-config", config];
    const result = await run([...args, "--format", "json", "--out", out], env ? { env } : {});
    return { ...result, report: JSON.parse(await readFile(out, "utf8")) as Report };
  };

  before(async () => {
    dir = await tree();
    ca = path.join(dir, "ca");
    key = path.join(dir, "audit");
    for (const file of [ca, key])
      await execa("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", file]);
    const trusting = { sshdOptions: [`TrustedUserCAKeys ${ca}.pub`] };
    fleet = await startFleet([
      { name: "jump-01", ...trusting },
      { name: "web-01", ...trusting },
      { name: "web-02", ...trusting },
      { name: "private-01", behind: "jump-01", ...trusting },
    ]);
    certificates.valid = await sign("valid-for-minutes", "-1m:+10m");
    certificates.expired = await sign("expired", "20200101:20200102");
  });

  after(() => fleet?.stop());

  test("the audit key alone is refused: only a certificate lets it in", async () => {
    const result = await audit(await manifests({}), await sshConfig("bare", { key }));
    assert.equal(result.exitCode, 4, result.stderr);
    for (const node of result.report.nodes) assert.equal(node.errorClass, "auth", node.name);
  });

  test("a certificate valid for minutes, as ssh.certificate_file, audits every node, the one behind the jump host too", async () => {
    const config = await sshConfig("valid", { key, certificate: certificates.valid });
    const result = await audit(await manifests({ certificate_file: certificates.valid }), config);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.deepEqual(
      result.report.nodes.map((n) => [n.name, n.status]).sort(),
      NODES.map((n) => [n, "clean"]).sort(),
    );
  });

  test("an expired certificate fails every node in the certificate class, named once, never retried", async () => {
    const config = await sshConfig("expired", { key, certificate: certificates.expired });
    const result = await audit(await manifests({ certificate_file: certificates.expired }), config);
    assert.equal(result.exitCode, 4, result.stderr);
    const words = `certificate expired: ${certificates.expired} (key ID "expired", valid from 2020-01-01T00:00:00Z to 2020-01-02T00:00:00Z)`;
    assert.deepEqual(
      result.report.nodes.map((n) => [n.name, n.errorClass, n.error, n.tries]).sort(),
      NODES.map((n) => [n, "certificate", words, 1]).sort(),
    );
    assert.equal(
      result.stderr.split("\n").filter((line) => line.includes("certificate expired")).length,
      1,
      result.stderr,
    );
    assert.match(
      result.stderr,
      /^quartermaster: certificate expired: .*; the nodes it was offered to are not audited$/m,
    );
  });

  test("a key and certificate only an agent holds audit every node through SSH_AUTH_SOCK, or ssh.identity_agent", async (t) => {
    const agentDir = await tree();
    const socket = path.join(agentDir, "agent.sock");
    const agent = await execa("ssh-agent", ["-a", socket]);
    const pid = /SSH_AGENT_PID=(\d+)/.exec(agent.stdout)![1]!;
    t.after(() => process.kill(Number(pid)));
    // ssh-add loads the certificate beside the key; then neither is left on disk.
    const agentKey = path.join(agentDir, "agent-key");
    await execa("cp", [key, agentKey]);
    await execa("cp", [certificates.valid!, `${agentKey}-cert.pub`]);
    await execa("ssh-add", [agentKey], { env: { SSH_AUTH_SOCK: socket } });
    await rm(agentKey);
    await rm(`${agentKey}-cert.pub`);
    const config = await sshConfig("agent", {});
    const throughEnv = await audit(await manifests({}), config, spawnCli, {
      SSH_AUTH_SOCK: socket,
    });
    assert.equal(throughEnv.exitCode, 0, throughEnv.stderr);
    assert.deepEqual(
      throughEnv.report.nodes.map((n) => n.status),
      ["clean", "clean", "clean"],
    );
    // The manifest names the agent, the environment names none that works; the jump host's own
    // ssh reads its IdentityAgent from the ssh_config.
    const named = await audit(
      await manifests({ identity_agent: socket }),
      await sshConfig("agent-named", { jumpAgent: socket }),
      spawnCli,
      { SSH_AUTH_SOCK: path.join(agentDir, "no-agent.sock") },
    );
    assert.equal(named.exitCode, 0, named.stderr);
    assert.deepEqual(
      named.report.nodes.map((n) => n.status),
      ["clean", "clean", "clean"],
    );
  });
});
