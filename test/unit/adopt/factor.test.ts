import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  factorFleet,
  mergedSpecOf,
  overridesOver,
  sameSpec,
  type NodeSnapshot,
} from "../../../src/adopt/factor.js";
import type { Layer } from "../../../src/manifest/layer.js";
import { mergeLayers } from "../../../src/manifest/merge-layers.js";
import { NodeSpec } from "../../../src/manifest/schema.js";

// Stand-in snapshots drawn from a few values per key, so nodes share some and differ in others.
const sysctls = fc.dictionary(
  fc.constantFrom("net.ipv4.ip_forward", "vm.swappiness", "net.core.somaxconn", "kernel.pid_max"),
  fc.constantFrom("0", "1", "10"),
);
const packages = fc.dictionary(
  fc.constantFrom("bash", "nginx", "postgresql", "__proto__", "constructor"),
  fc.constant("*"),
);
const ports = fc.uniqueArray(
  fc.constantFrom("tcp/22", "tcp/80", "tcp/5432", "tcp/32768-60999@loopback"),
);
// A file's fields as a snapshot takes them: its contents where the audit user may read it, its hash
// where it is secret or root-only, mode and owner alone where the audit user cannot read it.
const filePath = fc.constantFrom("/etc/a", "/etc/b");
const files = fc.uniqueArray(
  fc.oneof(
    fc.record({
      path: filePath,
      contents: fc.constantFrom("x\n", "y\n"),
      mode: fc.constant("0644"),
    }),
    fc.record({ path: filePath, sha256: fc.constant("ab".repeat(32)), mode: fc.constant("0600") }),
    fc.record({ path: filePath, mode: fc.constant("0600"), owner: fc.constant("root") }),
  ),
  { selector: (f) => f.path },
);
const spec = fc
  .record(
    { sysctl: sysctls, packages, ports, files, kernel: fc.constantFrom("6.1.0", "6.1.1") },
    { requiredKeys: [] },
  )
  .map((r) => ({
    ...(r.kernel !== undefined || r.sysctl !== undefined
      ? {
          system: {
            ...(r.kernel !== undefined && { kernel_version: r.kernel }),
            ...(r.sysctl !== undefined && { sysctl_parameters: r.sysctl }),
          },
        }
      : {}),
    ...(r.packages !== undefined && { packages: { installed_manifest: r.packages } }),
    ...(r.ports !== undefined && { networking: { listening_ports: r.ports } }),
    ...(r.files !== undefined && { files: r.files }),
  }));

const GROUPS = ["web", "db", "prod", "eu"];
const PARENTS = new Map<string, string[]>([
  ["web", ["prod"]],
  ["db", ["prod"]],
  ["prod", []],
  ["eu", []],
]);

const fleet = fc
  .array(fc.tuple(spec, fc.subarray(GROUPS)), { minLength: 1, maxLength: 8 })
  .map((entries) =>
    entries.map(([s, groups], i): NodeSnapshot => ({ name: `n${i}`, groups, spec: s })),
  );

test("the merged layers of every node are its snapshot (inventory groups)", () => {
  fc.assert(
    fc.property(fleet, (nodes) => {
      const factored = factorFleet({ nodes, groups: PARENTS });
      for (const node of nodes)
        assert.ok(sameSpec(mergedSpecOf(factored, node.name), node.spec), node.name);
    }),
    { numRuns: 300 },
  );
});

test("the merged layers of every node are its snapshot (grouped by value)", () => {
  fc.assert(
    fc.property(fleet, (drawn) => {
      const nodes = drawn.map((n) => ({ ...n, groups: [] }));
      const factored = factorFleet({ nodes, groups: new Map(), byValue: true });
      for (const node of nodes)
        assert.ok(sameSpec(mergedSpecOf(factored, node.name), node.spec), node.name);
    }),
    { numRuns: 300 },
  );
});

