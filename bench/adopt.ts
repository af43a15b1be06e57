// Adoption against its alternative, in the same run: `adopt` of a test fleet (one command, hosts in
// parallel) vs one `snapshot --node` per host in a loop, the ratio printed; then the pure factoring
// of 10,000 stand-in nodes, and its cost at 8x fewer nodes (linear growth reads ~8). Needs root.
// The hosts run a production-like sshd (startFleet's productionSshd), not the tests' cheaper one.
// Usage: npx tsx bench/adopt.ts [hosts] [stand-in nodes]
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { factorFleet, mergedSpecOf, sameSpec, type NodeSnapshot } from "../src/adopt/factor.js";
import { runCli } from "../test/support/cli.js";
import { startFleet, type TestFleet } from "../test/support/hosts.js";

const hosts = Number(process.argv[2] ?? 6);
const standIns = Number(process.argv[3] ?? 10_000);
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

const defs = Array.from({ length: hosts }, (_, i) => ({
  name: `${i % 2 ? "db" : "web"}-${String(i + 1).padStart(2, "0")}`,
  sysctls: { "net.ipv4.ip_forward": String(i % 2) },
  listeners: [i % 2 ? "tcp/5432" : "tcp/8080"],
}));
// `bench/adopt.ts 0` measures the factoring alone.
const fleet = hosts > 0 ? await startFleet(defs, { productionSshd: true }) : undefined;
const dir = await mkdtemp(path.join(os.tmpdir(), "qm-bench-adopt-"));
try {
  if (fleet) await compareWithSnapshots(fleet, dir);
} finally {
  await fleet?.stop();
  await rm(dir, { recursive: true, force: true });
}

async function compareWithSnapshots(fleet: TestFleet, dir: string): Promise<void> {
  const inventory = path.join(dir, "hosts.ini");
  await writeFile(
    inventory,
    [
      "[web]",
      ...defs.filter((d) => d.name.startsWith("web")).map((d) => d.name),
      "[db]",
      ...defs.filter((d) => d.name.startsWith("db")).map((d) => d.name),
      "",
    ].join("\n"),
  );
  const tree = path.join(dir, "fleet-manifests");
  const t0 = performance.now();
  const adopted = await runCli([
    "adopt",
    "--inventory",
    inventory,
    "--manifests",
    tree,
    "--ssh-config",
    fleet.sshConfig,
  ]);
  const adoptMs = performance.now() - t0;
  if (adopted.exitCode !== 0) throw new Error(`adopt failed: ${adopted.stderr}`);
  const t1 = performance.now();
  for (const def of defs) {
    const one = await runCli([
      "snapshot",
      "--manifests",
      tree,
      "--node",
      def.name,
      "--ssh-config",
      fleet.sshConfig,
    ]);
    if (one.exitCode !== 0) throw new Error(`snapshot ${def.name} failed: ${one.stderr}`);
  }
  const loopMs = performance.now() - t1;
  console.log(`hosts: ${hosts}`);
  console.log(`adopt (one command, factored tree written and checked): ${seconds(adoptMs)}`);
  console.log(`snapshot --node per host in a loop (nothing factored): ${seconds(loopMs)}`);
  console.log(`ratio loop / adopt: ${(loopMs / adoptMs).toFixed(2)}`);
}

// Stand-ins shaped like snapshots: 800 packages every node shares (a few per role), 20 roles
// differing in a sysctl and a listener, one value of each node's own.
function standInFleet(count: number): NodeSnapshot[] {
  const packages = Object.fromEntries(Array.from({ length: 800 }, (_, i) => [`pkg-${i}`, "*"]));
  return Array.from({ length: count }, (_, i) => {
    const role = `role-${i % 20}`;
    return {
      name: `node-${i}`,
      groups: [role],
      spec: {
        system: {
          kernel_version: "6.1.0-28-amd64",
          sysctl_parameters: { "vm.swappiness": String(i % 20), "kernel.hostname_id": String(i) },
        },
        networking: { listening_ports: ["tcp/22", `tcp/${8000 + (i % 20)}`] },
        packages: { installed_manifest: { ...packages, [`${role}-tools`]: "*" } },
      },
    };
  });
}

const timings: { factorMs: number; checkMs: number }[] = [];
for (const count of [standIns / 8, standIns]) {
  const nodes = standInFleet(count);
  const groups = new Map(Array.from({ length: 20 }, (_, i) => [`role-${i}`, []]));
  const t = performance.now();
  const factored = factorFleet({ nodes, groups });
  const factorMs = performance.now() - t;
  const c = performance.now();
  const clean = nodes.every((n) => sameSpec(mergedSpecOf(factored, n.name), n.spec));
  const checkMs = performance.now() - c;
  timings.push({ factorMs, checkMs });
  console.log(
    `factoring ${count} stand-in nodes: ${seconds(factorMs)}; merge-back check: ${seconds(checkMs)} (${clean ? "every node equals its snapshot" : "MISMATCH"})`,
  );
}
const [small, large] = timings as [(typeof timings)[0], (typeof timings)[0]];
console.log(
  `8x the nodes: factoring ${(large.factorMs / small.factorMs).toFixed(1)}x, merge-back check ${(large.checkMs / small.checkMs).toFixed(1)}x the time (linear reads ~8)`,
);
