// Fleet audit speed and memory against real ssh test hosts, measured in one run. Needs root.
// Usage: npx tsx bench/fleet.ts [hosts=32] [entries=1000]
//
// Figures, each at the same concurrency (= hosts) on the same hosts:
//   floor    `ssh -F cfg host true` to every host (p-limit), the cost of ssh alone;
//   qm       the built CLI's full audit (`audit --format json --out`), process start included;
//   ansible  `ansible all -m package_facts -f <forks>` over the same ssh config, host key checking on;
//   memory   peak RSS of the CLI auditing `entries` node entries that point at the same hosts;
//   probe    probe output bytes per node (report.nodes[].probeBytes).
import { mkdtemp, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import pLimit from "p-limit";
import { stringify } from "yaml";
import type { Report } from "../src/report/schema.js";
import { REPO_ROOT } from "../test/support/cli.js";
import { startFleet } from "../test/support/hosts.js";

const hostCount = Number(process.argv[2] ?? 32);
const entryCount = Number(process.argv[3] ?? 1000);
const concurrency = hostCount;
const CLI = path.join(REPO_ROOT, "dist/cli/main.js");

const seconds = (ms: number) => (ms / 1000).toFixed(2);
const timed = async <T>(run: () => Promise<T>): Promise<[T, number]> => {
  const started = performance.now();
  const value = await run();
  return [value, performance.now() - started];
};

async function ensureAnsible(): Promise<void> {
  if ((await execa("sh", ["-c", "command -v ansible"], { reject: false })).exitCode === 0) return;
  console.log("installing ansible (apt-get) ...");
  await execa("apt-get", ["install", "-y", "-qq", "--no-install-recommends", "ansible"], {
    env: { DEBIAN_FRONTEND: "noninteractive" },
  });
}

/** Runs the CLI under /usr/bin/time -v: wall time, and the peak RSS the kernel recorded. */
async function auditWithPeak(
  args: string[],
): Promise<{ ms: number; peakMb: number; exitCode: number; stderr: string }> {
  const [result, ms] = await timed(() =>
    execa("/usr/bin/time", ["-v", process.execPath, CLI, ...args], { reject: false }),
  );
  const peakKb = Number(
    /Maximum resident set size \(kbytes\): (\d+)/.exec(result.stderr)?.[1] ?? NaN,
  );
  return { ms, peakMb: peakKb / 1024, exitCode: result.exitCode ?? -1, stderr: result.stderr };
}

await ensureAnsible();
console.log("building the CLI (npm run build) ...");
await execa("npm", ["run", "build", "--silent"], { cwd: REPO_ROOT });

const names = Array.from(
  { length: hostCount },
  (_, i) => `bench-${String(i + 1).padStart(2, "0")}`,
);
const fleet = await startFleet(
  names.map((name) => ({ name })),
  { prefix: "qmb" },
);
const work = await mkdtemp(path.join(os.tmpdir(), "qm-bench-"));
try {
  // Declared state: the first host's live state, taken with snapshot over ssh.
  const manifests = path.join(work, "fleet-manifests");
  await mkdir(path.join(manifests, "nodes"), { recursive: true });
  await writeFile(path.join(manifests, "nodes", `${names[0]}.yaml`), "{}\n");
  const snapshot = await execa(process.execPath, [
    CLI,
    "snapshot",
    "--node",
    names[0]!,
    "--manifests",
    manifests,
    "--ssh-config",
    fleet.sshConfig,
  ]);
  await writeFile(path.join(manifests, "fleet.yaml"), snapshot.stdout);
  for (const name of names) await writeFile(path.join(manifests, "nodes", `${name}.yaml`), "{}\n");

  // 1. The floor: ssh alone.
  const limit = pLimit(concurrency);
  const [, floorMs] = await timed(() =>
    Promise.all(
      names.map((name) => limit(() => execa("ssh", ["-F", fleet.sshConfig, name, "true"]))),
    ),
  );

  // 2. Quartermaster's full audit.
  const reportFile = path.join(work, "report.json");
  const qm = await auditWithPeak([
    "audit",
    "--manifests",
    manifests,
    "--ssh-config",
    fleet.sshConfig,
    "--concurrency",
    String(concurrency),
    "--format",
    "json",
    "--out",
    reportFile,
  ]);
  const report = JSON.parse(await readFile(reportFile, "utf8")) as Report;
  if (report.summary.clean !== hostCount)
    throw new Error(
      `expected ${hostCount} clean nodes: ${JSON.stringify(report.summary)} ${qm.stderr}`,
    );

  // 3. Ansible gathering package facts: the same hosts, user, ssh config and forks; host keys checked.
  const inventory = path.join(work, "inventory.ini");
  await writeFile(
    inventory,
    `[fleet]\n${names.join("\n")}\n\n[fleet:vars]\nansible_user=${fleet.user}\nansible_python_interpreter=/usr/bin/python3\n`,
  );
  const [ansible, ansibleMs] = await timed(() =>
    execa(
      "ansible",
      ["-i", inventory, "all", "-m", "package_facts", "-f", String(concurrency), "-o"],
      {
        reject: false,
        env: {
          ANSIBLE_HOST_KEY_CHECKING: "True",
          // Ansible's own defaults (connection sharing) plus the fleet's ssh config; pipelining is its fastest ordinary setting.
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

  // 4. Memory: many node entries, each pointing at one of the same hosts.
  const many = path.join(work, "many-manifests");
  await mkdir(path.join(many, "nodes"), { recursive: true });
  await writeFile(path.join(many, "fleet.yaml"), snapshot.stdout);
  for (let i = 0; i < entryCount; i++) {
    await writeFile(
      path.join(many, "nodes", `entry-${String(i).padStart(4, "0")}.yaml`),
      stringify({ host: names[i % hostCount] }),
    );
  }
  const manyReport = path.join(work, "many.json");
  const big = await auditWithPeak([
    "audit",
    "--manifests",
    many,
    "--ssh-config",
    fleet.sshConfig,
    "--concurrency",
    String(concurrency),
    "--format",
    "json",
    "--out",
    manyReport,
  ]);
  const manySummary = (JSON.parse(await readFile(manyReport, "utf8")) as Report).summary;

  const probeBytes = report.nodes.map((n) => n.probeBytes ?? 0).sort((a, b) => a - b);
  const packages =
    (await readFile("/var/lib/dpkg/status", "utf8")).match(/^Package: /gm)?.length ?? 0;
  const qmAuditMs = Date.parse(report.finishedAt) - Date.parse(report.startedAt);

  console.log(
    `\nhosts: ${hostCount} namespace hosts with real sshd, concurrency ${concurrency} for all, ${os.cpus().length} cores`,
  );
  console.log(
    `floor   (ssh -F cfg host true, p-limit ${concurrency}):                ${seconds(floorMs)} s`,
  );
  console.log(
    `qm      (quartermaster audit, CLI process start to exit):        ${seconds(qm.ms)} s  (${(qm.ms / floorMs).toFixed(2)}x floor; target <= 1.5x)`,
  );
  console.log(
    `        (of which the audit itself, report startedAt..finishedAt): ${seconds(qmAuditMs)} s  (${(qmAuditMs / floorMs).toFixed(2)}x floor)`,
  );
  console.log(
    `ansible (ansible all -m package_facts -f ${concurrency}, pipelining):      ${seconds(ansibleMs)} s  (${(ansibleMs / qm.ms).toFixed(1)}x qm; target >= 5x)`,
  );
  console.log(
    `memory  (${entryCount} node entries over ${hostCount} hosts): peak RSS ${big.peakMb.toFixed(0)} MB (target <= 300 MB), ${seconds(big.ms)} s, ${manySummary.clean}/${manySummary.nodes} clean`,
  );
  console.log(`        (the ${hostCount}-host audit: peak RSS ${qm.peakMb.toFixed(0)} MB)`);
  console.log(
    `probe   output per node (${packages} dpkg packages): median ${probeBytes[probeBytes.length >> 1]} bytes, max ${probeBytes.at(-1)} bytes`,
  );
} finally {
  await fleet.stop();
  await rm(work, { recursive: true, force: true });
}
