// ssh/action.yml's script, run by bash as a runner runs it: the key, a certificate (text or a file a
// previous step wrote) and the runner's agent, in the ssh_config it writes.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { execa } from "execa";
import { parse } from "yaml";
import { REPO_ROOT } from "../support/cli.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();
const CERTIFICATE = "ssh-ed25519-cert-v01@openssh.com AAAAexample audit";

async function writeConfig(env: Record<string, string>) {
  const action = parse(await readFile(path.join(REPO_ROOT, "ssh/action.yml"), "utf8")) as {
    runs: { steps: { run: string }[] };
  };
  const workspace = await tree({ "fleet-manifests/known_hosts": "web-01 ssh-ed25519 AAAA\n" });
  const temp = await tree();
  const run = await execa("bash", ["-e", "-c", action.runs.steps[0]!.run], {
    cwd: workspace,
    reject: false,
    extendEnv: false,
    env: {
      PATH: process.env.PATH!,
      RUNNER_TEMP: temp,
      GITHUB_OUTPUT: path.join(temp, "output"),
      SSH_KEY: "",
      SSH_KEY_FILE: "",
      CERTIFICATE: "",
      CERTIFICATE_FILE: "",
      KNOWN_HOSTS: "",
      SSH_CONFIG: "",
      SSH_CONFIG_FILE: "",
      ...env,
    },
  });
  const config = await readFile(path.join(temp, "ssh", "config"), "utf8").catch(() => "");
  return { run, config, temp, workspace };
}

describe("ssh/action.yml: key, certificate and agent", () => {
  it("passes a certificate given as text as CertificateFile, beside the key", async () => {
    const { run, config, temp } = await writeConfig({ SSH_KEY: "KEY", CERTIFICATE });
    assert.equal(run.exitCode, 0, run.stdout + run.stderr);
    const dir = path.join(temp, "ssh");
    assert.match(
      config,
      new RegExp(
        `^Host \\*\\n  IdentityFile ${dir}/id\\n  IdentitiesOnly yes\\n  CertificateFile ${dir}/id-cert\\.pub\\n`,
        "m",
      ),
    );
    assert.equal(await readFile(path.join(dir, "id-cert.pub"), "utf8"), `${CERTIFICATE}\n`);
  });

  it("takes the key and certificate from files a previous step wrote, and refuses a path that is none", async () => {
    const dir = await tree({ "cert.pub": `${CERTIFICATE}\n`, key: "KEY\n" });
    const signed = path.join(dir, "cert.pub");
    const { run, config, temp } = await writeConfig({
      SSH_KEY_FILE: path.join(dir, "key"),
      CERTIFICATE_FILE: signed,
    });
    assert.equal(run.exitCode, 0, run.stdout + run.stderr);
    assert.match(config, new RegExp(`\n {2}IdentityFile ${dir}/key\n {2}IdentitiesOnly yes\n`));
    assert.match(config, /\n {2}CertificateFile .*\/id-cert\.pub\n/);
    assert.equal(await readFile(path.join(temp, "ssh", "id-cert.pub"), "utf8"), `${CERTIFICATE}\n`);
    const missing = await writeConfig({ SSH_KEY: "KEY", CERTIFICATE_FILE: `${signed}.gone` });
    assert.equal(missing.run.exitCode, 1);
    assert.match(
      missing.run.stdout,
      /^::error::certificate-file .*cert\.pub\.gone is not a file$/m,
    );
  });

  it("with no key, uses the runner's agent: no IdentityFile, so ssh asks SSH_AUTH_SOCK; with neither, says so", async () => {
    const socket = path.join(await tree(), "agent.sock");
    await writeFile(socket, "");
    const { run, config } = await writeConfig({ SSH_AUTH_SOCK: socket });
    assert.equal(run.exitCode, 0, run.stdout + run.stderr);
    assert.doesNotMatch(config, /IdentityFile|IdentitiesOnly|CertificateFile/);
    assert.match(config, /StrictHostKeyChecking yes/);
    const none = await writeConfig({});
    assert.equal(none.run.exitCode, 1);
    assert.match(none.run.stdout, /^::error::No SSH key: .*SSH_AUTH_SOCK/m);
  });
});