test("shared values are declared once, where every node they reach holds them", () => {
  const web = (name: string, own: Record<string, string>) => ({
    name,
    groups: ["web"],
    spec: {
      system: { sysctl_parameters: { "vm.swappiness": "10", "net.ipv4.ip_forward": "1", ...own } },
      networking: { listening_ports: ["tcp/22", "tcp/80"] },
    },
  });
  const db = (name: string) => ({
    name,
    groups: ["db"],
    spec: {
      system: { sysctl_parameters: { "vm.swappiness": "10", "net.ipv4.ip_forward": "0" } },
      networking: { listening_ports: ["tcp/22", "tcp/5432"] },
    },
  });
  const nodes = [
    web("web-01", {}),
    web("web-02", { "kernel.pid_max": "4096" }),
    db("db-01"),
    db("db-02"),
  ];
  const factored = factorFleet({
    nodes,
    groups: new Map([
      ["web", []],
      ["db", []],
    ]),
  });
  assert.deepEqual(factored.fleet, { system: { sysctl_parameters: { "vm.swappiness": "10" } } });
  assert.deepEqual(factored.groups.get("web")!.spec, {
    system: { sysctl_parameters: { "net.ipv4.ip_forward": "1" } },
    networking: { listening_ports: ["tcp/22", "tcp/80"] },
  });
  assert.deepEqual(factored.nodes.get("web-01"), { groups: ["web"], spec: {} });
  assert.deepEqual(factored.nodes.get("web-02")!.spec, {
    system: { sysctl_parameters: { "kernel.pid_max": "4096" } },
  });
  for (const layer of [factored.fleet, ...[...factored.groups.values()].map((g) => g.spec)])
    assert.ok(NodeSpec.safeParse(layer).success);
  // Without groups, the same two roles are found by value.
  const byValue = factorFleet({
    nodes: nodes.map((n) => ({ ...n, groups: [] })),
    groups: new Map(),
    byValue: true,
  });
  assert.deepEqual([...byValue.groups.keys()], ["shared-1", "shared-2"]);
  assert.deepEqual(byValue.nodes.get("db-01")!.groups, ["shared-1"]);
  assert.deepEqual(byValue.nodes.get("web-02")!.groups, ["shared-2"]);
});

test("a value most of a group's members hold is the group's; the odd node overrides it", () => {
  const web = (name: string, ports: string[], swappiness = "10") => ({
    name,
    groups: ["web"],
    spec: {
      system: { sysctl_parameters: { "vm.swappiness": swappiness } },
      networking: { listening_ports: ports },
    },
  });
  const usual = ["tcp/22", "tcp/80"];
  const nodes = [
    web("web-01", usual),
    web("web-02", [...usual, "tcp/9100"], "60"),
    web("web-03", usual),
    { name: "db-01", groups: ["db"], spec: { networking: { listening_ports: ["tcp/5432"] } } },
    { name: "db-02", groups: ["db"], spec: {} },
  ];
  const factored = factorFleet({
    nodes,
    groups: new Map([
      ["web", []],
      ["db", []],
    ]),
  });
  assert.deepEqual(factored.groups.get("web")!.spec, {
    system: { sysctl_parameters: { "vm.swappiness": "10" } },
    networking: { listening_ports: usual },
  });
  assert.deepEqual(factored.nodes.get("web-01")!.spec, {});
  assert.deepEqual(factored.nodes.get("web-02")!.spec, {
    system: { sysctl_parameters: { "vm.swappiness": "60" } },
    networking: { listening_ports: [...usual, "tcp/9100"] },
  });
  // db-02 declares no ports: a group value would need deleting there, so db keeps none.
  assert.deepEqual(factored.groups.get("db")!.spec, {});
  for (const node of nodes)
    assert.ok(sameSpec(mergedSpecOf(factored, node.name), node.spec), node.name);
  // Two members apart: no majority, each keeps its own.
  const split = factorFleet({ nodes: nodes.slice(0, 2), groups: new Map([["web", []]]) });
  assert.deepEqual(split.groups.get("web")!.spec, {});
});

