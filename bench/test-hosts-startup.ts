// Measures how long startFleet and stop take for N test hosts (default 40). Needs root.
// Usage: npx tsx bench/test-hosts-startup.ts [hosts]
import { execa } from "execa";
import { startFleet } from "../test/support/hosts.js";

const count = Number(process.argv[2] ?? 40);
const defs = Array.from({ length: count }, (_, i) => ({
  name: `host-${String(i + 1).padStart(2, "0")}`,
  sysctls: { "net.ipv4.ip_forward": String(i % 2) },
  // Every third host exercises the slower paths: a listener and private files.
  ...(i % 3 === 0
    ? {
        listeners: ["tcp/8080"],
        files: { "/etc/quartermaster-bench.conf": { contents: `host ${i}\n` } },
      }
    : {}),
}));

const t0 = performance.now();
const fleet = await startFleet(defs);
const started = performance.now();
try {
  // One ssh per host at once: proves every sshd answers, and gives the per-ssh floor of this
  // machine.
  const t1 = performance.now();
  const outputs = await Promise.all(
    fleet.hosts.map((h) =>
      execa("ssh", ["-F", fleet.sshConfig, h.name, "cat /proc/sys/net/ipv4/ip_forward"]),
    ),
  );
  const sshDone = performance.now();
  const wrong = outputs.filter((o, i) => o.stdout !== String(i % 2)).length;
  console.log(`hosts: ${count}`);
  console.log(`startFleet: ${((started - t0) / 1000).toFixed(2)} s`);
  console.log(
    `one ssh to every host (parallel): ${((sshDone - t1) / 1000).toFixed(2)} s, wrong answers: ${wrong}`,
  );
} finally {
  const t2 = performance.now();
  await fleet.stop();
  console.log(`stop: ${((performance.now() - t2) / 1000).toFixed(2)} s`);
}
