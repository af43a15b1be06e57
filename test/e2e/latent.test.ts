// Latent drift on real test hosts: a sysctl value the boot-time sysctl pass sets is reported with
// the value it will take, and after that pass really runs the next audit sees that value; a
// reboot-required marker is reported on the running kernel. Needs root.
import assert from "node:assert/strict";
import { readFile, rm } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { stringify } from "yaml";
import type { NodeResult, Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { removeTree, writeTree } from "../support/tree.js";

const HOST = "latent-01";
const PERSISTED = "/etc/sysctl.d/99-qm-latent.conf";
// Per network namespace, so the host's own: applying them leaves the machine alone.
const SEEDED = { "net.ipv4.ip_forward": "1", "net.ipv4.conf.all.accept_redirects": "0" };
const CONTROL = "net.ipv4.ip_default_ttl";
const MARKED = "latent-02";

describe("latent drift on test hosts", () => {
  let fleet: TestFleet;
  let manifests: string;

  async function audit(name = HOST): Promise<{ exitCode: number; node: NodeResult }> {
    const out = `${manifests}-report.json`;
    const result = await runCli([
      ...["audit", "--nodes", name, "--format", "json", "--out", out],
      ...["--manifests", manifests, "--ssh-config", fleet.sshConfig],
    ]);
    const report = JSON.parse(await readFile(out, "utf8")) as Report;
    return { exitCode: result.exitCode, node: report.nodes.find((n) => n.name === name)! };
  }

  before(async () => {
    fleet = await startFleet([
      {
        name: HOST,
        sysctls: { "net.ipv4.ip_forward": "0", "net.ipv4.conf.all.accept_redirects": "1" },
        files: {
          [PERSISTED]: {
            contents: `# seeded\n${Object.entries(SEEDED)
              .map(([k, v]) => `${k} = ${v}`)
              .join("\n")}\n`,
          },
        },
      },
      {
        // A package upgrade asked for a reboot on this boot (Debian's marker and its list).
        name: MARKED,
        files: {
          "/run/reboot-required": { contents: "*** System restart required ***\n" },
          "/run/reboot-required.pkgs": { contents: "linux-image-qm\nlibssl3\n" },
        },
      },
    ]);
    const live = async (key: string) => (await fleet.exec(HOST, `sysctl -n ${key}`)).trim();
    const declared = {
      "net.ipv4.ip_forward": await live("net.ipv4.ip_forward"),
      "net.ipv4.conf.all.accept_redirects": await live("net.ipv4.conf.all.accept_redirects"),
      [CONTROL]: await live(CONTROL),
    };
    manifests = await writeTree({
      "fleet.yaml": "{}\n",
      [`nodes/${HOST}.yaml`]: stringify({ system: { sysctl_parameters: declared } }),
      [`nodes/${MARKED}.yaml`]: stringify({
        system: { kernel_version: (await fleet.exec(MARKED, "uname -r")).trim() },
      }),
    });
  });

  after(async () => {
    await fleet?.stop();
    if (manifests) {
      await removeTree(manifests);
      await rm(`${manifests}-report.json`, { force: true });
    }
  });

  test("each seeded key is reported once with the value it will take; the control is not; then the pass sets them", async () => {
    const first = await audit();
    assert.equal(first.exitCode, 0, JSON.stringify(first.node));
    assert.equal(first.node.status, "clean");
    const predicted = first.node.drift
      .map((d) => [d.key, d.latent?.becomes, d.latent?.because])
      .sort();
    assert.deepEqual(predicted, [
      ["net.ipv4.conf.all.accept_redirects", "0", `${PERSISTED}:3`],
      ["net.ipv4.ip_forward", "1", `${PERSISTED}:2`],
    ]);

    // The boot's sysctl pass, for the seeded file only: `sysctl --system` would also set this
    // machine's global fs.* keys from the shared /usr/lib/sysctl.d.
    await fleet.exec(HOST, `sysctl -q -p ${PERSISTED}`);
    const second = await audit();
    const seen = new Map(second.node.drift.map((d) => [d.key, d.live]));
    for (const [key, becomes] of predicted)
      assert.equal(seen.get(key as string), becomes, JSON.stringify(second.node.drift));
    assert.equal(second.exitCode, 1);
    assert.equal(seen.has(CONTROL), false);
  });

  test("a reboot-required marker of this boot: the running kernel item says so, with the packages", async () => {
    const { exitCode, node } = await audit(MARKED);
    assert.equal(exitCode, 0, JSON.stringify(node));
    assert.equal(node.status, "clean");
    assert.deepEqual(
      node.drift.map((d) => [d.domain, d.declared === d.live, d.latent?.after, d.latentPolicy]),
      [["kernel", true, "reboot", "ticket"]],
    );
    assert.match(
      node.drift[0]!.latent!.because,
      /\/run\/reboot-required \(libssl3, linux-image-qm\)/,
    );
  });
});
