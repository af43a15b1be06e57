// CPU of one session to a test host, each end apart: the ssh client, the host's sshd (its own and
// its reaped children's: session, shell, probe) and, for an audit, the auditor in this process;
// for a production-like sshd (startFleet's productionSshd) and a test host's, in one run.
// Usage: npx tsx bench/test-host-session.ts [sessions=20]
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { runCli } from "../test/support/cli.js";
import { startFleet } from "../test/support/hosts.js";

const sessions = Number(process.argv[2] ?? 20);
const TICK_MS = 10;

/** user+system ms of a process (`self`: this one), and of its reaped children. */
function cpuOf(pid: number | "self"): { own: number; children: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat
    .slice(stat.lastIndexOf(")") + 2)
    .split(" ")
    .map(Number);
  // Fields 14-17 of proc(5), counted from field 3 here.
  return { own: (f[11]! + f[12]!) * TICK_MS, children: (f[13]! + f[14]!) * TICK_MS };
}

/** Per-session CPU (ms) of each end, `sessions` sessions one at a time, after one to warm up. */
async function measure(
  label: string,
  sshdPid: number,
  once: () => Promise<unknown>,
): Promise<number> {
  await once();
  const [sshd0, self0, node0] = [cpuOf(sshdPid), cpuOf("self"), process.cpuUsage()];
  for (let i = 0; i < sessions; i++) await once();
  const [sshd1, self1, node1] = [cpuOf(sshdPid), cpuOf("self"), process.cpuUsage(node0)];
  const per = (ms: number) => (ms / sessions).toFixed(1).padStart(6);
  const sshd = sshd1.own + sshd1.children - sshd0.own - sshd0.children;
  const client = self1.children - self0.children;
  const auditor = (node1.user + node1.system) / 1000;
  console.log(
    `  ${label.padEnd(14)} ms/session: sshd side ${per(sshd)}  ssh client ${per(client)}  auditor ${per(auditor)}  all ${per(sshd + client + auditor)}`,
  );
  return sshd + client + auditor;
}

/** The floor and a one-node audit against one host of a fleet started with `productionSshd`. */
async function sessionCosts(productionSshd: boolean): Promise<{ floor: number; audit: number }> {
  const fleet = await startFleet([{ name: "session-01" }], { prefix: "qmbs", productionSshd });
  const work = await mkdtemp(path.join(os.tmpdir(), "qm-bench-session-"));
  try {
    const pidFile = path.join(fleet.dir, "hosts/session-01/sshd.pid");
    const sshdPid = Number(readFileSync(pidFile, "utf8"));
    const manifests = path.join(work, "manifests");
    await mkdir(path.join(manifests, "nodes"), { recursive: true });
    await writeFile(path.join(manifests, "nodes/session-01.yaml"), "{}\n");
    console.log(productionSshd ? "production sshd (re-exec, default kex)" : "test host sshd");
    const floor = await measure("ssh host true", sshdPid, () =>
      execa("ssh", ["-F", fleet.sshConfig, "session-01", "true"]),
    );
    const audit = await measure("audit (1 node)", sshdPid, async () => {
      const out = path.join(work, "report.json");
      const args = ["audit", "--manifests", manifests, "--ssh-config", fleet.sshConfig];
      const r = await runCli([...args, "--format", "json", "--out", out]);
      if (r.exitCode > 1) throw new Error(r.stderr);
    });
    return { floor, audit };
  } finally {
    await fleet.stop();
    await rm(work, { recursive: true, force: true });
  }
}

console.log(
  `${sessions} sessions each, one at a time, to one host; CPU user+system, in-process CLI`,
);
const production = await sessionCosts(true);
const test = await sessionCosts(false);
console.log(
  `test host / production sshd: floor ${(test.floor / production.floor).toFixed(2)}, audit ${(test.audit / production.audit).toFixed(2)}`,
);
