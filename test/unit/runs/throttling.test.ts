import assert from "node:assert/strict";
import { test } from "node:test";
import type { LoadedNode } from "../../../src/manifest/load.js";
import { throttlingNotices } from "../../../src/runs/throttling.js";

const node = (name: string, ssh: LoadedNode["ssh"]): LoadedNode => ({
  name,
  host: name,
  file: `nodes/${name}.yaml`,
  layers: [],
  groups: [],
  spec: {},
  ssh,
});

test("retries through a jump host are said once for it, with how many and the setting to change", () => {
  const nodes = [
    node("web-1", { proxy_jump: "ops@bastion:22,inner" }),
    node("web-2", { proxy_jump: "ops@bastion:22", max_sessions: 6 }),
    node("web-3", { proxy_jump: "ops@bastion:22" }),
    node("direct", {}),
  ];
  const tries = new Map([
    ["web-1", 3],
    ["web-2", 2],
    ["direct", 4],
  ]);
  assert.deepEqual(throttlingNotices(nodes, tries), [
    "jump host ops@bastion:22: 3 retries on 2 nodes whose connections through it were dropped or reset before ssh's handshake (as an sshd past its MaxStartups drops them): set ssh.max_sessions on the nodes behind it (now 6) below that sshd's MaxStartups start value, or raise MaxStartups there",
  ]);
  assert.deepEqual(throttlingNotices(nodes, new Map()), []);
});
