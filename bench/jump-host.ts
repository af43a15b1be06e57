// A fleet only a jump host reaches, audited against the SSH floor through that jump host, every
// figure from one run. Needs root. Usage: npx tsx bench/jump-host.ts [hosts=40] [rounds=3]
// The hosts run a production-like sshd (startFleet's productionSshd); the jump host's has
// `MaxStartups 10:30:60` (the bound CIS benchmarks require: it drops unauthenticated connections
// past 10 at 30%, all past 60) and logs each login and each drop (LogLevel VERBOSE).
//
// Each round, at the audit's own sessions per jump host (its default concurrency and
// DEFAULT_MAX_CHANNELS, the smaller):
//   floor  `ssh -J jump-01 host true` to every host (the ssh_config's ProxyJump), that many at
//          once, a connection dropped at the jump host tried again at once: a login there per host;
//   audit  the built CLI's audit (`audit --format json --out`), process start to exit;
//   floor8 the floor at DEFAULT_MAX_SESSIONS at once (the limit when each node logs in there).
// For each: wall time, and the jump host's logins and dropped connections over it; for the audit,
// nodes audited of nodes and its ratio to the round's floor. Last, the best of the rounds of each
// and their ratio.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pLimit from "p-limit";
import { stringify } from "yaml";
import type { Report } from "../src/report/schema.js";
import { DEFAULT_CONCURRENCY } from "../src/runs/audit.js";
import { DEFAULT_MAX_CHANNELS, DEFAULT_MAX_SESSIONS } from "../src/transport/ssh.js";
import { bundleCliInto } from "../scripts/bundle.js";
import { startFleet } from "../test/support/hosts.js";
import { writeTree } from "../test/support/tree.js";

const arg = (index: number, fallback: number) => Number(process.argv[2 + index] ?? fallback);
const [hostCount, rounds] = [arg(0, 40), arg(1, 3)];
const sessions = Math.min(DEFAULT_CONCURRENCY, DEFAULT_MAX_CHANNELS);
const hosts = Array.from({ length: hostCount }, (_, i) => `node-${String(i + 1).padStart(3, "0")}`);

/** A process's exit status and stderr. */
const run = (file: string, args: string[]) =>
  new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    const child = spawn(file, args, { stdio: ["ignore", "ignore", "pipe"] });
    const err: Buffer[] = [];
    child.stderr.on("data", (c: Buffer) => err.push(c));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stderr: Buffer.concat(err).toString() }));
  });

console.log("bundling the CLI ...");
const cliFolder = await mkdtemp(path.join(os.tmpdir(), "qm-bench-jump-cli-"));
const CLI = await bundleCliInto(cliFolder);
const fleet = await startFleet(
  [
    { name: "jump-01", sshdOptions: ["MaxStartups 10:30:60", "LogLevel VERBOSE"] },
    ...hosts.map((name) => ({ name, behind: "jump-01" })),
  ],
  { prefix: "qmj", productionSshd: true },
);

/** The jump host's logins and dropped connections from here on. */
async function jumpLog() {
  const from = (await fleet.sshdLog("jump-01")).length;
  return async () => {
    const log = (await fleet.sshdLog("jump-01")).slice(from);
    return {
      logins: log.match(/^Accepted publickey for /gm)?.length ?? 0,
      drops: log.match(/drop connection #/g)?.length ?? 0,
    };
  };
}

/** `ssh -J` to every host, `atOnce` at a time; a connection dropped before its banner, again. */
async function floor(atOnce: number): Promise<number> {
  const limit = pLimit(atOnce);
  const started = performance.now();
  await Promise.all(
    hosts.map((host) =>
      limit(async () => {
        for (let tries = 1; ; tries++) {
          const { code, stderr } = await run("ssh", ["-F", fleet.sshConfig, host, "true"]);
          if (code === 0) return;
          if (tries >= 8 || !/kex_exchange_identification|Connection closed/.test(stderr))
            throw new Error(`floor: ${host}: ${stderr.trim()}`);
        }
      }),
    ),
  );
  return performance.now() - started;
}

/** The built CLI's audit at its defaults. */
async function audit(manifests: string): Promise<{ ms: number; audited: number; nodes: number }> {
  const out = path.join(manifests, "report.json");
  const started = performance.now();
  const { stderr } = await run(process.execPath, [
    CLI,
    "audit",
    ...["--manifests", manifests, "--ssh-config", fleet.sshConfig, "--format", "json"],
    ...["--out", out],
  ]);
  const ms = performance.now() - started;
  const report = JSON.parse(await readFile(out, "utf8").catch(() => "null")) as Report | null;
  if (!report) throw new Error(`no report: ${stderr}`);
  return {
    ms,
    audited: report.summary.clean + report.summary.drifted,
    nodes: report.summary.nodes,
  };
}

const manifests = await writeTree(
  Object.fromEntries([
    ["fleet.yaml", stringify({ system: { sysctl_parameters: { "net.ipv4.ip_forward": 0 } } })],
    ...hosts.map((name) => [`nodes/${name}.yaml`, "{}\n"]),
  ]),
  "qm-bench-jump-",
);
try {
  console.log(
    `${hostCount} hosts behind one jump host (sshd MaxStartups 10:30:60), ${sessions} sessions at once, ${rounds} round(s)`,
  );
  const best = { floor: Infinity, audit: Infinity, floor8: Infinity };
  const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  for (let round = 1; round <= rounds; round++) {
    let log = await jumpLog();
    const floorMs = await floor(sessions);
    const atFloor = await log();
    log = await jumpLog();
    const audited = await audit(manifests);
    const atAudit = await log();
    best.floor = Math.min(best.floor, floorMs);
    best.audit = Math.min(best.audit, audited.ms);
    log = await jumpLog();
    const floor8Ms = await floor(DEFAULT_MAX_SESSIONS);
    const atFloor8 = await log();
    best.floor8 = Math.min(best.floor8, floor8Ms);
    console.log(
      `round ${round}  floor ${seconds(floorMs)}  logins ${atFloor.logins}  dropped ${atFloor.drops}`,
    );
    console.log(
      `round ${round}  audit ${seconds(audited.ms)}  ${(audited.ms / floorMs).toFixed(2)}x floor  audited ${audited.audited}/${audited.nodes}  logins ${atAudit.logins}  dropped ${atAudit.drops}`,
    );
    console.log(
      `round ${round}  floor8 ${seconds(floor8Ms)}  logins ${atFloor8.logins}  dropped ${atFloor8.drops}  audit ${(audited.ms / floor8Ms).toFixed(2)}x it`,
    );
  }
  console.log(
    `best of ${rounds}: floor ${seconds(best.floor)}, audit ${seconds(best.audit)}, ${(best.audit / best.floor).toFixed(2)}x; floor8 ${seconds(best.floor8)}, audit ${(best.audit / best.floor8).toFixed(2)}x it`,
  );
} finally {
  await fleet.stop();
  await rm(manifests, { recursive: true, force: true });
  await rm(cliFolder, { recursive: true, force: true });
}
