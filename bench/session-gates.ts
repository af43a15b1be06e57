// How long finding each node's session gate (the sshd its sessions start at: first jump host,
// else its own) takes for N stand-in nodes, through the fleet's node limiter (no node is
// audited, `ssh -G` connects nowhere). Three fleets:
//   few hosts  N nodes on 8 hosts/aliases (half of them behind an ssh_config ProxyJump);
//   distinct   N nodes, each its own host;
//   proxy_jump N distinct hosts whose manifest sets `ssh.proxy_jump`.
// For each: the per-node baseline (one `ssh -G` per node, as before), the gates audit uses now
// (`ssh -G` once per distinct setting, none where `proxy_jump` decides), the `ssh -G` runs each
// made, and the ratio. Usage: npx tsx bench/session-gates.ts [nodes=2000]
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { nodeLimit } from "../src/audit/fleet.js";
import type { LoadedNode } from "../src/manifest/load.js";
import type { SshSettings } from "../src/manifest/schema.js";
import { sessionGate, sshSessionGates, type SessionGates } from "../src/transport/session-gate.js";
import { DEFAULT_CONNECT_TIMEOUT_SECONDS } from "../src/transport/ssh.js";

const count = Number(process.argv[2] ?? 2000);
const dir = await mkdtemp(path.join(os.tmpdir(), "qm-bench-gates-"));
const configFile = path.join(dir, "ssh_config");
await writeFile(configFile, "Host jumped-*\n  ProxyJump bastion-01\nHost *\n  Port 22\n");
// ssh itself, its runs counted.
const calls = path.join(dir, "calls");
const sshBinary = path.join(dir, "ssh");
await writeFile(sshBinary, `#!/bin/sh\necho >> ${calls}\nexec ssh "$@"\n`, { mode: 0o755 });
const options = { configFile, sshBinary, connectTimeoutSeconds: DEFAULT_CONNECT_TIMEOUT_SECONDS };

const node = (i: number, host: string, ssh: SshSettings = {}): LoadedNode => ({
  name: `node-${i}`,
  host,
  file: `nodes/node-${i}.yaml`,
  layers: [],
  groups: [],
  spec: {},
  ssh,
});
const indices = Array.from({ length: count }, (_, i) => i);
const fleets: Record<string, LoadedNode[]> = {
  "few hosts": indices.map((i) => node(i, `${i % 2 ? "jumped" : "direct"}-${i % 8}`)),
  distinct: indices.map((i) => node(i, `host-${i}.example.net`)),
  proxy_jump: indices.map((i) => node(i, `host-${i}.example.net`, { proxy_jump: "bastion-02" })),
};

/** The baseline: one `ssh -G` per node. */
const perNode: SessionGates = {
  keyOf: (n) => sessionGate(n, options),
  limitOf: () => 8,
};

/** Every node's gate key, found as the fleet's limiter finds them; its time and ssh runs. */
async function resolve(nodes: LoadedNode[], sessions: SessionGates) {
  await rm(calls, { force: true });
  const found = new Map<LoadedNode, string>();
  const limit = nodeLimit(nodes.length, {
    keyOf: async (n) => {
      const key = await sessions.keyOf(n);
      found.set(n, key);
      return key;
    },
    limitOf: sessions.limitOf,
  });
  const started = performance.now();
  await Promise.all(nodes.map((n) => limit(n, () => Promise.resolve())));
  const ms = performance.now() - started;
  const keys = nodes.map((n) => found.get(n));
  const runs = (await readFile(calls, "utf8").catch(() => "")).split("\n").length - 1;
  return { ms, runs, keys };
}

try {
  console.log(`${count} stand-in nodes per fleet`);
  for (const [name, nodes] of Object.entries(fleets)) {
    const before = await resolve(nodes, perNode);
    const after = await resolve(nodes, sshSessionGates(options));
    if (!isDeepStrictEqual(before.keys, after.keys)) throw new Error(`${name}: the gates differ`);
    console.log(
      [
        name.padEnd(10),
        `per node ${(before.ms / 1000).toFixed(2)} s (${before.runs} ssh -G)`,
        `now ${(after.ms / 1000).toFixed(3)} s (${after.runs} ssh -G)`,
        `${(before.ms / after.ms).toFixed(1)}x`,
        `${new Set(after.keys).size} gate(s)`,
      ].join("  "),
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
