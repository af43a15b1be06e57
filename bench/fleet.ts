// Fleet audit speed against real ssh test hosts, every figure from one run. Needs root.
// The hosts run a production-like sshd (startFleet's productionSshd: a re-exec per connection,
// the default key exchange), not the cheaper one tests get.
// Usage: [QM_BENCH_BASELINE=DIR] [QM_BENCH_NODE=FILE] npx tsx bench/fleet.ts [hosts=30] [concurrency=16] [rounds=2] [entries=300]
// The CLI is bundled from this checkout's sources into the bench's own folder (dist/ is left as it
// is, for whatever else runs it); QM_BENCH_NODE runs it and the bare Node process on another Node,
// the bench itself staying on this one.
//
// The fleet declares the first host's live state, with a few packages declared as a typical node
// does; the CPU figure is also given with every installed package declared (a snapshot's default).
// Each round measures, on the same hosts at the same concurrency (bare and audit each first in turn):
//   floor  `ssh -F cfg host true` to every host;
//   raw    the probe the real code builds for the bench's spec, piped through plain
//          `ssh -F cfg host sh -s` (no Quartermaster): what the audit cannot go below;
//   bare   a bare Node process (BARE_SESSIONS, no Quartermaster code) that starts the same sessions
//          with the same probe, `concurrency` at a time (child_process.spawn), and does nothing
//          else: what Node's own start and spawn and the probe cost here, no manifest read;
//   audit  the built CLI's full audit (`audit --format json --out`), process start to exit.
// With each, the machine's CPU over its run from /proc/stat, busy and idle core time: the sessions
// of both ends share its cores, so a batch that keeps them busy takes about (busy + idle) / cores,
// and what a run adds to the floor is its CPU (the probe's on the hosts, the auditor's) and the
// core time it leaves idle (a start-up on one core while the other waits).
// Then, once:
//   cpu     the CLI's own CPU (process.cpuUsage() at exit, read through an --import hook: user +
//           system of the node process and its threads, never its ssh children), per node, for
//           the hosts and for `entries` node entries spread over them;
//   ansible `ansible all -m package_facts -f <concurrency>` over the same ssh config;
//   probe   the probe's own CPU on a host (dash's `times` after 10 runs of `sh -s`), its output
//           bytes;
// and last, bench/fleet-scale.ts (the 10,000-node stand-in transport run) when present.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pLimit from "p-limit";
import { stringify } from "yaml";
import type { Report } from "../src/report/schema.js";
import { REPO_ROOT } from "../test/support/cli.js";
import { startFleet } from "../test/support/hosts.js";
import { bundleCliInto } from "../scripts/bundle.js";
import { typicalProbe, writeTypicalManifests } from "./typical-spec.js";
import { CPU_HOOK } from "./own-cpu.js";

const arg = (index: number, fallback: number) => Number(process.argv[2 + index] ?? fallback);
const [hostCount, concurrency, rounds, entryCount] = [
  arg(0, 30),
  arg(1, 16),
  arg(2, 2),
  arg(3, 300),
];
/** The Node that runs the CLI, the bare process and the baseline. */
const NODE = process.env.QM_BENCH_NODE ? path.resolve(process.env.QM_BENCH_NODE) : process.execPath;
// QM_BENCH_BASELINE=DIR: another checkout of Quartermaster, built (`npm run build`), whose audit
// runs in every round too, on the same hosts and manifests, for a before-and-after in one run: its
// wall time and its own CPU per node (the hosts, then the entries), each audit first in turn.
const BASELINE = process.env.QM_BENCH_BASELINE
  ? path.join(path.resolve(process.env.QM_BENCH_BASELINE), "dist/cli/main.js")
  : undefined;
const SCALE_BENCH = path.join(REPO_ROOT, "bench/fleet-scale.ts");

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** One process, plain node:child_process: the bench's own overhead stays out of the floor. */
function run(
  file: string,
  args: readonly string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; inherit?: boolean } = {},
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      env: options.env ?? process.env,
      stdio: options.inherit ? "inherit" : "pipe",
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on("data", (c: Buffer) => out.push(c));
    child.stderr?.on("data", (c: Buffer) => err.push(c));
    child.stdin?.on("error", () => {});
    child.on("error", reject);
    child.on("close", (code) =>
      resolve({
        code,
        stdout: Buffer.concat(out).toString(),
        stderr: Buffer.concat(err).toString(),
      }),
    );
    child.stdin?.end(options.input ?? "");
  });
}