test("a file one host declares with other fields than its group's (root-only there: no contents) overrides them with null, and loads", () => {
  const conf = { path: "/etc/app.conf", contents: "a\n", mode: "0644", owner: "root" };
  const rootOnly = { path: "/etc/app.conf", mode: "0600", owner: "root" };
  const nodes: NodeSnapshot[] = ["web-1", "web-2", "web-3"].map((name) => ({
    name,
    groups: ["web"],
    spec: { files: [name === "web-3" ? rootOnly : conf] },
  }));
  const factored = factorFleet({ nodes, groups: new Map([["web", []]]) });
  assert.deepEqual(factored.groups.get("web")!.spec, { files: { "/etc/app.conf": conf } });
  const own = factored.nodes.get("web-3")!.spec;
  assert.deepEqual(own, { files: { "/etc/app.conf": { ...rootOnly, contents: null } } });
  for (const node of nodes) assert.ok(sameSpec(mergedSpecOf(factored, node.name), node.spec));
  // The same over an existing tree's layers.
  const base = { files: [conf] };
  assert.deepEqual(overridesOver(base, { files: [rootOnly] }), own);
});

/** A node file as the loader reads it: `null` values are deletions, the rest its value. */
function nodeLayer(value: Record<string, unknown>): Layer {
  const deletions: string[][] = [];
  const strip = (v: Record<string, unknown>, at: string[]): Record<string, unknown> =>
    Object.fromEntries(
      Object.entries(v).flatMap(([k, inner]) => {
        if (inner === null) {
          deletions.push([...at, k]);
          return [];
        }
        const isMap = typeof inner === "object" && !Array.isArray(inner);
        return [[k, isMap ? strip(inner as Record<string, unknown>, [...at, k]) : inner]];
      }),
    );
  const kept = strip(value, []);
  return { file: "node", value: kept, deletions, origins: new Map() };
}

test("a new node's own file over an existing tree's layers merges to its snapshot", () => {
  fc.assert(
    fc.property(spec, spec, (base, wanted) => {
      const { files: _f1, ...b } = base;
      const { files: _f2, ...w } = wanted;
      const merged = mergeLayers([
        { file: "base", value: b, deletions: [], origins: new Map() },
        nodeLayer(overridesOver(b, w)),
      ]);
      assert.ok(sameSpec(merged, w), JSON.stringify({ b, w, merged }));
    }),
    { numRuns: 300 },
  );
});

test("a value every member of a group holds goes to that group, not to a parent whose other members would override it", () => {
  const ports = (list: string[]) => ({ networking: { listening_ports: list } });
  const nodes: NodeSnapshot[] = [
    { name: "web-1", groups: ["web"], spec: ports(["tcp/22", "tcp/8080"]) },
    { name: "web-2", groups: ["web"], spec: ports(["tcp/22", "tcp/8080"]) },
    { name: "web-3", groups: ["web"], spec: ports(["tcp/22", "tcp/8080"]) },
    { name: "db-1", groups: ["db"], spec: ports(["tcp/22", "tcp/5432"]) },
  ];
  const factored = factorFleet({
    nodes,
    groups: new Map([
      ["prod", []],
      ["web", ["prod"]],
      ["db", ["prod"]],
    ]),
    fleet: true,
  });
  assert.deepEqual(factored.groups.get("prod")!.spec, {});
  assert.deepEqual(factored.groups.get("web")!.spec, ports(["tcp/22", "tcp/8080"]));
  for (const name of ["web-1", "web-2", "web-3"])
    assert.deepEqual(factored.nodes.get(name)!.spec, {}, name);
  assert.deepEqual(factored.nodes.get("db-1")!.spec, ports(["tcp/22", "tcp/5432"]));
  for (const node of nodes) assert.ok(sameSpec(mergedSpecOf(factored, node.name), node.spec));
});
