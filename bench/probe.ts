// Benchmark: the probe's output size and its own CPU on a host. Builds the probe a node of the
// sample fleet gets, runs it on this machine through the local transport, and prints the bytes of
// each section, the total against the 8 KB target for a typical node with a few packages declared,
// and the CPU (user + sys) the probe's shell and its commands used per run.
// Run: npx tsx bench/probe.ts [runs] [node...]   (default: 20 runs, every node of fleet-manifests)
// The bytes are this machine's: routes and ports grow with its interfaces and listeners (test
// hosts' bridges and veths included), kernel_modules is unknown where /proc/modules is absent.
import { readFileSync } from "node:fs";
import { auditedDomains, defaultAuditSettings, runProbe } from "../src/audit/node.js";
import { declaredFor } from "../src/domains/domain.js";
import { loadFleet } from "../src/manifest/load.js";
import { localTransport } from "../src/transport/local.js";

const TARGET_BYTES = 8 * 1024;
const runs = Number(process.argv[2] ?? 20);
const only = process.argv.slice(3);
const fleet = await loadFleet("fleet-manifests");
const nodes = only.length ? fleet.nodes.filter((n) => only.includes(n.name)) : fleet.nodes;
const settings = defaultAuditSettings();

// CPU of waited-for children and their own waited-for children (cutime + cstime in
// /proc/self/stat, clock ticks of 10 ms), in ms: the probe's shell and every command it ran.
const childCpuMs = () => {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[13]) + Number(fields[14])) * 10;
};

for (const node of nodes) {
  const transport = localTransport(node.name);
  const domains = auditedDomains(node).map((domain) => ({
    domain,
    declared: declaredFor(domain, node.spec),
  }));
  const cpuBefore = childCpuMs();
  const wallBefore = performance.now();
  // With the cause section as a first audit asks for it (no history): the most it reads.
  const cause = {};
  let last = await runProbe(transport, domains, settings, cause);
  for (let i = 1; i < runs; i++) last = await runProbe(transport, domains, settings, cause);
  const cpu = (childCpuMs() - cpuBefore) / runs;
  const wall = (performance.now() - wallBefore) / runs;
  console.log(`\n${node.name}: ${domains.map((d) => d.domain.name).join(", ")}`);
  let framed = 0;
  for (const [name, section] of last.sections) {
    framed += section.output.length;
    console.log(`  ${name.padEnd(16)} ${String(section.output.length).padStart(8)} B`);
  }
  console.log(`  ${"(framing)".padEnd(16)} ${String(last.probeBytes - framed).padStart(8)} B`);
  const ratio = (last.probeBytes / TARGET_BYTES).toFixed(2);
  console.log(
    `  ${"total".padEnd(16)} ${String(last.probeBytes).padStart(8)} B  ${ratio}x of 8 KB`,
  );
  console.log(
    `  probe CPU ${cpu.toFixed(1)} ms/run (user+sys), wall ${wall.toFixed(1)} ms/run, ${runs} runs`,
  );
}
