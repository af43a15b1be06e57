import assert from "node:assert/strict";
import { it } from "node:test";
import { domainByName } from "../../../src/domains/registry.js";
import { onDriftByCause, toDriftItems } from "../../../src/drift/drift.js";
import type { Policy } from "../../../src/manifest/schema.js";
import { fleet } from "../propose/fixtures.js";

const node = fleet.nodes[0]!;
const finding = (key: string, kind?: "runtime" | "persisted") => ({
  key,
  declared: "10",
  live: "60",
  path: ["system", "sysctl_parameters", key],
  ...(kind && { cause: { kind, evidence: "e" } }),
});
const items = (policy: Policy) =>
  toDriftItems(
    node,
    domainByName("sysctl")!,
    [finding("a", "runtime"), finding("b", "persisted"), finding("c")],
    { policy, waivers: [], tickets: [], now: new Date() },
  ).map((item) => item.onDrift);

it("on_drift by cause: the kind named for the item's cause, else otherwise, else the domain's default", () => {
  assert.deepEqual(items({ sysctl: { on_drift: { runtime: "ticket", persisted: "accept" } } }), [
    "ticket",
    "accept",
    "accept",
  ]);
  assert.deepEqual(items({ sysctl: { on_drift: { runtime: "ticket", otherwise: "ticket" } } }), [
    "ticket",
    "ticket",
    "ticket",
  ]);
  assert.deepEqual(items({ sysctl: { on_drift: "ticket" } }), ["ticket", "ticket", "ticket"]);
  // A cause the host's records give after the domains compared decides too.
  const kernel = domainByName("kernel")!;
  const policy: Policy = { kernel: { on_drift: { package: "accept", otherwise: "ticket" } } };
  const [booted] = toDriftItems(
    node,
    kernel,
    [
      {
        key: "kernel_version",
        declared: "6.1.0-28-amd64",
        live: "6.1.0-30-amd64",
        path: kernel.specPath,
      },
    ],
    { policy, waivers: [], tickets: [], now: new Date() },
  );
  assert.equal(booted!.onDrift, "ticket");
  const [installed] = onDriftByCause(
    [{ ...booted!, cause: { kind: "package", evidence: "linux-image-6.1.0-30-amd64 installed" } }],
    policy,
  );
  assert.equal(installed!.onDrift, "accept");
});