async function mustRun(file: string, args: readonly string[], input?: string): Promise<string> {
  const result = await run(file, args, input === undefined ? {} : { input });
  if (result.code !== 0)
    throw new Error(`${file} ${args.join(" ")} exited ${result.code}: ${result.stderr}`);
  return result.stdout;
}

/**
 * A bare Node process: `ssh -F CONFIG HOST sh -s` with the probe (a file) on stdin to each host,
 * CONCURRENCY at a time, as the floor runs them, and nothing else. Run as `node --input-type=module
 * -e BARE_SESSIONS CONFIG PROBE CONCURRENCY HOST...`.
 */
const BARE_SESSIONS = `import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
const [config, probeFile, concurrency, ...hosts] = process.argv.slice(1);
const probe = readFileSync(probeFile, "utf8");
let next = 0;
const session = (host) => new Promise((done, fail) => {
  const ssh = spawn("ssh", ["-F", config, host, "sh -s"]);
  ssh.stdout.resume();
  ssh.stderr.resume();
  ssh.on("close", (code) => (code === 0 ? done() : fail(new Error(host + ": ssh exited " + code))));
  ssh.stdin.end(probe);
});
await Promise.all(Array.from({ length: Number(concurrency) }, async () => {
  while (next < hosts.length) await session(hosts[next++]);
}));`;

/** The machine's busy and idle core time so far (ms), from /proc/stat's first line. */
async function coreTime(): Promise<{ busy: number; idle: number }> {
  const ticks = (await readFile("/proc/stat", "utf8")).split("\n")[0]!.trim().split(/\s+/);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = ticks.slice(1, 9).map(Number);
  const tick = 1000 / 100; // USER_HZ: 100 on Linux
  return {
    busy: (user! + nice! + system! + irq! + softirq! + steal!) * tick,
    idle: (idle! + iowait!) * tick,
  };
}

interface Measured {
  ms: number;
  /** Core time over the run, all processes of the machine. */
  busy: number;
  idle: number;
}

/** `work`'s wall time and the machine's core time over it. */
async function measured(work: () => Promise<unknown>): Promise<Measured> {
  const before = await coreTime();
  const [, ms] = await timed(work);
  const after = await coreTime();
  return { ms, busy: after.busy - before.busy, idle: after.idle - before.idle };
}

const timed = async <T>(work: () => Promise<T>): Promise<[T, number]> => {
  const started = performance.now();
  const value = await work();
  return [value, performance.now() - started];
};

const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;

async function ensureAnsible(): Promise<void> {
  if ((await run("sh", ["-c", "command -v ansible"])).code === 0) return;
  console.log("installing ansible (apt-get) ...");
  await mustRun("sh", [
    "-c",
    "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ansible",
  ]);
}

/** The audit of `manifests` by the bundle `cli` (this checkout's or the baseline's): wall time, own CPU (ms), and the report. */
async function audit(
  manifests: string,
  sshConfig: string,
  work: string,
  cli: string,
): Promise<Measured & { cpuMs: number; report: Report }> {
  const out = path.join(work, "report.json");
  const cpuFile = path.join(work, "cpu");
  let result: Ran | undefined;
  const times = await measured(async () => {
    result = await run(
      NODE,
      [
        "--import",
        CPU_HOOK,
        cli,
        "audit",
        ...["--manifests", manifests, "--ssh-config", sshConfig],
        ...["--concurrency", String(concurrency), "--format", "json", "--out", out],
      ],
      { env: { ...process.env, QM_BENCH_CPU_FILE: cpuFile } },
    );
  });
  const report = JSON.parse(await readFile(out, "utf8")) as Report;
  if (report.summary.clean !== report.summary.nodes)
    throw new Error(`audit not all clean: ${JSON.stringify(report.summary)} ${result?.stderr}`);
  return { ...times, cpuMs: Number(await readFile(cpuFile, "utf8")), report };
}

let auditPairs = 0;
/**
 * `run` with this checkout's CLI and, with QM_BENCH_BASELINE, the baseline's, each first in turn:
 * the machine's load drifts over a run, and the one always run second would bear it.
 */
async function bothAudits<T>(cli: string, run: (cli: string) => Promise<T>): Promise<[T, T?]> {
  if (!BASELINE) return [await run(cli)];
  if (auditPairs++ % 2 === 0) {
    const own = await run(cli);
    return [own, await run(BASELINE)];
  }
  const base = await run(BASELINE);
  return [await run(cli), base];
}

