// Ten seeded latent conditions on real test hosts, each kind the audit predicts (a sysctl the boot
// pass sets, a reboot-required marker, a unit needing a daemon-reload, one running since before its
// file changed, units mapping a replaced library), beside clean controls: each is reported once
// with the value it will take; then each event really happens (the seeded file's sysctl pass, a
// reboot that moves the boot time, daemon-reload and restart on the systemd PID 1 host) and the
// second audit sees the predicted values. Kernel modules are left out: a test host shares this
// machine's kernel, which has no /proc/modules; kernel-modules-vm.test.ts boots a VM for them.
// Needs root and gcc.
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { stringify } from "yaml";
import type { NodeResult, Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { buildLibrary, type TestLibrary } from "../support/library.js";
import { removeTree, writeTree } from "../support/tree.js";

const HOST = "seeded-01";
const SYSTEMD_HOST = "seeded-sd";
const PERSISTED = "/etc/sysctl.d/99-qm-seeded.conf";
// Per network namespace, so the host's own: live value, then the value the seeded file sets.
const SEEDED: Record<string, [string, string]> = {
  "net.ipv4.ip_forward": ["0", "1"],
  "net.ipv4.conf.all.accept_redirects": ["1", "0"],
  "net.ipv4.conf.all.send_redirects": ["1", "0"],
  "net.ipv4.tcp_syncookies": ["1", "0"],
  "net.core.somaxconn": ["4096", "1024"],
};
const CONTROL = "net.ipv4.ip_default_ttl";
const EDITED = "qm-edited.service"; // its unit file edited after it started: daemon-reload, restart
const MAPPING = ["qm-lib-1.service", "qm-lib-2.service"]; // map a library replaced since
const CLEAN = "qm-clean.service";
const unitText = (description: string, environment = "") =>
  `[Unit]\nDescription=${description}\nDefaultDependencies=no\n\n[Service]\n${environment}ExecStart=/bin/sleep infinity\n`;

describe("ten seeded latent conditions, then the events they predict", () => {
  let fleet: TestFleet;
  let manifests: string;
  let library: TestLibrary | undefined;

  async function audit(): Promise<{ exitCode: number; nodes: Map<string, NodeResult> }> {
    const out = `${manifests}-report.json`;
    const result = await runCli([
      ...["audit", "--format", "json", "--out", out],
      ...["--manifests", manifests, "--ssh-config", fleet.sshConfig],
    ]);
    const report = JSON.parse(await readFile(out, "utf8")) as Report;
    return { exitCode: result.exitCode, nodes: new Map(report.nodes.map((n) => [n.name, n])) };
  }

  before(async () => {
    fleet = await startFleet([
      {
        name: HOST,
        sysctls: Object.fromEntries(Object.entries(SEEDED).map(([k, [live]]) => [k, live])),
        files: {
          [PERSISTED]: {
            contents: Object.entries(SEEDED)
              .map(([k, [, boot]]) => `${k} = ${boot}\n`)
              .join(""),
          },
          "/run/reboot-required": { contents: "*** System restart required ***\n" },
          "/run/reboot-required.pkgs": { contents: "linux-image-qm\n" },
        },
      },
      {
        name: SYSTEMD_HOST,
        systemd: true,
        files: {
          "/etc/sudoers.d/qm-audit": {
            contents: "qm-audit ALL=(root) NOPASSWD: /bin/sh\n",
            mode: "0440",
          },
        },
      },
    ]);
    library = await buildLibrary(fleet.dir);
    const units: Record<string, string> = {
      [CLEAN]: unitText("clean"),
      [EDITED]: unitText("edited"),
      ...Object.fromEntries(
        MAPPING.map((name) => [name, unitText(name, `Environment=LD_PRELOAD=${library!.path}\n`)]),
      ),
    };
    for (const [name, text] of Object.entries(units))
      await writeFile(path.join(fleet.dir, name), text);
    await fleet.exec(
      SYSTEMD_HOST,
      [
        ...Object.keys(units).map((name) => `cp ${fleet.dir}/${name} /etc/systemd/system/${name}`),
        "systemctl daemon-reload",
        `systemctl start ${Object.keys(units).join(" ")}`,
      ].join(" && "),
    );
    const live = async (key: string) => (await fleet.exec(HOST, `sysctl -n ${key}`)).trim();
    manifests = await writeTree({
      "fleet.yaml": "{}\n",
      [`nodes/${HOST}.yaml`]: stringify({
        system: {
          kernel_version: (await fleet.exec(HOST, "uname -r")).trim(),
          sysctl_parameters: Object.fromEntries(
            await Promise.all(
              [...Object.keys(SEEDED), CONTROL].map(async (key) => [key, await live(key)]),
            ),
          ),
        },
      }),
      [`nodes/${SYSTEMD_HOST}.yaml`]: stringify({
        ssh: { become: "sudo" },
        systemd: { units: Object.keys(units).map((name) => ({ name, active: true })) },
      }),
    });
    // The conditions: the unit file edited past the clocks' allowance, the library replaced.
    await fleet.exec(
      SYSTEMD_HOST,
      `sleep 3 && printf '# edited\\n' >> /etc/systemd/system/${EDITED}`,
    );
    await library.replace();
  });

  after(async () => {
    await fleet?.stop();
    await library?.remove();
    if (manifests) {
      await removeTree(manifests);
      await rm(`${manifests}-report.json`, { force: true });
    }
  });

  test("each is reported once with the value it will take, the controls not; after the events the second audit sees at least 95% of them", async () => {
    const first = await audit();
    assert.equal(first.exitCode, 0, JSON.stringify([...first.nodes.values()]));
    const predicted = [...first.nodes.values()].flatMap((node) =>
      node.drift.map((d) => ({ node: node.name, key: d.key, declared: d.declared, ...d.latent! })),
    );
    assert.ok(
      [...first.nodes.values()].every(
        (n) => n.status === "clean" && n.drift.every((d) => d.latent),
      ),
      "every item is latent: the hosts are clean today",
    );
    assert.deepEqual(
      predicted.map((p) => `${p.node} ${p.key} ${p.after}`).sort(),
      [
        ...Object.keys(SEEDED).map((key) => `${HOST} ${key} reboot`),
        `${HOST} kernel_version reboot`,
        `${SYSTEMD_HOST} ${EDITED}:loaded daemon-reload`,
        `${SYSTEMD_HOST} ${EDITED}:running restart`,
        ...MAPPING.map((name) => `${SYSTEMD_HOST} ${name}:libraries restart`),
      ].sort(),
    );
    for (const [key, [, boot]] of Object.entries(SEEDED))
      assert.equal(predicted.find((p) => p.key === key)?.becomes, boot, key);
    const kernel = predicted.find((p) => p.key === "kernel_version")!;
    assert.equal(kernel.becomes, kernel.declared, "no newer kernel: the marker's reboot keeps it");
    for (const name of MAPPING)
      assert.equal(predicted.find((p) => p.key === `${name}:libraries`)?.because, library!.path);

    // The events. The boot's sysctl pass for the seeded file only (`sysctl --system` would set
    // this machine's own fs.* keys from the shared /usr/lib/sysctl.d), then a reboot as the probe
    // sees it; on the systemd host, a daemon-reload and the restarts.
    await fleet.exec(HOST, `sysctl -q -p ${PERSISTED}`);
    await fleet.reboot(HOST);
    await fleet.exec(
      SYSTEMD_HOST,
      `systemctl daemon-reload && systemctl restart ${[EDITED, ...MAPPING].join(" ")}`,
    );

    const second = await audit();
    const seen = (node: string, key: string) =>
      second.nodes.get(node)!.drift.find((d) => d.key === key);
    const held = predicted.filter((p) => {
      const item = seen(p.node, p.key);
      // A sysctl now has its boot value; any other condition is gone: the kernel running is the
      // one predicted (the declared one), the units run what is on disk.
      if (p.key in SEEDED) return item !== undefined && !item.latent && item.live === p.becomes;
      return item === undefined;
    });
    assert.ok(
      held.length / predicted.length >= 0.95,
      `${held.length} of ${predicted.length} as predicted: ${JSON.stringify([...second.nodes.values()].map((n) => n.drift))}`,
    );
    assert.equal(held.length, predicted.length);
    assert.equal(seen(HOST, CONTROL), undefined);
    assert.equal(second.nodes.get(SYSTEMD_HOST)!.status, "clean");
  });
});
