// A fleet behind one bastion against the same fleet reached directly, every figure from one run.
// Needs root. Usage: npx tsx bench/reach.ts [hosts=40] [rounds=2]
// The hosts run a production-like sshd (startFleet's productionSshd): how long a connection stays
// unauthenticated, and so what MaxStartups drops, is a production sshd's.
//
// One test fleet holds a jump host whose sshd allows `MaxStartups 4:50:8` (it drops
// unauthenticated connections past 4 at random, all past 8), `hosts` hosts only it can reach,
// and as many alike hosts on the bridge. Each round audits, with the built CLI at its default
// concurrency (`audit --format json --out`, process start to exit):
//   direct   the hosts on the bridge;
//   jump     the hosts behind the jump host (ssh_config ProxyJump), default ssh.max_sessions;
//   no-limit the same, with ssh.max_sessions as high as the fleet (no per-jump-host limit).
// For each: nodes audited of nodes, wall time, the tries (attempts per node, summed, and the
// most one node took), and the ratio of its time to direct's.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import type { Report } from "../src/report/schema.js";
import { bundleCliInto } from "../scripts/bundle.js";
import { startFleet } from "../test/support/hosts.js";
import { writeTree } from "../test/support/tree.js";

const arg = (index: number, fallback: number) => Number(process.argv[2 + index] ?? fallback);
const [hostCount, rounds] = [arg(0, 40), arg(1, 2)];
const SPEC = { system: { sysctl_parameters: { "net.ipv4.ip_forward": 0 } } };

const named = (prefix: string) =>
  Array.from({ length: hostCount }, (_, i) => `${prefix}-${String(i + 1).padStart(2, "0")}`);
const behind = named("jumped");
const direct = named("direct");

interface Outcome {
  ms: number;
  audited: number;
  nodes: number;
  tries: number;
  mostTries: number;
  /** Distinct errors of the nodes not audited. */
  errors: string[];
}

/** The built CLI's audit of `manifests` at its default concurrency. */
async function audit(manifests: string, sshConfig: string): Promise<Outcome> {
  const out = path.join(manifests, "report.json");
  const started = performance.now();
  const stderr = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [
      CLI,
      "audit",
      ...["--manifests", manifests, "--ssh-config", sshConfig, "--format", "json", "--out", out],
    ]);
    const err: Buffer[] = [];
    child.stderr.on("data", (c: Buffer) => err.push(c));
    child.on("error", reject);
    child.on("close", () => resolve(Buffer.concat(err).toString()));
  });
  const ms = performance.now() - started;
  const report = JSON.parse(await readFile(out, "utf8").catch(() => "null")) as Report | null;
  if (!report) throw new Error(`no report: ${stderr}`);
  const tries = report.nodes.map((n) => n.tries ?? 0);
  return {
    ms,
    audited: report.summary.clean + report.summary.drifted,
    nodes: report.summary.nodes,
    tries: tries.reduce((a, b) => a + b, 0),
    mostTries: Math.max(...tries),
    errors: [
      ...new Set(
        report.nodes.flatMap((n) =>
          n.error === undefined ? [] : [`${n.tries} tries: ${n.error}`],
        ),
      ),
    ],
  };
}

const manifestsFor = (names: readonly string[], fleetYaml: object = {}) =>
  writeTree(
    Object.fromEntries([
      ["fleet.yaml", stringify({ ...SPEC, ...fleetYaml })],
      ...names.map((name) => [`nodes/${name}.yaml`, "{}\n"]),
    ]),
    "qm-bench-reach-",
  );

console.log("bundling the CLI ...");
const cliFolder = await mkdtemp(path.join(os.tmpdir(), "qm-bench-reach-cli-"));
const CLI = await bundleCliInto(cliFolder);
const fleet = await startFleet(
  [
    { name: "jump-01", sshdOptions: ["MaxStartups 4:50:8"] },
    ...behind.map((name) => ({ name, behind: "jump-01" })),
    ...direct.map((name) => ({ name })),
  ],
  { prefix: "qmr", productionSshd: true },
);
const trees: string[] = [cliFolder];
try {
  const runs = {
    direct: await manifestsFor(direct),
    jump: await manifestsFor(behind),
    "no-limit": await manifestsFor(behind, { ssh: { max_sessions: hostCount } }),
  };
  trees.push(...Object.values(runs));
  console.log(
    `${hostCount} hosts behind one jump host (sshd MaxStartups 4:50:8) and ${hostCount} direct, default concurrency, ${rounds} round(s)`,
  );
  for (let round = 1; round <= rounds; round++) {
    const results: Record<string, Outcome> = {};
    for (const [name, manifests] of Object.entries(runs))
      results[name] = await audit(manifests, fleet.sshConfig);
    for (const [name, r] of Object.entries(results)) {
      console.log(
        [
          `round ${round}  ${name.padEnd(8)}`,
          `audited ${r.audited}/${r.nodes}`,
          `${(r.ms / 1000).toFixed(2)} s`,
          `${(r.ms / results.direct!.ms).toFixed(2)}x direct`,
          `tries ${r.tries} (most ${r.mostTries})`,
        ].join("  "),
      );
      for (const error of r.errors) console.log(`    not audited: ${error}`);
    }
  }
} finally {
  await fleet.stop();
  await Promise.all(trees.map((dir) => rm(dir, { recursive: true, force: true })));
}
