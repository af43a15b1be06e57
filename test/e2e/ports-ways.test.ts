// The ports section reads the TCP listeners from /proc/net/tcp and tcp6 where its TCP hash is small
// and asks ss where it is large (src/domains/ports/index.ts), and leaves tcp6 out where no IPv6 TCP
// socket exists: on real sshd test hosts, as the audit user, each way finds the same listeners, and
// the CLI reports the same drift. Each host's /proc/meminfo says its memory (a bind mount, as lxcfs
// shows a container its own); its sockets are real. Needs root.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
import { ports } from "../../src/domains/ports/index.js";
import type { PortsLive } from "../../src/domains/ports/parse.js";
import {
  buildProbe,
  newNonce,
  parseContext,
  parseProbeOutput,
  probeContext,
} from "../../src/probe/script.js";
import type { Report } from "../../src/report/schema.js";
import { auditThroughCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { removeTree, writeTree } from "../support/tree.js";

/** A TCP hash of 2 Ki buckets, and of 512 Ki, the most the kernel makes. */
const MEMORY = { "small-01": 262144, "large-01": 268435456, "v4-01": 262144 };
const HOSTS = Object.keys(MEMORY) as (keyof typeof MEMORY)[];
/** Hosts with an IPv6 TCP listener: v4-01 has none (its sshd listens on its IPv4 address). */
const TCP6 = HOSTS.filter((name) => name !== "v4-01");
/**
 * The section counts every TCP socket of the machine (sockstat's `alloc` and `tw`, every namespace):
 * over about 1,000 the small hosts' walks of their 2 Ki buckets cost more than ss, and they ask ss.
 * Other tests running beside this one (hundreds of ssh sessions leave TIME_WAIT sockets for a
 * minute) can pass that: the tables are asserted where the machine counted fewer than this before
 * and after the probe.
 */
const QUIET_SOCKETS = 700;

/** The TCP sockets the section counts on host `name` (its own namespace's `tw`). */
async function tcpSockets(fleet: TestFleet, name: string): Promise<number> {
  const m = /^TCP: inuse \d+ orphan \d+ tw (\d+) alloc (\d+)/m.exec(
    await fleet.exec(name, "cat /proc/net/sockstat"),
  );
  return m ? Number(m[1]) + Number(m[2]) : Infinity;
}

/** Waits up to two minutes for host `name` to count fewer than QUIET_SOCKETS TCP sockets. */
async function quietMachine(fleet: TestFleet, name: string): Promise<boolean> {
  for (let i = 0; i < 120; i++) {
    if ((await tcpSockets(fleet, name)) < QUIET_SOCKETS) return true;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  return false;
}

describe("ports: the TCP tables on a host with a small TCP hash, ss on one with a large hash", () => {
  let fleet: TestFleet;
  let manifests: string;

  before(async () => {
    fleet = await startFleet(
      HOSTS.map((name) => ({
        name,
        listeners: ["tcp/8080", "udp/5353"],
        files: {
          "/proc/meminfo": { contents: `MemTotal: ${MEMORY[name]} kB\nMemFree: 1024 kB\n` },
        },
      })),
    );
    // An IPv6 listener beside the harness's IPv4 ones; it goes with the host.
    const ready = "/run/qm-ports-ways-ready";
    const script = `require("net").createServer().listen({ port: 8443, host: "::1", ipv6Only: true }, () => require("fs").writeFileSync("${ready}", ""))`;
    for (const name of TCP6)
      await fleet.exec(
        name,
        `rm -f ${ready}; ${process.execPath} -e '${script}' </dev/null >/dev/null 2>&1 & while [ ! -e ${ready} ]; do sleep 0.1; done`,
      );
    manifests = await writeTree({
      "fleet.yaml": "networking:\n  listening_ports: [tcp/22]\n",
      ...Object.fromEntries(HOSTS.map((name) => [`nodes/${name}.yaml`, `host: ${name}\n`])),
    });
  });

  after(async () => {
    await fleet?.stop();
    await removeTree(manifests);
  });

  test("the section reads the tables on the small host and asks ss on the large one: the same listeners", async (t) => {
    const nonce = newNonce();
    const section = ports.probe([], probeContext(nonce, 1 << 20));
    const script = buildProbe(nonce, [{ name: "ports", script: section, awk: ports.awk }]).script;
    const probed = new Map<string, { output: string; live: PortsLive; quiet: boolean }>();
    for (const name of HOSTS) {
      const quiet = await quietMachine(fleet, name);
      const run = await execa("ssh", ["-F", fleet.sshConfig, name, "sh -s"], { input: script });
      const output = parseProbeOutput(run.stdout, nonce).get("ports")!.output;
      probed.set(name, {
        output,
        live: ports.parse(output, parseContext(nonce)),
        quiet: quiet && (await tcpSockets(fleet, name)) < QUIET_SOCKETS,
      });
    }
    const small = probed.get("small-01")!;
    const large = probed.get("large-01")!;
    const v4 = probed.get("v4-01")!;
    if (small.quiet) {
      assert.doesNotMatch(small.output, /^ss: /m);
      assert.match(small.output, /^\/proc\/net\/tcp6: \d+: 0{24}01000000:20FB /m);
    } else t.diagnostic("small-01: the machine counted too many TCP sockets to assert its way");
    assert.match(large.output, /^ss: tcp listening$/m);
    assert.doesNotMatch(large.output, /^\/proc\/net\/tcp6?:/m);
    // No IPv6 TCP socket (sockstat6): the hash is walked once, for /proc/net/tcp.
    if (v4.quiet) {
      assert.match(v4.output, /^\/proc\/net\/tcp: sl $/m);
      assert.doesNotMatch(v4.output, /^(ss|\/proc\/net\/tcp6):/m);
    } else t.diagnostic("v4-01: the machine counted too many TCP sockets to assert its way");
    // Each host's sshd listens on its own address.
    const others = ({ listeners }: PortsLive) =>
      Object.fromEntries([...listeners].filter(([port]) => port !== "tcp/22"));
    assert.deepEqual(others(small.live), {
      "tcp/8080": ["0.0.0.0"],
      "tcp/8443": ["[::1]"],
      "udp/5353": ["0.0.0.0"],
    });
    assert.deepEqual(others(large.live), others(small.live));
    assert.deepEqual(others(v4.live), { "tcp/8080": ["0.0.0.0"], "udp/5353": ["0.0.0.0"] });
    for (const { live } of probed.values()) assert.equal(live.listeners.get("tcp/22")?.length, 1);
  });

  test("the audit reports the same drift on both hosts", async () => {
    const out = path.join(manifests, "report.json");
    const result = await auditThroughCli(manifests, fleet.sshConfig)("json", "--out", out);
    assert.equal(result.exitCode, 1, result.stderr);
    const report = JSON.parse(await readFile(out, "utf8")) as Report;
    const drift = (name: string) =>
      report.nodes
        .find((node) => node.name === name)!
        .drift.map((item) => `${item.key}: ${item.live}, ${item.detail}`);
    assert.deepEqual(drift("small-01"), [
      "tcp/8080: listening, listening on 0.0.0.0 (process unknown, user root)",
      "tcp/8443: listening, listening on [::1] (process unknown, user root)",
      "udp/5353: listening, listening on 0.0.0.0 (process unknown, user root)",
    ]);
    assert.deepEqual(drift("large-01"), drift("small-01"));
    assert.deepEqual(
      drift("v4-01"),
      drift("small-01").filter((item) => !item.startsWith("tcp/8443")),
    );
  });
});
