import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import type { LoadedNode } from "../../../src/manifest/load.js";
import { throttlingNotices } from "../../../src/runs/throttling.js";
import { sshSessionGates } from "../../../src/transport/session-gate.js";

const node = (name: string, ssh: LoadedNode["ssh"]): LoadedNode => ({
  name,
  host: name,
  file: `nodes/${name}.yaml`,
  layers: [],
  groups: [],
  spec: {},
  ssh,
});

test("retries through a jump host are said once for it, with how many and the setting to change, whether the manifest or the ssh_config names it", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "qm-throttling-"));
  try {
    const configFile = path.join(dir, "ssh_config");
    // web-3's jump host is the ssh_config's alone; direct has none.
    await writeFile(configFile, "Host web-3\n  ProxyJump ops@bastion:22\n");
    const gates = sshSessionGates({ configFile, connectTimeoutSeconds: 10 });
    const nodes = [
      node("web-1", { proxy_jump: "ops@bastion:22,inner" }),
      node("web-2", { proxy_jump: "ops@bastion:22", max_sessions: 6 }),
      node("web-3", {}),
      node("web-4", { proxy_jump: "ops@bastion:22" }),
      node("direct", {}),
    ];
    const tries = new Map([
      ["web-1", 3],
      ["web-2", 2],
      ["web-3", 2],
      ["direct", 4],
    ]);
    assert.deepEqual(await throttlingNotices(nodes, tries, gates.jumpHostOf), [
      "jump host bastion:22: 4 retries on 3 nodes whose connections through it were dropped or reset before ssh's handshake (as an sshd past its MaxStartups drops them): set ssh.max_sessions on the nodes behind it (now 6) below that sshd's MaxStartups start value, or raise MaxStartups there",
    ]);
    assert.deepEqual(await throttlingNotices(nodes, new Map(), gates.jumpHostOf), []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
