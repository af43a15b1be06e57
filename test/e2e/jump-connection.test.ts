// One authenticated connection per jump host for the run, over real sshd: its shared connection
// killed mid-run, a user's ssh_config that multiplexes already, a jump host that refuses
// forwarding channels. Each time every node is audited or reported in ssh's words, the change said
// once, nothing left running and no control socket left. Needs root.
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { auditReport, jumpTrees } from "../support/audited-fleet.js";
import { spawnCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";

const crowd = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => `c-${String(from + i).padStart(2, "0")}`);
// Their sessions print the probe's output, then wait for RELEASE to exist before they end: an
// audit of them is still running when a test acts on it.
const HELD = crowd(1, 12);
const CROWD = crowd(13, 6);
const WALLED = ["w-01", "w-02", "w-03"];
const tree = jumpTrees();
// Where the held hosts' sessions look for RELEASE (as the audit user: the directory is 0755).
const held = mkdtempSync(path.join(tmpdir(), "qm-e2e-held-"));
chmodSync(held, 0o755);
const RELEASE = path.join(held, "release");

/** This machine's processes: pid and arguments. */
async function processes(): Promise<{ pid: number; argv: string[] }[]> {
  const found = [];
  for (const pid of (await readdir("/proc")).filter((name) => /^\d+$/.test(name))) {
    const line = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (line) found.push({ pid: Number(pid), argv: line.replace(/\0$/, "").split("\0") });
  }
  return found;
}

describe("one connection per jump host", () => {
  let fleet: TestFleet;
  /** A temp directory of the CLI's own: what it leaves there is what a run leaves behind. */
  let tmp: string;

  before(async () => {
    fleet = await startFleet([
      { name: "jump-01", sshdOptions: ["MaxStartups 4:50:8", "LogLevel VERBOSE"] },
      ...HELD.map((name) => ({
        name,
        behind: "jump-01",
        probeFilter: `{ cat; while [ ! -e ${RELEASE} ]; do sleep 0.1; done; }`,
      })),
      ...CROWD.map((name) => ({ name, behind: "jump-01" })),
      { name: "jump-02", sshdOptions: ["AllowTcpForwarding no"] },
      ...WALLED.map((name) => ({ name, behind: "jump-02" })),
    ]);
  });
  after(async () => {
    await fleet?.stop();
    rmSync(held, { recursive: true, force: true });
  });

  const manifests = (names: readonly string[]) =>
    tree(Object.fromEntries(names.map((name) => [`nodes/${name}.yaml`, "{}\n"])));

  /**
   * The built CLI's audit in a process of its own; `during` runs while it does, told whether it
   * still runs.
   */
  const audit = async (
    tree: string,
    sshConfig: string,
    extra: string[] = [],
    during?: (running: () => boolean) => Promise<void>,
  ) => {
    tmp = await mkdtemp(path.join(tmpdir(), "qm-e2e-tmp-"));
    let running = true;
    const [run] = await Promise.all([
      auditReport(tree, sshConfig, {
        extra,
        cli: (args) => spawnCli(args, { env: { TMPDIR: tmp } }),
      }).finally(() => (running = false)),
      during?.(() => running),
    ]);
    return run;
  };

  /** Nothing of the run is left: no process names its temp directory, nothing is in it. */
  const nothingLeft = async () => {
    assert.deepEqual(
      (await processes()).filter((p) => p.argv.some((arg) => arg.includes(tmp))),
      [],
    );
    assert.deepEqual(await readdir(tmp, { recursive: true }), []);
    await rm(tmp, { recursive: true, force: true });
  };

  const logins = async (jump: string) => {
    const before = (await fleet.sshdLog(jump)).length;
    return async () =>
      (await fleet.sshdLog(jump)).slice(before).match(/^Accepted publickey for /gm)?.length ?? 0;
  };

  /**
   * Once `count` sessions run through channels of the shared connection (each an ssh given its
   * control socket), its master (the ssh given ControlMaster=yes) is killed with SIGKILL and the
   * held sessions are let go.
   */
  const killMasterAt = (count: number) => async (running: () => boolean) => {
    const ssh = (p: { argv: string[] }, option: string) =>
      p.argv[0] === "ssh" && p.argv.includes(option) && p.argv.some((arg) => arg.includes(tmp));
    while (running()) {
      const all = await processes();
      const master = all.find((p) => ssh(p, "ControlMaster=yes"));
      if (master && all.filter((p) => ssh(p, "ControlMaster=no")).length >= count) {
        process.kill(master.pid, "SIGKILL");
        break;
      }
      await sleep(20);
    }
    await writeFile(RELEASE, "");
  };

  test("the shared connection killed while its channels run: every node audited or reported in ssh's words, said once, nothing left", async () => {
    const jumpLogins = await logins("jump-01");
    const { report, exitCode, stderr } = await audit(
      await manifests(HELD),
      fleet.sshConfig,
      ["--concurrency", "6"],
      killMasterAt(4),
    );
    assert.equal(report.nodes.length, HELD.length);
    for (const node of report.nodes) {
      if (node.status === "clean") continue;
      // ssh's own words, with the class they read as.
      assert.ok(node.error && node.errorClass, JSON.stringify(node));
    }
    assert.equal(
      stderr.match(
        /jump host jump-01: its shared connection ended mid-run \(.+\); its nodes connect one by one/g,
      )?.length,
      1,
      stderr,
    );
    // The nodes left connected one by one: more logins than the one shared connection's.
    assert.ok((await jumpLogins()) > 1);
    assert.ok(exitCode === 0 || exitCode === 4, stderr);
    await nothingLeft();
  });

  test("an ssh_config that multiplexes the jump host's connections itself: left to it, said once, every node audited", async () => {
    const tree = await manifests(CROWD);
    const config = path.join(tree, "ssh_config");
    // The fleet's file sets no ControlMaster or ControlPath: these lines give them to jump-01.
    await writeFile(
      config,
      `Include ${fleet.sshConfig}\nHost jump-01\n  ControlMaster auto\n  ControlPath ${tree}/%C\n  ControlPersist 2\n`,
    );
    const { report, exitCode, stderr } = await audit(tree, config);
    assert.equal(exitCode, 0, stderr);
    assert.deepEqual(
      report.nodes.map((n) => n.status),
      Array(6).fill("clean"),
    );
    assert.equal(
      stderr.match(
        /jump host jump-01: the ssh configuration multiplexes its connections itself; its nodes connect one by one/g,
      )?.length,
      1,
      stderr,
    );
    await nothingLeft();
  });

  test("a jump host that refuses forwarding channels: said once, each node reported in ssh's own words, nothing left", async () => {
    const { report, exitCode, stderr } = await audit(await manifests(WALLED), fleet.sshConfig);
    assert.equal(exitCode, 4, stderr);
    // ssh's ProxyJump says it in its first line, and the line its failure class reads after it.
    for (const node of report.nodes) {
      assert.equal(node.status, "unreachable");
      assert.match(
        node.error ?? "",
        /^(channel 0: open failed: administratively prohibited: open failed|kex_exchange_identification: Connection closed by remote host)$/,
      );
    }
    assert.deepEqual(
      report.nodes.map((n) => n.name),
      WALLED,
    );
    assert.equal(
      stderr.match(
        /jump host jump-02: it refuses forwarding channels \(channel \d+: open failed: administratively prohibited: open failed\); its nodes connect one by one/g,
      )?.length,
      1,
      stderr,
    );
    await nothingLeft();
  });
});
