// The probe's own CPU on a test host, whole and by section, and the processes it starts. Needs
// root (a cpuacct cgroup the session's shell is moved into). The spec is bench/fleet.ts's: the host's snapshot with a few packages.
// Each figure is the CPU (user + system, every process of the shell's session) of `runs` runs of
// `sh -s < probe` as the audit user, read from a cgroup holding the session's shell; the lowest of
// `sets` sets, the sets interleaved. A section's share is its probe alone less the probe with no
// domain (the maintenance section and the framing), which is itself given less an empty `sh -s`;
// the cause section's is the whole probe less the same probe without it.
// Processes: `strace -f -c` of one run (execve: programs; clone/fork/vfork: processes).
// Usage: npx tsx bench/probe-host.ts [runs=20] [sets=2]
import { mkdir, mkdtemp, readFile, rm, rmdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { DOMAINS } from "../src/domains/registry.js";
import { runCli } from "../test/support/cli.js";
import { startFleet } from "../test/support/hosts.js";
import { typicalProbe, writeTypicalManifests } from "./typical-spec.js";

const runs = Number(process.argv[2] ?? 20);
const sets = Number(process.argv[3] ?? 2);
const CGROUP = `/sys/fs/cgroup/cpuacct/qm-probe-host-${process.pid}`;
const HOST = "probe-01";

const fleet = await startFleet([{ name: HOST }], { prefix: "qmph" });
const work = await mkdtemp(path.join(os.tmpdir(), "qm-bench-probe-host-"));
try {
  const manifests = path.join(work, "manifests");
  await writeTypicalManifests(manifests, [HOST], async (packages) => {
    const args = ["snapshot", "--node", HOST, "--manifests", manifests];
    const run = await runCli([...args, "--ssh-config", fleet.sshConfig, "--packages", packages]);
    if (run.exitCode !== 0) throw new Error(`snapshot exited ${run.exitCode}: ${run.stderr}`);
    return `${run.stdout}\n`; // runCli strips the final newline
  });
  // Each measured script, and the one whose figures it is shown less (a section's share).
  const probed = (await typicalProbe(manifests)).domains;
  const probe = async (options: Parameters<typeof typicalProbe>[1]) =>
    (await typicalProbe(manifests, options)).script;
  const variants = new Map<string, { script: string; less?: string; shown?: false }>([
    ["empty sh -s", { script: "" }],
    [
      "framing + maintenance",
      { script: await probe({ only: () => false, cause: false }), less: "empty sh -s" },
    ],
    ...(await Promise.all(
      DOMAINS.filter((d) => probed.includes(d.name)).map(
        async (d) =>
          [
            d.name,
            {
              script: await probe({ only: (o) => o === d, cause: false }),
              less: "framing + maintenance",
            },
          ] as const,
      ),
    )),
    ["no cause", { script: await probe({ cause: false }), shown: false }],
    ["cause", { script: await probe({}), less: "no cause" }],
    ["whole probe", { script: await probe({}) }],
  ]);
  const scripts = path.join(work, "scripts");
  await mkdir(scripts, { mode: 0o755 });
  const files = new Map<string, string>();
  for (const [name, { script }] of variants) {
    const file = path.join(scripts, `${name.replaceAll(" ", "-")}.sh`);
    await writeFile(file, script, { mode: 0o644 });
    files.set(name, file);
  }
  await execa("chmod", ["755", work]);
  const ssh = (remote: string) => execa("ssh", ["-F", fleet.sshConfig, HOST, remote]);

  /** CPU ms per run of `sh -s < file` on the host, `runs` runs in one session. */
  const cpuPerRun = async (file: string): Promise<number> => {
    await mkdir(CGROUP);
    try {
      // The host's own /sys has no cgroups: the session's shell is moved in from here, then runs.
      const session = execa("ssh", [
        "-F",
        fleet.sshConfig,
        HOST,
        `echo $$; read go; i=0; while [ $i -lt ${runs} ]; do sh -s < '${file}' > /dev/null; i=$((i+1)); done`,
      ]);
      const pid = await new Promise<string>((resolve) =>
        session.stdout.once("data", (chunk: Buffer) => resolve(chunk.toString().trim())),
      );
      await writeFile(path.join(CGROUP, "tasks"), pid);
      session.stdin.end("go\n");
      await session;
      return Number(await readFile(path.join(CGROUP, "cpuacct.usage"), "utf8")) / 1e6 / runs;
    } finally {
      await rmdir(CGROUP);
    }
  };
  const best = new Map<string, number>();
  for (let set = 0; set < sets; set++) {
    for (const [name, file] of files) {
      const ms = await cpuPerRun(file);
      best.set(name, Math.min(best.get(name) ?? Infinity, ms));
    }
  }

  /** execve and clone/fork/vfork calls of one run, by strace -f -c. */
  const processes = async (file: string): Promise<{ execs: number; forks: number }> => {
    const { stdout } = await ssh(
      `strace -f -c -e trace=execve,clone,clone3,fork,vfork -o /dev/fd/3 sh -s < '${file}' 3>&1 > /dev/null 2>&1`,
    );
    const calls = (syscall: string) =>
      stdout
        .split("\n")
        .map((line) => line.trim().split(/\s+/))
        .filter((f) => f.at(-1) === syscall)
        .reduce((sum, f) => sum + Number(f[3]), 0);
    return {
      execs: calls("execve"),
      forks: calls("clone") + calls("clone3") + calls("fork") + calls("vfork"),
    };
  };

  console.log(
    `probe on a test host (${fleet.user}, bench/fleet.ts's spec): CPU per run, lowest of ${sets} sets of ${runs} runs; processes of one run (strace -f -c)`,
  );
  const counted = new Map<string, { execs: number; forks: number }>();
  for (const [name, file] of files) counted.set(name, await processes(file));
  for (const [name, { less, shown }] of variants) {
    if (shown === false) continue;
    const [ms, p] = [best.get(name)!, counted.get(name)!];
    const [lessMs, lessP] = less
      ? [best.get(less)!, counted.get(less)!]
      : [0, { execs: 0, forks: 0 }];
    const label = less ? `${name} (less ${less})` : name;
    console.log(
      `  ${label.padEnd(42)} ${(ms - lessMs).toFixed(2).padStart(6)} ms   ${String(p.execs - lessP.execs).padStart(3)} execve ${String(p.forks - lessP.forks).padStart(3)} forks`,
    );
  }
} finally {
  await fleet.stop();
  await rm(work, { recursive: true, force: true });
}