/** `command` to every host, `concurrency` at a time. */
function everyHost(names: readonly string[], command: (name: string) => Promise<unknown>) {
  const limit = pLimit(concurrency);
  return Promise.all(names.map((name) => limit(() => command(name))));
}

await ensureAnsible();

const names = Array.from(
  { length: hostCount },
  (_, i) => `bench-${String(i + 1).padStart(2, "0")}`,
);
const fleet = await startFleet(
  names.map((name) => ({ name })),
  { prefix: "qmb", productionSshd: true },
);
const work = await mkdtemp(path.join(os.tmpdir(), "qm-bench-"));
try {
  console.log("bundling the CLI ...");
  const CLI = await bundleCliInto(work);
  // Declared state: the first host's live state, taken with snapshot over ssh, declaring a few
  // packages as a typical node does. A snapshot's default, every installed package declared, is
  // measured too: the heaviest spec.
  const manifests = path.join(work, "fleet-manifests");
  const { fleetYaml, everyPackageYaml } = await writeTypicalManifests(
    manifests,
    names,
    (packages) =>
      mustRun(NODE, [
        CLI,
        "snapshot",
        ...["--node", names[0]!, "--manifests", manifests, "--ssh-config", fleet.sshConfig],
        ...["--packages", packages],
      ]),
  );
  // A fleet repository's checkout, as the audit meets one: it reads the revision and whether the
  // manifests are committed.
  const git = (...args: string[]) =>
    mustRun("git", [
      "-C",
      manifests,
      "-c",
      "user.name=bench",
      "-c",
      "user.email=b@example.net",
      ...args,
    ]);
  await git("init", "-q");
  await git("add", ".");
  await git("commit", "-qm", "manifests");
  // The probe the real code sends for this spec.
  const { script: probe } = await typicalProbe(manifests);

  const ssh = (name: string, remote: string, input?: string) =>
    mustRun("ssh", ["-F", fleet.sshConfig, name, remote], input);

  const probeFile = path.join(work, "probe.sh");
  await writeFile(probeFile, probe);
  const bareSessions = () =>
    mustRun(NODE, [
      ...["--input-type=module", "-e", BARE_SESSIONS],
      ...[fleet.sshConfig, probeFile, String(concurrency), ...names],
    ]);

  interface Round {
    floor: Measured;
    raw: Measured;
    bare: Measured;
    audit: Measured & { cpuMs: number };
    base?: Measured & { cpuMs: number };
  }
  const figures: Round[] = [];
  let report: Report | undefined;
  let baseReport: Report | undefined;
  const cores = (m: Measured) => `${m.busy.toFixed(0)}+${m.idle.toFixed(0)}`;
  for (let round = 1; round <= rounds; round++) {
    const floor = await measured(() => everyHost(names, (name) => ssh(name, "true")));
    const raw = await measured(() => everyHost(names, (name) => ssh(name, "sh -s", probe)));
    // The bare process and the audits take turns going first: the one that follows another run
    // meets its sessions' sshd processes still ending.
    const audits = () => bothAudits(CLI, (cli) => audit(manifests, fleet.sshConfig, work, cli));
    let bare: Measured;
    let qm: Measured & { cpuMs: number; report: Report };
    let base: (Measured & { cpuMs: number; report: Report }) | undefined;
    if (round % 2 === 1) {
      bare = await measured(bareSessions);
      [qm, base] = await audits();
    } else {
      [qm, base] = await audits();
      bare = await measured(bareSessions);
    }
    report = qm.report;
    baseReport = base?.report;
    figures.push({ floor, raw, bare, audit: qm, ...(base && { base }) });
    console.log(
      `round ${round}: floor ${secs(floor.ms)}, raw probe ${secs(raw.ms)} (${ratio(raw.ms, floor.ms)}), bare Node ${secs(bare.ms)} (${ratio(bare.ms, floor.ms)}), audit ${secs(qm.ms)} (${ratio(qm.ms, floor.ms)}), auditor CPU ${qm.cpuMs.toFixed(0)} ms` +
        (base
          ? `; baseline audit ${secs(base.ms)} (${ratio(base.ms, floor.ms)}), its CPU ${base.cpuMs.toFixed(0)} ms`
          : "") +
        `; core ms busy+idle: floor ${cores(floor)}, raw ${cores(raw)}, bare ${cores(bare)}, audit ${cores(qm)}`,
    );
  }

  // Many node entries over the same hosts: the auditor's CPU per node with start-up spread thin,
  // for the typical spec and for every installed package declared.
  const entries = async (dir: string, fleetSpec: string) => {
    await mkdir(path.join(dir, "nodes"), { recursive: true });
    await writeFile(path.join(dir, "fleet.yaml"), fleetSpec);
    for (let i = 0; i < entryCount; i++) {
      await writeFile(
        path.join(dir, "nodes", `entry-${String(i).padStart(4, "0")}.yaml`),
        stringify({ host: names[i % hostCount] }),
      );
    }
    return dir;
  };
  const many = await entries(path.join(work, "many-manifests"), fleetYaml);
  const [big, baseBig] = await bothAudits(CLI, (cli) => audit(many, fleet.sshConfig, work, cli));
  const heavy = await audit(
    await entries(path.join(work, "every-package-manifests"), everyPackageYaml),
    fleet.sshConfig,
    work,
    CLI,
  );

  // Ansible gathering package facts: the same hosts, user, ssh config and forks; host keys checked.
  const inventory = path.join(work, "inventory.ini");
  await writeFile(
    inventory,
    `[fleet]\n${names.join("\n")}\n\n[fleet:vars]\nansible_user=${fleet.user}\nansible_python_interpreter=/usr/bin/python3\n`,
  );
  const [ansible, ansibleMs] = await timed(() =>
    run(
      "ansible",
      ["-i", inventory, "all", "-m", "package_facts", "-f", String(concurrency), "-o"],
      {
        env: {
          ...process.env,
          ANSIBLE_HOST_KEY_CHECKING: "True",
          // Ansible's own defaults (connection sharing) plus the fleet's ssh config; pipelining is
          // its fastest ordinary setting.
          ANSIBLE_SSH_ARGS: `-F ${fleet.sshConfig} -o ControlMaster=auto -o ControlPersist=60s`,
          ANSIBLE_PIPELINING: "True",
          ANSIBLE_LOCAL_TEMP: path.join(work, "ansible-tmp"),
          ANSIBLE_SSH_CONTROL_PATH_DIR: path.join(work, "ansible-cp"),
          ANSIBLE_NOCOLOR: "1",
        },
      },
    ),
  );
  const ansibleOk = (ansible.stdout.match(/ \| SUCCESS => /g) ?? []).length;
  if (ansibleOk !== hostCount)
    throw new Error(
      `ansible succeeded on ${ansibleOk}/${hostCount} hosts:\n${ansible.stdout.slice(0, 2000)}\n${ansible.stderr.slice(0, 2000)}`,
    );

  // The probe's own CPU on each host: dash's `times` prints its children's user and system time,
  // in clock ticks; the probe runs PROBE_REPEAT times in one session to see below a tick.
  const PROBE_REPEAT = 10;
  const repeated = `sh -c 'p=$(cat); i=0; while [ $i -lt ${PROBE_REPEAT} ]; do printf "%s\\n" "$p" | sh -s >/dev/null; i=$((i+1)); done; times'`;
  const probeCpu: number[] = [];
  await everyHost(names, async (name) => {
    const times = await ssh(name, repeated, probe);
    const [user, system] = [
      ...(times.trim().split("\n")[1] ?? "").matchAll(/(\d+)m([\d.]+)s/g),
    ].map((m) => Number(m[1]) * 60_000 + Number(m[2]) * 1000);
    probeCpu.push(((user ?? NaN) + (system ?? NaN)) / PROBE_REPEAT);
  });

  const least = (values: number[]) => Math.min(...values);
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
  const best = (key: "floor" | "raw" | "bare" | "audit") => least(figures.map((f) => f[key].ms));
  const [floor, raw, bare, qm] = [best("floor"), best("raw"), best("bare"), best("audit")];
  const cpu = least(figures.map((f) => f.audit.cpuMs));
  // Core time each run adds to its round's floor, the median over rounds.
  const added = (key: "raw" | "bare" | "audit", part: "busy" | "idle") =>
    median(figures.map((f) => f[key][part] - f.floor[part]));
  const probeBytes = report!.nodes.map((n) => n.probeBytes ?? 0).sort((a, b) => a - b);

  console.log(
    `\n${hostCount} namespace hosts with real sshd, ${concurrency} at a time, ${os.cpus().length} cores; best of ${rounds} rounds`,
  );
  console.log(`floor   ssh host true                         ${secs(floor)}`);
  console.log(
    `raw     probe through plain ssh (no qm)       ${secs(raw)}  ${ratio(raw, floor)} floor`,
  );
  console.log(
    `bare    a bare Node process, the same sessions ${secs(bare)}  ${ratio(bare, floor)} floor: Node and the probe alone, no Quartermaster`,
  );
  // The audit against the bare process of its own round: the machine's speed drifts from round to
  // round, and the best of each may come from different rounds.
  const paired = figures.map((f) => f.audit.ms / f.bare.ms);
  console.log(
    `audit   quartermaster audit, CLI start to exit ${secs(qm)}  ${ratio(qm, floor)} floor (target <= 1.15x), ${ratio(qm, bare)} the bare Node process (target <= 1.05x); each round's own: ${figures.map((f) => ratio(f.audit.ms, f.floor.ms)).join(", ")} the floor, ${paired.map((r) => `${r.toFixed(2)}x`).join(", ")} the bare process (median ${median(paired).toFixed(2)}x)`,
  );
  const addedText = (key: "raw" | "bare" | "audit") =>
    `${key} +${added(key, "busy").toFixed(0)} busy ${added(key, "idle") >= 0 ? "+" : ""}${added(key, "idle").toFixed(0)} idle`;
  console.log(
    `cores   core time over the floor's (ms, median of rounds; the floor itself ${median(figures.map((f) => f.floor.busy)).toFixed(0)} busy + ${median(figures.map((f) => f.floor.idle)).toFixed(0)} idle): ${(["raw", "bare", "audit"] as const).map(addedText).join("; ")}`,
  );
  if (BASELINE) {
    const base = least(figures.map((f) => f.base!.ms));
    const baseBytes = baseReport!.nodes.map((n) => n.probeBytes ?? 0);
    console.log(
      `baseline ${path.relative(process.cwd(), BASELINE)} audit ${secs(base)}  ${ratio(base, floor)} floor; this audit ${ratio(qm, base)} the baseline (target <= 1.05x); probe output median ${median(baseBytes)} bytes, ${median(probeBytes) - median(baseBytes)} bytes more here (target <= 4096)`,
    );
  }
  console.log(
    `ansible package_facts -f ${concurrency}, pipelining       ${secs(ansibleMs)}  ${(ansibleMs / qm).toFixed(1)}x the audit (target >= 20x)`,
  );
  console.log(
    `cpu     auditor's own CPU (process.cpuUsage, no ssh children): ${hostCount} nodes ${cpu.toFixed(0)} ms = ${(cpu / hostCount).toFixed(1)} ms/node; ${entryCount} entries ${big.cpuMs.toFixed(0)} ms = ${(big.cpuMs / entryCount).toFixed(1)} ms/node (target <= 3 ms), beyond start-up ${((big.cpuMs - cpu) / (entryCount - hostCount)).toFixed(1)} ms/node`,
  );
  if (baseBig) {
    const baseCpu = least(figures.map((f) => f.base!.cpuMs));
    console.log(
      `        the baseline's, in the same rounds: ${hostCount} nodes ${baseCpu.toFixed(0)} ms = ${(baseCpu / hostCount).toFixed(1)} ms/node (this one ${ratio(cpu, baseCpu)}); ${entryCount} entries ${baseBig.cpuMs.toFixed(0)} ms = ${(baseBig.cpuMs / entryCount).toFixed(1)} ms/node (this one ${ratio(big.cpuMs, baseBig.cpuMs)}), beyond start-up ${((baseBig.cpuMs - baseCpu) / (entryCount - hostCount)).toFixed(1)} ms/node`,
    );
  }
  const heavyBytes = heavy.report.nodes[0]?.probeBytes ?? 0;
  console.log(
    `        every installed package declared (a snapshot's default; probe output ${heavyBytes} bytes): ${entryCount} entries ${heavy.cpuMs.toFixed(0)} ms = ${(heavy.cpuMs / entryCount).toFixed(1)} ms/node`,
  );
  console.log(
    `probe   on a host: median ${median(probeCpu).toFixed(1)} ms CPU; output median ${probeBytes[probeBytes.length >> 1]} bytes, max ${probeBytes.at(-1)} bytes`,
  );
} finally {
  await fleet.stop();
  await rm(work, { recursive: true, force: true });
}

if (existsSync(SCALE_BENCH)) {
  console.log("\nbench/fleet-scale.ts:");
  await run(process.execPath, ["--import", "tsx", SCALE_BENCH], { inherit: true });
} else {
  console.log("\n(bench/fleet-scale.ts is not in this tree: the 10,000-node run is skipped)");
}
