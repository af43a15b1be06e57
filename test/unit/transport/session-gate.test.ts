import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { LoadedNode } from "../../../src/manifest/load.js";
import type { SshSettings } from "../../../src/manifest/schema.js";
import {
  firstHop,
  fleetSessionLimit,
  sessionGate,
  sshSessionGates,
} from "../../../src/transport/session-gate.js";

const node = (ssh: SshSettings, host: string, name = host): LoadedNode => ({
  name,
  host,
  file: `fleet-manifests/nodes/${name}.yaml`,
  layers: [],
  groups: [],
  spec: {},
  ssh,
});

describe("the first hop of a resolved ssh configuration", () => {
  it("is the first jump host, else the node's sshd", () => {
    assert.equal(firstHop("user audit\nhostname 10.0.0.9\nport 2222\n"), "10.0.0.9:2222");
    assert.equal(
      firstHop("hostname 10.0.0.9\nport 22\nproxyjump audit@bastion:22,inner\n"),
      "bastion:22",
    );
    assert.equal(firstHop("proxyjump ssh://audit@bastion\n"), "bastion");
    assert.equal(firstHop(""), undefined);
  });
});

describe("which sshd a node's session starts at", () => {
  const dir = mkdtempSync(join(tmpdir(), "qm-ssh-gate-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const configFile = join(dir, "ssh_config");
  writeFileSync(
    configFile,
    "Host inner-*\n  ProxyJump audit@bastion.example.net:2222,inner-bastion\nHost direct\n  HostName 192.0.2.7\n  Port 2200\n",
  );
  // The real ssh client resolves the settings (`ssh -G`): it connects nowhere. A wrapper counts
  // how often it runs.
  const calls = join(dir, "calls");
  const sshBinary = join(dir, "ssh");
  writeFileSync(sshBinary, `#!/bin/sh\necho "$@" >> ${calls}\nexec ssh "$@"\n`);
  chmodSync(sshBinary, 0o755);
  const options = { connectTimeoutSeconds: 10, configFile, sshBinary };
  const runs = () => readFileSync(calls, "utf8").trim().split("\n").length;
  const gate = (ssh: SshSettings, host: string) => sshSessionGates(options).keyOf(node(ssh, host));

  it("the first jump host of an ssh_config ProxyJump, or of the manifest's, which wins", async () => {
    assert.equal(await gate({}, "inner-01"), "bastion.example.net:2222");
    assert.equal(await gate({ proxy_jump: "other-bastion,x" }, "inner-01"), "other-bastion");
    assert.equal(await gate({ proxy_jump: "audit@[::1]:2222" }, "inner-01"), "[::1]:2222");
  });

  it("without a jump host, the node's own sshd as ssh_config resolves it", async () => {
    assert.equal(await gate({}, "direct"), "192.0.2.7:2200");
    assert.equal(await gate({ port: 2201 }, "web-01.example.net"), "web-01.example.net:2201");
    // `proxy_jump: none` turns the ssh_config's jump host off.
    assert.equal(await gate({ proxy_jump: "none" }, "inner-01"), "inner-01:22");
  });

  it("asks ssh once per distinct setting, and answers as asking for each node would", async () => {
    rmSync(calls, { force: true });
    const nodes = [
      ...["a", "b", "c"].map((n) => node({}, "inner-01", `node-${n}`)),
      ...["d", "e"].map((n) => node({ user: "audit" }, "inner-01", `node-${n}`)),
      node({ port: 2201 }, "inner-01", "node-f"),
      node({}, "direct", "node-g"),
      node({ proxy_jump: "bastion-2" }, "inner-01", "node-h"),
    ];
    const gates = sshSessionGates(options);
    const keys = await Promise.all(nodes.map((n) => gates.keyOf(n)));
    assert.equal(runs(), 4);
    const each = [];
    for (const n of nodes) each.push(await sessionGate(n, options));
    assert.deepEqual(keys, each);
  });
});

describe("a first hop's sessions across parallel shards", () => {
  const options = { connectTimeoutSeconds: 10 };
  it("each of n shards gets its share of ssh.max_sessions, at least one", () => {
    const limit = (shards: number | undefined, max_sessions?: number) =>
      sshSessionGates(options, shards).limitOf(node(max_sessions ? { max_sessions } : {}, "x"));
    assert.deepEqual(
      [limit(undefined), limit(1), limit(2), limit(3), limit(2, 4), limit(3, 4), limit(9, 4)],
      [8, 8, 4, 2, 2, 1, 1],
    );
  });

  it("the whole run's limit is the smallest ssh.max_sessions of the fleet", () => {
    assert.equal(fleetSessionLimit([node({}, "a"), node({ max_sessions: 4 }, "b")]), 4);
    assert.equal(fleetSessionLimit([node({}, "a")]), 8);
  });
});
