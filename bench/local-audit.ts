// Benchmark: the whole local audit of this machine (every domain it can show, all installed
// packages declared) split into the probe's own shell time and Quartermaster's CPU beyond it
// (spawn, framing, parse, compare, drift items). Target: under 300 ms of CPU beyond the probe.
// Run: npx tsx bench/local-audit.ts [runs]
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { auditNode, defaultAuditSettings, runProbe, auditedDomains } from "../src/audit/node.js";
import { declaredFor } from "../src/domains/domain.js";
import { snapshotSpec } from "../src/runs/snapshot.js";
import { DOMAINS } from "../src/domains/registry.js";
import { loadFleet } from "../src/manifest/load.js";
import { parseContext } from "../src/probe/script.js";
import { localTransport } from "../src/transport/local.js";
import { nodeTree } from "../test/support/local-node.js";
import { removeTree, writeTree } from "../test/support/tree.js";

const runs = Number(process.argv[2] ?? 20);
const transport = localTransport("localhost");
const settings = defaultAuditSettings();
const drift = { policy: {}, waivers: [], tickets: [], now: new Date() };

// Declared state = live state, plus every regular file directly under /etc, so files are read and
// hashed too.
const { spec } = await snapshotSpec(transport, DOMAINS);
const etcFiles = readdirSync("/etc")
  .map((name) => `/etc/${name}`)
  .filter((path) => statSync(path, { throwIfNoEntry: false })?.isFile())
  .slice(0, 40);
spec.files = etcFiles.map((path) => ({
  path,
  mode: (statSync(path).mode & 0o7777).toString(8).padStart(4, "0"),
}));
const dir = await writeTree(nodeTree(spec));
const node = (await loadFleet(dir)).nodes[0]!;
const packages = Object.keys(
  (spec.packages as { installed_manifest: object }).installed_manifest,
).length;

const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000;
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

// Baseline measured in the same run: the same probe script run by sh alone, its CPU from the
// kernel.
const domains = auditedDomains(node).map((domain) => ({
  domain,
  declared: declaredFor(domain, node.spec),
}));
let captured = await runProbe(transport, domains, settings);
const { buildProbe, probeContext, newNonce } = await import("../src/probe/script.js");
const { maintenanceProbe } = await import("../src/audit/maintenance.js");
const nonce = newNonce();
const ctx = probeContext(nonce, settings.maxFileBytes);
const script = buildProbe(
  nonce,
  [
    { name: "maintenance", script: maintenanceProbe(settings.maintenanceMarker, ctx) },
    ...domains.map(({ domain, declared }) => ({
      name: domain.name,
      script: domain.probe(declared, ctx),
    })),
  ],
  ctx.statAsks,
).script;
// CPU of waited-for children (cutime + cstime in /proc/self/stat), in ms: the kernel's own count.
const childCpuMs = () => {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
};
const shellStart = childCpuMs();
for (let i = 0; i < runs; i++)
  spawnSync("sh", ["-s"], { input: script, stdio: ["pipe", "ignore", "ignore"] });
const shellCpu = [(childCpuMs() - shellStart) / runs];

// Quartermaster: the whole node audit in this process; its own CPU excludes the child shell's.
const auditCpu: number[] = [];
const wall: number[] = [];
let items = 0;
const auditChildStart = childCpuMs();
for (let i = 0; i < runs; i++) {
  const before = process.cpuUsage();
  const started = performance.now();
  const result = await auditNode(node, transport, settings, drift);
  wall.push(performance.now() - started);
  auditCpu.push(cpuMs(process.cpuUsage(before)));
  items = result.drift.length;
  if (result.status !== "clean")
    throw new Error(
      `expected a clean audit, got ${result.status}: ${result.error ?? JSON.stringify(result.drift.slice(0, 3))}`,
    );
}

const auditChildCpu = (childCpuMs() - auditChildStart) / runs;

// Parse + compare alone, on captured output: the pure part of the pipeline.
const parseCpu: number[] = [];
for (let i = 0; i < runs; i++) {
  const before = process.cpuUsage();
  const parse = parseContext(captured.nonce);
  for (const { domain, declared } of domains) {
    const section = captured.sections.get(domain.name)!;
    if (section.unknown === undefined)
      domain.compare(declared, domain.parse(section.output, parse));
  }
  parseCpu.push(cpuMs(process.cpuUsage(before)));
}

const target = 300;
const qm = median(auditCpu);
console.log(
  `local audit of this machine: ${packages} packages, ${etcFiles.length} files, ${domains.length} domains, probe output ${captured.probeBytes} bytes, ${runs} runs, medians:`,
);
console.log(
  `  baseline  probe shell CPU (sh -s alone, per run)             ${median(shellCpu).toFixed(1)} ms (during the audits: ${auditChildCpu.toFixed(1)} ms)`,
);
console.log(
  `  quartermaster CPU beyond the probe (spawn+parse+compare)     ${qm.toFixed(1)} ms   (${(qm / median(shellCpu)).toFixed(2)}x the probe's shell CPU; target < ${target} ms: ${qm < target ? "met" : "MISSED"}, ${(qm / target).toFixed(2)} of target)`,
);
console.log(
  `  of which parse + compare on captured output                  ${median(parseCpu).toFixed(1)} ms`,
);
console.log(
  `  wall time per node audit                                     ${median(wall).toFixed(1)} ms`,
);
console.log(
  `  peak RSS of this process                                     ${(process.resourceUsage().maxRSS / 1024).toFixed(1)} MB`,
);
console.log(`  drift items: ${items}`);
captured = undefined as never;
await removeTree(dir);
