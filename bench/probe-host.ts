// The probe's own CPU on a test host, whole and by section, and the processes it starts. Needs
// root (a cpuacct cgroup the session's shell is moved into). The spec is bench/fleet.ts's: the
// host's snapshot with a few packages declared.
// Each figure is the CPU (user + system, every process of the session's shell) of `runs` runs of
// `sh -s < probe` as the audit user, read from a cgroup holding that shell; the lowest of `sets`
// sets, the sets interleaved. A section's share is the probe with that domain alone less the probe
// with none (the maintenance section and the framing), itself shown less an empty `sh -s`; the
// cause section's is the whole probe less the same probe without it. Each as a node's first audit
// asks (no last audit), and again as the hourly audit asks (its last audit an hour before).
// Processes: `strace -f -c` of one run (execve: programs; clone, fork, vfork: processes).
// The whole probe is measured again with a lock held on the machine (`flock`, outside the session):
// a real host's /proc/locks is rarely empty, and the maintenance section reads it when it is not.
// QM_BENCH_BASELINE=DIR: another checkout whose bench/typical-spec.ts builds the probe too; its
// scripts are measured in the same sets, on the same host, for a before-and-after in one run.
// QM_BENCH_MOUNT=1: the host has a tmpfs at /srv/bench that its /etc/fstab mounts at boot, so the
// spec declares mounts (a test host's snapshot has no persistent mount otherwise).
// Usage: [QM_BENCH_BASELINE=DIR] [QM_BENCH_MOUNT=1] npx tsx bench/probe-host.ts [runs=20] [sets=2]
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
const BASELINE = process.env.QM_BENCH_BASELINE && path.resolve(process.env.QM_BENCH_BASELINE);
const CGROUP = `/sys/fs/cgroup/cpuacct/qm-probe-host-${process.pid}`;
const HOST = "probe-01";
/** The last audit of the hourly variants: an hour before the bench started (epoch seconds). */
const LAST_AUDIT = Math.floor(Date.now() / 1000) - 3600;

interface Variant {
  script: string;
  /** The variant whose figures this one is shown less. */
  less?: string;
  shown?: false;
  /** Measured with a lock held, so /proc/locks is not empty. */
  locked?: true;
}

/** Each script measured, by name, as `build` (a checkout's typicalProbe) makes it. */
async function variantsOf(build: typeof typicalProbe, manifests: string) {
  const probed = (await build(manifests)).domains;
  const probe = async (options: Parameters<typeof typicalProbe>[1]) =>
    (await build(manifests, options)).script;
  const base = "framing + maintenance";
  const variants = new Map<string, Variant>([
    ["empty sh -s", { script: "" }],
    [base, { script: await probe({ only: () => false, cause: false }), less: "empty sh -s" }],
  ]);
  for (const { name } of DOMAINS.filter((d) => probed.includes(d.name)))
    variants.set(name, {
      script: await probe({ only: (d) => d.name === name, cause: false }),
      less: base,
    });
  variants.set("no cause", { script: await probe({ cause: false }), shown: false });
  variants.set("cause", { script: await probe({}), less: "no cause" });
  variants.set("whole probe", { script: await probe({}) });
  variants.set("whole probe, a lock held", { script: await probe({}), locked: true });
  // What operators pay every hour: the node's last audit an hour ago, set as the auditor sets it.
  const hourly = (await probe({})).replace(/^QM_SINCE=\n/, `QM_SINCE=${LAST_AUDIT}\n`);
  variants.set("cause, hourly", { script: hourly, less: "no cause" });
  variants.set("whole probe, hourly", { script: hourly });
  return variants;
}

const MOUNT = process.env.QM_BENCH_MOUNT === "1";
const fleet = await startFleet(
  [
    {
      name: HOST,
      ...(MOUNT && {
        files: { "/etc/fstab": { contents: "tmpfs /srv/bench tmpfs nosuid 0 0\n" } },
      }),
    },
  ],
  { prefix: "qmph" },
);
if (MOUNT)
  await fleet.exec(
    HOST,
    "mount -t tmpfs tmpfs /srv && mkdir /srv/bench && mount -t tmpfs -o nosuid tmpfs /srv/bench",
  );
