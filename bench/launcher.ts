// The process launcher's own cost per job as a run grows: N and 8N jobs of /bin/true through
// `runProcess`, 16 at a time, the launcher held for the run as a fleet run holds it. The figure is
// the CPU of the launcher shell and of the jobs it reaped (its /proc stat: ticks of 10 ms), per
// job; a launcher whose cost per job does not grow with the run shows a ratio
// near 1 between the two. QM_BENCH_BASELINE=DIR measures another checkout's launcher (its sources)
// in the same run. Usage: [QM_BENCH_BASELINE=DIR] npx tsx bench/launcher.ts [jobs=2000]
import { execa } from "execa";
import { REPO_ROOT } from "../test/support/cli.js";

const jobs = Number(process.argv[2] ?? 2000);
const CONCURRENCY = 16;

// Each measurement is a process of its own: children's CPU is counted once they are waited for,
// and a launcher is one per process.
const ONE_RUN = `
import { readFileSync, readdirSync } from "node:fs";
const [dir, count] = [process.argv[1], Number(process.argv[2])];
const { holdLauncher, runProcess } = await import(dir + "/src/transport/launcher.ts");
const stat = (pid) => readFileSync("/proc/" + pid + "/stat", "utf8").split(") ")[1].split(" ");
const release = holdLauncher();
let next = 0;
const worker = async () => {
  while (next++ < count)
    await runProcess("/bin/true", [], "", { timeoutMs: 60_000, maxOutputBytes: 1 << 20 });
};
await Promise.all(Array.from({ length: ${CONCURRENCY} }, worker));
// The launcher: the shell this process started, named quartermaster-launcher. Its own CPU and
// that of the jobs it reaped.
const pid = readdirSync("/proc").find((p) => {
  try {
    return stat(p)[1] === String(process.pid) && readFileSync("/proc/" + p + "/cmdline", "latin1").includes("quartermaster-launcher");
  } catch {
    return false;
  }
});
const f = stat(pid);
console.log([11, 12, 13, 14].reduce((sum, i) => sum + Number(f[i]), 0) * 10 / count);
release();
`;

async function perJob(dir: string, count: number): Promise<number> {
  const { stdout } = await execa(
    "node",
    ["--import", "tsx", "--input-type=module", "--eval", ONE_RUN, dir, String(count)],
    { cwd: REPO_ROOT },
  );
  return Number(stdout.trim().split("\n").at(-1));
}

const dirs = [REPO_ROOT, ...(process.env.QM_BENCH_BASELINE ? [process.env.QM_BENCH_BASELINE] : [])];
console.log(`the launcher's CPU per job (itself and its children), ${CONCURRENCY} jobs at once`);
for (const dir of dirs) {
  const small = await perJob(dir, jobs);
  const large = await perJob(dir, jobs * 8);
  console.log(
    `  ${dir === REPO_ROOT ? "this checkout" : `baseline ${dir}`}: ${jobs} jobs ${small.toFixed(3)} ms, ${jobs * 8} jobs ${large.toFixed(3)} ms (${(large / small).toFixed(2)}x)`,
  );
}
