// Kernel modules' latent drift on a real kernel: a VM (test/support/vm.ts), since this machine's
// kernel, shared by the namespace test hosts, has no loadable modules. Seeded at run time: a module
// loaded by hand that no modules-load.d file lists, one a modules-load.d file lists but unloaded,
// one a modules-load.d file lists that modprobe.d blacklists, loaded by hand; beside a listed
// loaded control and an absent one. Each is reported once with the value it will take; then the
// VM really reboots and the second audit sees each predicted value; declared then as it runs, the
// freshly booted VM has no latent finding at all. Needs root and qemu.
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { parse, stringify } from "yaml";
import type { NodeResult, Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { removeTree, writeTree } from "../support/tree.js";
import { startVm, type TestVm } from "../support/vm.js";

const NODE = "modules-vm";
const LOAD = "/etc/modules-load.d/qm.conf";
const BLACKLIST = "/etc/modprobe.d/qm.conf";
// Declared loaded, loaded by hand, listed nowhere: gone after the reboot.
const BY_HAND = "dummy";
// Declared absent, listed in modules-load.d, unloaded by hand: back after the reboot.
const LISTED = "nlmon";
// Declared loaded, listed but blacklisted, loaded by hand: the boot's modprobe -b skips it.
const BLACKLISTED = "ifb";
// Controls: listed and loaded at boot; absent and listed nowhere (not even in the image).
const CONTROL = "veth";
const ABSENT_CONTROL = "floppy";

describe("kernel modules on a real kernel: latent findings, then a real reboot", () => {
  let vm: TestVm;
  let manifests: string;

  async function audit(): Promise<{ exitCode: number; node: NodeResult; stderr: string }> {
    const out = `${manifests}-report.json`;
    const result = await runCli([
      ...["audit", "--format", "json", "--out", out],
      ...["--manifests", manifests, "--ssh-config", vm.sshConfig],
    ]);
    const report = JSON.parse(await readFile(out, "utf8")) as Report;
    return { exitCode: result.exitCode, node: report.nodes[0]!, stderr: result.stderr };
  }

  before(async () => {
    vm = await startVm(
      {
        name: NODE,
        modules: [BY_HAND, LISTED, BLACKLISTED, CONTROL],
        files: {
          [LOAD]: `# modules this host needs at boot\n${LISTED}\n${CONTROL}\n${BLACKLISTED}\n`,
          [BLACKLIST]: `blacklist ${BLACKLISTED}\n`,
        },
      },
      { prefix: "qm-vmmod" },
    );
    manifests = await writeTree({
      "fleet.yaml": "{}\n",
      [`nodes/${NODE}.yaml`]: stringify({
        system: {
          kernel_modules: {
            loaded: [BY_HAND, BLACKLISTED, CONTROL],
            absent: [LISTED, ABSENT_CONTROL],
          },
        },
      }),
    });
  });

  after(async () => {
    await vm?.stop();
    if (manifests) {
      await removeTree(manifests);
      await rm(`${manifests}-report.json`, { force: true });
    }
  });

  test("each seeded module is reported once with the state it will take, and the reboot gives it", async (t) => {
    const booted = (await vm.exec("cut -d' ' -f1 /proc/modules")).split("\n").sort();
    assert.ok(booted.includes(LISTED) && booted.includes(CONTROL), booted.join(" "));
    assert.ok(!booted.includes(BLACKLISTED), "the boot's modprobe -b applies the blacklist");
    await vm.exec(`modprobe ${BY_HAND} && modprobe ${BLACKLISTED} && rmmod ${LISTED}`);

    const first = await audit();
    assert.equal(first.exitCode, 0, first.stderr);
    assert.equal(first.node.status, "clean", JSON.stringify(first.node));
    const predicted = first.node.drift.map((d) => [d.key, d.declared, d.live, d.latent]);
    assert.deepEqual(predicted, [
      [
        BY_HAND,
        "loaded",
        "loaded",
        { after: "reboot", becomes: "absent", because: "no modules-load.d file loads it" },
      ],
      [
        BLACKLISTED,
        "loaded",
        "loaded",
        { after: "reboot", becomes: "absent", because: `${BLACKLIST}:1` },
      ],
      [LISTED, "absent", "absent", { after: "reboot", becomes: "loaded", because: `${LOAD}:2` }],
    ]);

    await vm.reboot();
    const second = await audit();
    assert.equal(second.node.status, "drift", JSON.stringify(second.node));
    assert.deepEqual(
      second.node.drift.map((d) => [d.key, d.live, d.latent]),
      first.node.drift.map((d) => [d.key, d.latent!.becomes, undefined]),
      "each module is now what the first audit said it would become; the controls stay clean",
    );

    // Freshly booted, declared as it runs: every loaded module (the network driver stack among
    // them: drivers, and modules they hold) with no latent finding, in the snapshot or the audit.
    const snapshot = await runCli([
      ...["snapshot", "--node", NODE, "--category", "kernel_modules"],
      ...["--manifests", manifests, "--ssh-config", vm.sshConfig],
    ]);
    assert.equal(snapshot.exitCode, 0, snapshot.stderr);
    assert.doesNotMatch(snapshot.stdout, /will become/);
    const loaded = (await vm.exec("cut -d' ' -f1 /proc/modules")).split("\n").sort();
    const spec = parse(snapshot.stdout) as { system: { kernel_modules: { loaded: string[] } } };
    assert.deepEqual([...spec.system.kernel_modules.loaded].sort(), loaded);
    assert.ok(loaded.includes("virtio_net") && loaded.includes(LISTED), loaded.join(" "));
    await writeFile(path.join(manifests, "nodes", `${NODE}.yaml`), snapshot.stdout);
    const fresh = await audit();
    assert.deepEqual([fresh.exitCode, fresh.node.status, fresh.node.drift], [0, "clean", []]);
    t.diagnostic(
      `VM boot seconds (qemu start to first ssh answer): ${vm.bootSeconds.map((s) => s.toFixed(1)).join(", ")}`,
    );
  });
});
