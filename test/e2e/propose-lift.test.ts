// Overrides never pile up, end to end: accepts on real sshd test hosts, run after run, each write a
// few node overrides of a group's value until most of the group carries the same one; the next
// run opens one PR that lifts the value into the group file, removes those overrides and keeps the
// old value in the others' files. manifest-diff (the real CLI) shows no node's effective declared
// state changing, and after the merge every node audits clean as before. The real git server and
// the OpenAPI-checked GitHub double. Needs root.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import { runCli } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_propose_lift";
const M = "fleet-manifests";
const NAMES = Array.from({ length: 6 }, (_, i) => `app-0${i + 1}`);
const GROUP = `${M}/groups/app.yaml`;
const KEY = "net.ipv4.tcp_fin_timeout";
const groupFile = (fin: number) =>
  `system:\n  sysctl_parameters:\n    ${KEY}: ${fin}   # app default\n    net.ipv4.tcp_syn_retries: 6\n`;
const override = (fin: number) =>
  `groups: [app]\nsystem:\n  sysctl_parameters:\n    ${KEY}: ${fin}\n`;

const FILES: Record<string, string> = {
  [`${M}/fleet.yaml`]: "policy:\n  sysctl: { on_drift: accept }\n",
  [GROUP]: groupFile(60),
  ...Object.fromEntries(NAMES.map((n) => [`${M}/nodes/${n}.yaml`, "groups: [app]\n"])),
};

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-lift-",
  files: { "README.md": "Fleet manifests.\n", ...FILES },
  setup: async () => {
    fleet = await startFleet(
      NAMES.map((name, i) => ({
        name,
        sysctls: { [KEY]: i < 2 ? "30" : "60", "net.ipv4.tcp_syn_retries": "6" },
      })),
      { prefix: "qml" },
    );
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig);
const openPulls = () => forge.double.pulls().filter((p) => p.state === "open");
const theOpenPull = () => {
  const open = openPulls();
  assert.equal(open.length, 1, open.map((p) => p.title).join("\n"));
  return open[0]!;
};

describe("overrides never pile up", () => {
  it("two runs' accepts of a few drifted nodes each are node overrides", async () => {
    for (const [name, drifted] of [
      ["run-1", ["app-01", "app-02"]],
      ["run-2", ["app-03", "app-04"]],
    ] as const) {
      if (name === "run-2")
        for (const node of drifted)
          await fleet.exec(node, `echo 30 > /proc/sys/net/ipv4/tcp_fin_timeout`);
      const { file, report } = await run.audit(name, 1);
      assert.deepEqual(
        report.nodes.filter((n) => n.drift.length).map((n) => n.name),
        drifted,
      );
      await run.propose(["--report", file]);
      const pull = theOpenPull();
      assert.match(pull.head, /^quartermaster--accept--/);
      assert.deepEqual(
        await forge.changedFiles(pull.head),
        drifted.map((n) => `${M}/nodes/${n}.yaml`),
      );
      await forge.double.mergePull(pull.number);
    }
  });

  it("the next run lifts the value most nodes override into the group file: one PR, no node's effective state changes", async () => {
    const { file, report } = await run.audit("run-3", 0);
    assert.deepEqual(
      report.nodes.map((n) => n.drift),
      NAMES.map(() => []),
    );
    await run.propose(["--report", file]);
    const lift = theOpenPull();
    assert.match(lift.head, /^quartermaster--lift--sysctl--net-ipv4-tcp-fin-timeout--/);
    assert.equal(lift.title, `Lift repeated overrides into ${GROUP}: sysctl ${KEY}`);
    assert.match(
      lift.body!,
      /declares `net\.ipv4\.tcp_fin_timeout` as `60` for 6 nodes, and 4 of them override it with `30` in their own files/,
    );

    const dir = await forge.checkout();
    await execa("git", ["-C", dir, "checkout", "--quiet", `origin/${lift.head}`]);
    const read = (name: string) => readFile(path.join(dir, name), "utf8");
    assert.equal(await read(GROUP), groupFile(30));
    for (const [i, name] of NAMES.entries())
      assert.equal(
        await read(`${M}/nodes/${name}.yaml`),
        i < 4 ? "groups: [app]\n" : override(60),
        name,
      );
    const diff = await runCli(
      ["manifest-diff", "--manifests", path.join(dir, M), "--base", "origin/main"],
      { cwd: dir },
    );
    assert.equal(diff.exitCode, 0, diff.stderr);
    assert.match(diff.stdout, /No node's effective declared state changes\./);

    await forge.double.mergePull(lift.number);
  });

  it("after the merge every node audits as before, and nothing more is proposed", async () => {
    const { file, report } = await run.audit("run-4", 0);
    assert.deepEqual(
      report.nodes.map((n) => [n.name, n.status]),
      NAMES.map((n) => [n, "clean"]),
    );
    const result = await run.propose(["--report", file]);
    assert.doesNotMatch(result.stdout, /^(open|update|close) /m, result.stdout);
    assert.deepEqual(openPulls(), []);
  });
});
