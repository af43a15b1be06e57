// Manifest loading at fleet scale: the built CLI's `validate` on a generated tree of N node files
// (fleet.yaml, a few groups that build on each other, node files with a handful of keys each),
// process start included. Prints wall time, CPU time and peak RSS (/usr/bin/time -v) and the
// ratio to the target: 10,000 node files validate in under 2 s. Beside it, the floor: a new node
// process that reads the same files and only parses each with the `yaml` library, nothing else.
// Usage: npx tsx bench/manifests.ts [nodes=10000 ...]   (bundles the CLI into its own folder first)
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { bundleCliInto } from "../scripts/bundle.js";
import { REPO_ROOT } from "../test/support/cli.js";

const TARGET_MS = 2000;
const sizes = process.argv.length > 2 ? process.argv.slice(2).map(Number) : [10_000, 1_000];

const FLEET = `ssh:
  user: qmaudit
  connect_timeout: 10
system:
  sysctl_parameters:
    - net.ipv4.tcp_syncookies = 1
    - fs.protected_hardlinks = 1
policy:
  packages: { severity: high, on_drift: accept }
ignore:
  - node: "web-*"
    domain: sysctl
    key: net.core.somaxconn
    reason: "raised for a traffic spike"
`;

const GROUPS: Record<string, string> = {
  base: `packages:
  installed_manifest:
    openssh-server: "*"
    telnetd: absent
networking:
  listening_ports: [tcp/22]
system:
  kernel_modules:
    absent: [floppy, cramfs]
`,
  web: `groups: [base]
system:
  sysctl_parameters:
    net.core.somaxconn: 4096
packages:
  installed_manifest:
    nginx: 1.22.1-9+deb12u1
networking:
  listening_ports: [tcp/22, tcp/80, tcp/443]
files:
  - path: /etc/nginx/conf.d/status.conf
    contents: |
      server { listen 127.0.0.1:8080; }
    mode: "0644"
`,
  db: `groups: [base]
system:
  sysctl_parameters:
    vm.swappiness: 1
packages:
  installed_manifest:
    postgresql-15: 15.10-0+deb12u1
storage:
  io_scheduler:
    "nvme*": none
`,
  monitored: `systemd:
  units:
    - { name: node-exporter.service }
`,
};

const nodeFile = (i: number) => {
  const role = i % 3 === 0 ? "db" : "web";
  return `host: 10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}
groups: [${role}, monitored]
ssh:
  port: ${2200 + (i % 50)}
system:
  sysctl_parameters:
    vm.max_map_count: ${262144 + i}
networking:
  routes:
    - { dst: default, via: 10.0.0.1, dev: eth0 }
files:
  - { path: /etc/hostname, contents: "node-${i}\\n", mode: "0644" }
`;
};

async function generate(dir: string, nodes: number): Promise<void> {
  await mkdir(path.join(dir, "groups"), { recursive: true });
  await mkdir(path.join(dir, "nodes"), { recursive: true });
  await writeFile(path.join(dir, "fleet.yaml"), FLEET);
  for (const [name, text] of Object.entries(GROUPS))
    await writeFile(path.join(dir, "groups", `${name}.yaml`), text);
  for (let i = 0; i < nodes; i++)
    await writeFile(
      path.join(dir, "nodes", `node-${String(i).padStart(5, "0")}.yaml`),
      nodeFile(i),
    );
}

/** A new process reading every file of `dir`/nodes and parsing it with `yaml`, nothing else. */
const FLOOR = `
import { readdirSync, readFileSync } from "node:fs";
import { LineCounter, parseDocument } from "yaml";
const dir = process.argv[1] + "/nodes";
for (const name of readdirSync(dir))
  parseDocument(readFileSync(dir + "/" + name, "utf8"), { lineCounter: new LineCounter(), uniqueKeys: false });
`;

/** Wall time of running `args`, and its CPU seconds and peak RSS as /usr/bin/time -v tells them. */
async function timed(args: string[]) {
  const started = performance.now();
  const result = await execa("/usr/bin/time", ["-v", process.execPath, ...args], {
    cwd: REPO_ROOT,
    reject: false,
  });
  const ms = performance.now() - started;
  if (result.exitCode !== 0)
    throw new Error(`${args[0]} failed:\n${result.stdout}\n${result.stderr}`);
  const field = (name: string) =>
    Number(new RegExp(`${name}: ([\\d.]+)`).exec(result.stderr)?.[1] ?? NaN);
  // CPU seconds stay comparable when other work shares the machine; wall time does not.
  const cpu = field("User time \\(seconds\\)") + field("System time \\(seconds\\)");
  return {
    ms,
    cpu,
    peakMb: field("Maximum resident set size \\(kbytes\\)") / 1024,
    stdout: result.stdout,
  };
}

console.log("bundling the CLI ...");
const cliFolder = await mkdtemp(path.join(os.tmpdir(), "qm-bench-manifests-cli-"));
const CLI = await bundleCliInto(cliFolder);

for (const nodes of sizes) {
  const dir = await mkdtemp(path.join(os.tmpdir(), "qm-bench-manifests-"));
  try {
    await generate(dir, nodes);
    const run = await timed([CLI, "validate", "--manifests", dir]);
    const floor = await timed(["--input-type=module", "-e", FLOOR, dir]);
    console.log(
      `${String(nodes).padStart(6)} nodes: ${(run.ms / 1000).toFixed(2)} s wall, ` +
        `${run.cpu.toFixed(2)} s CPU, peak RSS ${run.peakMb.toFixed(0)} MB, ` +
        `${(run.ms / TARGET_MS).toFixed(2)}x the 2 s target (${run.stdout.trim()})\n` +
        `        floor (yaml parse only): ${(floor.ms / 1000).toFixed(2)} s wall, ` +
        `${floor.cpu.toFixed(2)} s CPU; validate is ${(run.ms / floor.ms).toFixed(2)}x the floor`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
await rm(cliFolder, { recursive: true, force: true });
