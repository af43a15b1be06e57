// Probe output that is cut short or not what the probe prints: the node is not audited, and its
// error says which, in the words the report shows.
import assert from "node:assert/strict";
import { it } from "node:test";
import { auditNode, defaultAuditSettings } from "../../../src/audit/node.js";
import type { LoadedNode } from "../../../src/manifest/load.js";
import {
  framed,
  marked,
  KERNEL_ONLY,
  NOT_IN_MAINTENANCE,
  scriptedTransport,
} from "../../support/probe-output.js";

const node: LoadedNode = {
  name: "web-01",
  host: "web-01",
  file: "nodes/web-01.yaml",
  layers: [],
  groups: [],
  spec: { system: { kernel_version: "6.1.0-28-amd64" } },
  ssh: {},
};

const audit = (output: (nonce: string) => string) =>
  auditNode(node, scriptedTransport(output), defaultAuditSettings(), {
    policy: {},
    waivers: [],
    tickets: [],
    now: new Date(),
  });

it("the whole output audits clean", async () => {
  assert.equal((await audit(KERNEL_ONLY)).status, "clean");
});

it("output without its end-of-probe line is truncated: the node is not audited", async () => {
  const result = await audit((nonce) => KERNEL_ONLY(nonce).replace(`${nonce} done\n`, ""));
  assert.deepEqual(
    [result.status, result.error, result.drift],
    [
      "error",
      "probe output probe: output is truncated (no end-of-probe marker); node not audited",
      [],
    ],
  );
});

it("a section cut before its end is truncated, named by its section", async () => {
  const result = await audit((nonce) =>
    KERNEL_ONLY(nonce).replace(`${nonce} end kernel\n`, `${nonce} end kern\n`),
  );
  assert.deepEqual(
    [result.status, result.error],
    ["error", "probe output kernel: section is truncated; node not audited"],
  );
});

it("a section the host printed twice is malformed output: the node is not audited", async () => {
  const result = await audit((nonce) => {
    const kernel = marked(nonce, [["running", "6.1.0-28-amd64\n"]]);
    return framed(nonce, [
      ["maintenance", NOT_IN_MAINTENANCE(nonce)],
      ["kernel", kernel],
      ["kernel", kernel],
    ]);
  });
  assert.deepEqual(
    [result.status, result.error],
    ["error", "probe output kernel: section appears twice in the probe output; node not audited"],
  );
});
