// The built CLI's start-up: its own CPU (user + system of the node process and its threads, never
// a child's: process.cpuUsage() at exit, read through an --import hook) for `--version`,
// `audit --help` (the audit's modules loaded, nothing run) and a one-node audit of this machine
// through the local shell (`audit --local`: the manifests read, the probe's output parsed and
// compared; the probe's own shell is a child, not counted), against `node -e 0` measured in the
// same rounds, one command after another. CPU time, not wall time: the machine may be shared.
// Usage: npm run build && [QM_BENCH_BASELINE=DIR] npx tsx bench/startup.ts [rounds=15]
// QM_BENCH_BASELINE=DIR: another built checkout's bundle runs in every round too.
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { REPO_ROOT } from "../test/support/cli.js";
import { CPU_HOOK } from "./own-cpu.js";

const rounds = Number(process.argv[2] ?? 15);
const CLIS: Record<string, string> = {
  this: path.join(REPO_ROOT, "dist/cli/main.js"),
  ...(process.env.QM_BENCH_BASELINE && {
    baseline: path.join(path.resolve(process.env.QM_BENCH_BASELINE), "dist/cli/main.js"),
  }),
};

const work = await mkdtemp(path.join(os.tmpdir(), "qm-startup-"));
try {
  // One node, which `audit --local` stands for, declaring this machine's live state (snapshot's).
  const manifests = path.join(work, "fleet-manifests");
  await mkdir(path.join(manifests, "nodes"), { recursive: true });
  const snapshot = spawnSync(
    process.execPath,
    [CLIS.this!, "snapshot", "--local", "--packages", "none"],
    { encoding: "utf8" },
  );
  if (snapshot.status !== 0) throw new Error(`snapshot --local failed: ${snapshot.stderr}`);
  await writeFile(path.join(manifests, "fleet.yaml"), snapshot.stdout);
  await writeFile(path.join(manifests, "nodes", "localhost.yaml"), "{}\n");
  const cpuFile = path.join(work, "cpu");
  const cases: Record<string, string[]> = {
    "--version": ["--version"],
    "audit --help": ["audit", "--help"],
    "audit --local": ["audit", "--local", "--manifests", manifests, "--format", "json"],
  };

  /** The process's own CPU in ms; `args` after the hook. */
  const cpuOf = async (args: string[]): Promise<number> => {
    const run = spawnSync(process.execPath, ["--import", CPU_HOOK, ...args], {
      env: { ...process.env, QM_BENCH_CPU_FILE: cpuFile },
      encoding: "utf8",
    });
    if (run.status !== 0 && run.status !== 1)
      throw new Error(`${args.join(" ")} exited ${run.status}: ${run.stderr}`);
    return Number(await readFile(cpuFile, "utf8"));
  };

  const figures = new Map<string, number[]>();
  const add = (name: string, ms: number) => figures.set(name, [...(figures.get(name) ?? []), ms]);
  for (let round = 0; round < rounds; round++) {
    add("node -e 0", await cpuOf(["-e", "0"]));
    for (const [cli, entry] of Object.entries(CLIS))
      for (const [name, args] of Object.entries(cases))
        add(`${cli} ${name}`, await cpuOf([entry, ...args]));
  }
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const floor = median(figures.get("node -e 0")!);
  console.log(
    `own CPU (user + system), median of ${rounds} rounds; load ${os.loadavg()[0]!.toFixed(1)} at the end`,
  );
  for (const [name, values] of figures) {
    const ms = median(values);
    const baseline = name.startsWith("this ")
      ? figures.get(name.replace(/^this /, "baseline "))
      : undefined;
    console.log(
      `${name.padEnd(24)} ${ms.toFixed(1).padStart(7)} ms  beyond node -e 0 ${(ms - floor).toFixed(1).padStart(6)} ms` +
        (baseline
          ? `  ${((ms - floor) / (median(baseline) - floor)).toFixed(2)}x the baseline's`
          : ""),
    );
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
