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
  const runs = () => readFileSync(calls, "utf8").trim().split("\n").filter(Boolean).length;
  const gate = (ssh: SshSettings, host: string) => sshSessionGates(options).keyOf(node(ssh, host));

  it("the first jump host of an ssh_config ProxyJump, or of the manifest's, which wins", async () => {
    assert.equal(await gate({}, "inner-01"), "bastion.example.net:2222");
    assert.equal(await gate({ proxy_jump: "other-bastion,x" }, "inner-01"), "other-bastion");
    assert.equal(await gate({ proxy_jump: "audit@[::1]:2222" }, "inner-01"), "[::1]:2222");
    // As ssh -G prints a jump it parsed: a numeric address in brackets.
    const numeric = { proxy_jump: "audit@192.0.2.9:2222" };
    assert.equal(await gate(numeric, "x"), "[192.0.2.9]:2222");
    assert.equal(await gate(numeric, "x"), await sessionGate(node(numeric, "x"), options));
  });

  it("without a jump host, the node's own sshd as ssh_config resolves it", async () => {
    assert.equal(await gate({}, "direct"), "192.0.2.7:2200");
    assert.equal(await gate({ port: 2201 }, "web-01.example.net"), "web-01.example.net:2201");
    // `proxy_jump: none` turns the ssh_config's jump host off.
    assert.equal(await gate({ proxy_jump: "none" }, "inner-01"), "inner-01:22");
  });

  it("plain Host blocks: no ssh started; a Match: ssh asked once per distinct setting; answers as asking for each node would", async () => {
    const nodes = [
      ...["a", "b", "c"].map((n) => node({}, "inner-01", `node-${n}`)),
      ...["d", "e"].map((n) => node({ user: "audit" }, "inner-01", `node-${n}`)),
      node({ port: 2201 }, "inner-01", "node-f"),
      node({}, "direct", "node-g"),
      node({ proxy_jump: "bastion-2" }, "inner-01", "node-h"),
      node({ proxy_jump: "none" }, "inner-02", "node-i"),
    ];
    const matchFile = join(dir, "match_config");
    writeFileSync(
      matchFile,
      `Match all\n  ServerAliveInterval 30\n${readFileSync(configFile, "utf8")}`,
    );
    for (const [file, started] of [
      [configFile, 0],
      [matchFile, 5],
    ] as const) {
      writeFileSync(calls, "");
      const gates = sshSessionGates({ ...options, configFile: file });
      const keys = await Promise.all(nodes.map((n) => gates.keyOf(n)));
      assert.equal(runs(), started, file);
      const each = [];
      for (const n of nodes) each.push(await sessionGate(n, { ...options, configFile: file }));
      assert.deepEqual(keys, each);
    }
  });
});

describe("the gates of a fleet whose ssh_config can route no node", () => {
  const dir = mkdtempSync(join(tmpdir(), "qm-ssh-gate-direct-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const calls = join(dir, "calls");
  const sshBinary = join(dir, "ssh");
  writeFileSync(sshBinary, `#!/bin/sh\necho "$@" >> ${calls}\nexec ssh "$@"\n`);
  chmodSync(sshBinary, 0o755);
  const configFile = join(dir, "ssh_config");
  const runs = () => readFileSync(calls, "utf8").trim().split("\n").filter(Boolean).length;
  const nodes = [
    node({}, "Web-01.example.net", "a"),
    node({ port: 2201 }, "web-01.example.net", "b"),
    node({ user: "audit" }, "192.0.2.7", "c"),
    node({ proxy_jump: "none" }, "[2001:db8::7]", "d"),
  ];

  it("start no ssh, and answer what ssh -G answers: the node's own host:port", async () => {
    writeFileSync(configFile, "Host *\n  User audit\n  ServerAliveInterval 30\n");
    writeFileSync(calls, "");
    const options = { connectTimeoutSeconds: 10, configFile, sshBinary };
    const keys = await Promise.all(nodes.map((n) => sshSessionGates(options).keyOf(n)));
    assert.equal(runs(), 0);
    const each = [];
    for (const n of nodes) each.push(await sessionGate(n, options));
    assert.deepEqual(keys, each);
    assert.deepEqual(keys, [
      "web-01.example.net:22",
      "web-01.example.net:2201",
      "192.0.2.7:22",
      "[2001:db8::7]:22",
    ]);
  });

  it("ask ssh once a line can route (a Match), as for every node", async () => {
    writeFileSync(configFile, "Match host web-*\n  User audit\n");
    writeFileSync(calls, "");
    const options = { connectTimeoutSeconds: 10, configFile, sshBinary };
    const gates = sshSessionGates(options);
    await Promise.all(nodes.map((n) => gates.keyOf(n)));
    assert.equal(runs(), nodes.length);
  });
});

describe("a first hop's sessions across parallel shards", () => {
  const options = { connectTimeoutSeconds: 10 };
  it("each of n shards gets its share of ssh.max_sessions, at least one", () => {
    const limit = (shards: number | undefined, max_sessions?: number) =>
      sshSessionGates(options, shards).limitOf(
        node(max_sessions ? { max_sessions } : {}, "x"),
        "x",
      );
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
