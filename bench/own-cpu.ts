// A process's own CPU, as the benches read it: an --import hook writes process.cpuUsage() (user +
// system of the node process and its threads, never its children) in ms to $QM_BENCH_CPU_FILE at
// exit.
export const CPU_HOOK = `data:text/javascript,${encodeURIComponent(
  `import { writeFileSync } from "node:fs";
process.on("exit", () => {
  const { user, system } = process.cpuUsage();
  writeFileSync(process.env.QM_BENCH_CPU_FILE, String((user + system) / 1000));
});`,
)}`;