const work = await mkdtemp(path.join(os.tmpdir(), "qm-bench-probe-host-"));
try {
  const manifests = path.join(work, "manifests");
  await writeTypicalManifests(manifests, [HOST], async (packages) => {
    const args = ["snapshot", "--node", HOST, "--manifests", manifests];
    const run = await runCli([...args, "--ssh-config", fleet.sshConfig, "--packages", packages]);
    if (run.exitCode !== 0) throw new Error(`snapshot exited ${run.exitCode}: ${run.stderr}`);
    return `${run.stdout}\n`; // runCli strips the final newline
  });
  const checkouts = new Map([["this", await variantsOf(typicalProbe, manifests)]]);
  if (BASELINE) {
    const spec = (await import(path.join(BASELINE, "bench/typical-spec.ts"))) as {
      typicalProbe: typeof typicalProbe;
    };
    checkouts.set("baseline", await variantsOf(spec.typicalProbe, manifests));
  }
  const scripts = path.join(work, "scripts");
  await mkdir(scripts, { mode: 0o755 });
  await execa("chmod", ["755", work]);
  const files = new Map<string, { file: string; locked: boolean }>();
  for (const [checkout, variants] of checkouts) {
    for (const [name, { script, locked }] of variants) {
      const file = path.join(scripts, `${checkout}-${name.replaceAll(/\W+/g, "-")}.sh`);
      await writeFile(file, script, { mode: 0o644 });
      files.set(`${checkout}/${name}`, { file, locked: locked === true });
    }
  }
  /** `measure` run with a lock held by a process of this machine when `locked`. */
  const lockFile = path.join(work, "lock");
  await writeFile(lockFile, "");
  const held = async <T>(locked: boolean, measure: () => Promise<T>): Promise<T> => {
    if (!locked) return measure();
    // One process holds the lock through its own descriptor (flock FILE CMD would fork CMD, which
    // outlives a kill of flock).
    const holder = execa(
      "sh",
      ["-c", 'exec 9>>"$1" && flock 9 && echo locked && exec sleep 2147483647', "sh", lockFile],
      { reject: false },
    );
    try {
      await new Promise((resolve) => holder.stdout.once("data", resolve));
      return await measure();
    } finally {
      holder.kill("SIGKILL");
      await holder;
    }
  };

  /** CPU ms per run of `sh -s < file` on the host, `runs` runs in one session. */
  const cpuPerRun = async (file: string): Promise<number> => {
    await mkdir(CGROUP);
    try {
      // The host's own /sys has no cgroups: the session's shell is moved in from here, then runs.
      const session = execa("ssh", [
        ...["-F", fleet.sshConfig, HOST],
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
  /** execve and clone/fork/vfork calls of one run, by strace -f -c. */
  const processes = async (file: string): Promise<{ execs: number; forks: number }> => {
    const { stdout } = await execa("ssh", [
      ...["-F", fleet.sshConfig, HOST],
      `strace -f -c -e trace=execve,clone,clone3,fork,vfork -o /dev/fd/3 sh -s < '${file}' 3>&1 > /dev/null 2>&1`,
    ]);
    const calls = (...syscalls: string[]) =>
      stdout
        .split("\n")
        .map((line) => line.trim().split(/\s+/))
        .filter((f) => syscalls.includes(f.at(-1)!))
        .reduce((sum, f) => sum + Number(f[3]), 0);
    return { execs: calls("execve"), forks: calls("clone", "clone3", "fork", "vfork") };
  };

  const best = new Map<string, number>();
  for (let set = 0; set < sets; set++) {
    for (const [key, { file, locked }] of files)
      best.set(key, Math.min(best.get(key) ?? Infinity, await held(locked, () => cpuPerRun(file))));
  }
  const counted = new Map<string, { execs: number; forks: number }>();
  for (const [key, { file, locked }] of files)
    counted.set(key, await held(locked, () => processes(file)));

  console.log(
    `probe on a test host (${fleet.user}, bench/fleet.ts's spec): CPU per run, lowest of ${sets} sets of ${runs} runs; processes of one run (strace -f -c)` +
      (BASELINE ? `; baseline ${path.relative(process.cwd(), BASELINE)} in the same sets` : ""),
  );
  /** `name`'s figures in `checkout`, less those of the variant it is shown less. */
  const figures = (checkout: string, name: string) => {
    const variant = checkouts.get(checkout)?.get(name);
    if (!variant) return undefined;
    const of = (n: string | undefined) =>
      n === undefined
        ? { ms: 0, execs: 0, forks: 0 }
        : { ms: best.get(`${checkout}/${n}`)!, ...counted.get(`${checkout}/${n}`)! };
    const [self, less] = [of(name), of(variant.less)];
    return {
      ms: self.ms - less.ms,
      execs: self.execs - less.execs,
      forks: self.forks - less.forks,
    };
  };
  const shown = (f: ReturnType<typeof figures>) =>
    f
      ? `${f.ms.toFixed(2).padStart(6)} ms ${String(f.execs).padStart(3)} execve ${String(f.forks).padStart(3)} forks`
      : "(not probed)".padEnd(32);
  for (const [name, { less, shown: show }] of checkouts.get("this")!) {
    if (show === false) continue;
    const label = less ? `${name} (less ${less})` : name;
    const [ours, base] = [figures("this", name), figures("baseline", name)];
    console.log(
      `  ${label.padEnd(42)} ${shown(ours)}` +
        (BASELINE
          ? `   baseline ${shown(base)}${base && name.startsWith("whole probe") ? `   ${(ours!.ms / base.ms).toFixed(2)}x` : ""}`
          : ""),
    );
  }
} finally {
  await fleet.stop();
  await rm(work, { recursive: true, force: true });
}
