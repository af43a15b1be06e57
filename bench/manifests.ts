// Manifest loading at fleet scale: the built CLI's `validate` on a generated tree of N node files
// (fleet.yaml, a few groups that build on each other, node files with a handful of keys each),
// process start included. Prints wall time, CPU time and peak RSS (/usr/bin/time -v) and the
// ratio to the target: 10,000 node files validate in under 2 s.
// Usage: npx tsx bench/manifests.ts [nodes=10000 ...]   (builds the CLI first)
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { REPO_ROOT } from "../test/support/cli.js";

const TARGET_MS = 2000;
const sizes = process.argv.length > 2 ? process.argv.slice(2).map(Number) : [10_000, 1_000];
const CLI = path.join(REPO_ROOT, "dist/cli/main.js");

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

console.log("building the CLI (npm run build) ...");
await execa("npm", ["run", "build", "--silent"], { cwd: REPO_ROOT });

for (const nodes of sizes) {
  const dir = await mkdtemp(path.join(os.tmpdir(), "qm-bench-manifests-"));
  try {
    await generate(dir, nodes);
    const started = performance.now();
    const result = await execa(
      "/usr/bin/time",
      ["-v", process.execPath, CLI, "validate", "--manifests", dir],
      { reject: false },
    );
    const ms = performance.now() - started;
    if (result.exitCode !== 0)
      throw new Error(`validate failed:\n${result.stdout}\n${result.stderr}`);
    const field = (name: string) =>
      Number(new RegExp(`${name}: ([\\d.]+)`).exec(result.stderr)?.[1] ?? NaN);
    const peakKb = field("Maximum resident set size \\(kbytes\\)");
    // CPU seconds stay comparable when other work shares the machine; wall time does not.
    const cpu = field("User time \\(seconds\\)") + field("System time \\(seconds\\)");
    console.log(
      `${String(nodes).padStart(6)} nodes: ${(ms / 1000).toFixed(2)} s wall, ` +
        `${cpu.toFixed(2)} s CPU, peak RSS ${(peakKb / 1024).toFixed(0)} MB, ${(ms / TARGET_MS).toFixed(2)}x the 2 s target ` +
        `(${result.stdout.trim()})`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
