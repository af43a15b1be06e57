// The fleet audit hands each node's entry on as it finishes and keeps none of them itself.
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, it } from "node:test";
import { stringify } from "yaml";
import { auditFleet } from "../../../src/audit/fleet.js";
import { defaultAuditSettings } from "../../../src/audit/node.js";
import { NodeAuditError } from "../../../src/errors.js";
import { loadFleet } from "../../../src/manifest/load.js";
import type { Transport } from "../../../src/transport/transport.js";
import {
  framed,
  marked,
  NOT_IN_MAINTENANCE,
  scriptedTransport,
} from "../../support/probe-output.js";
import { removeTree, writeTree } from "../../support/tree.js";

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));

const kernel = (release: string) => (nonce: string) =>
  framed(nonce, [
    ["maintenance", NOT_IN_MAINTENANCE(nonce)],
    [
      "kernel",
      marked(nonce, [
        ["running", `${release}\n`],
        ["installed", ""],
      ]),
    ],
  ]);

// The spool is made under os.tmpdir(), which TMPDIR names: a directory of the test's own, so the
// spools of other test processes running at once are not counted.
const spoolDirs = () =>
  readdirSync(os.tmpdir()).filter((name) => name.startsWith("quartermaster-report-"));

async function inOwnTmpdir<T>(run: () => Promise<T>): Promise<T> {
  const own = await mkdtemp(path.join(os.tmpdir(), "qm-spool-test-"));
  dirs.push(own);
  const tmpdir = process.env.TMPDIR;
  process.env.TMPDIR = own;
  try {
    return await run();
  } finally {
    if (tmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmpdir;
  }
}

it("nodes finishing in any order are reported in name order, each seen as it finishes, and no spool file is left", async () => {
  const spec = stringify({ system: { kernel_version: "6.1.0-28-amd64" } });
  const names = ["web-b", "Web-c", "web-a", "down"];
  const dir = await writeTree(Object.fromEntries(names.map((n) => [`nodes/${n}.yaml`, spec])));
  dirs.push(dir);
  const fleet = await loadFleet(dir);
  // Later names finish first, each only once the one before it was handed on (no timing: a node
  // kept until the whole fleet finished would never let the next finish); web-a's kernel drifted;
  // one node cannot be reached.
  const order = ["down", "web-a", "Web-c", "web-b"];
  const handedOn = new Map<string, () => void>();
  const seen = new Map(
    order.map((name) => [name, new Promise<void>((resolve) => handedOn.set(name, resolve))]),
  );
  const transportFor = (node: { name: string }): Transport => {
    const inner = scriptedTransport(
      kernel(node.name === "web-a" ? "6.1.0-99-amd64" : "6.1.0-28-amd64"),
    );
    return {
      describe: inner.describe,
      async run(script, limits) {
        const before = order[order.indexOf(node.name) - 1];
        if (before !== undefined) await seen.get(before);
        if (node.name === "down")
          throw new NodeAuditError("down", "unreachable", "no route to host");
        return inner.run(script, limits);
      },
    };
  };
  const finished: string[] = [];
  const spools: string[][] = [];
  const { report, left } = await inOwnTmpdir(async () => {
    const report = await auditFleet({
      nodes: fleet.nodes,
      transportFor,
      settings: defaultAuditSettings(),
      drift: { policy: {}, waivers: [], tickets: [], now: new Date() },
      concurrency: 4,
      manifestRevision: null,
      onResult: (result) => {
        finished.push(result.name);
        spools.push(spoolDirs());
        handedOn.get(result.name)?.();
      },
    });
    return { report, left: spoolDirs() };
  });
  assert.deepEqual(finished, order);
  // A fleet this small keeps its entries in memory: no spool file while the nodes finish or after.
  assert.deepEqual(spools.flat(), []);
  assert.deepEqual(left, []);
  assert.deepEqual(
    report.nodes.map((n) => [n.name, n.status, n.drift.map((d) => d.live)]),
    [
      ["Web-c", "clean", []],
      ["down", "unreachable", []],
      ["web-a", "drift", ["6.1.0-99-amd64"]],
      ["web-b", "clean", []],
    ],
  );
  assert.deepEqual(report.summary, {
    nodes: 4,
    clean: 2,
    drifted: 1,
    unreachable: 1,
    errors: 0,
    maintenance: 0,
    driftItems: 1,
    acknowledgedItems: 0,
    latentItems: 0,
  });
});

it("sessions through one jump host stay within its limit while other nodes use the free slots", async () => {
  const spec = stringify({ system: { kernel_version: "6.1.0-28-amd64" } });
  const names = [
    ...["a1", "a2", "a3", "a4", "a5", "a6"].map((n) => `behind-${n}`),
    ...["d1", "d2", "d3", "d4"].map((n) => `direct-${n}`),
  ];
  const dir = await writeTree(Object.fromEntries(names.map((n) => [`nodes/${n}.yaml`, spec])));
  dirs.push(dir);
  const fleet = await loadFleet(dir);
  const gateOf = (name: string) => (name.startsWith("behind-") ? "bastion:22" : `${name}:22`);
  const running = new Map<string, number>();
  const most = new Map<string, number>();
  let mostOverall = 0;
  const transportFor = (node: { name: string }): Transport => {
    const inner = scriptedTransport(kernel("6.1.0-28-amd64"));
    const gate = gateOf(node.name);
    return {
      describe: inner.describe,
      async run(script, limits) {
        running.set(gate, (running.get(gate) ?? 0) + 1);
        most.set(gate, Math.max(most.get(gate) ?? 0, running.get(gate)!));
        mostOverall = Math.max(
          mostOverall,
          [...running.values()].reduce((a, b) => a + b, 0),
        );
        await sleep(20);
        running.set(gate, running.get(gate)! - 1);
        return inner.run(script, limits);
      },
    };
  };
  const report = await auditFleet({
    nodes: fleet.nodes,
    transportFor,
    settings: defaultAuditSettings(),
    drift: { policy: {}, waivers: [], tickets: [], now: new Date() },
    concurrency: 6,
    sessions: {
      keyOf: (node) => Promise.resolve(gateOf(node.name)),
      limitOf: () => 2,
    },
    manifestRevision: null,
  });
  assert.equal(report.summary.clean, names.length);
  assert.equal(most.get("bastion:22"), 2);
  // The bastion's waiting nodes held no slot: the direct nodes ran beside its two sessions.
  assert.equal(mostOverall, 6);
});

it("a jump host's limit, set by its first node, still holds once its gate has emptied and refilled", async () => {
  const spec = stringify({ system: { kernel_version: "6.1.0-28-amd64" } });
  const names = ["b0-first", "b1", "b2", "b3", "b4"];
  const dir = await writeTree(Object.fromEntries(names.map((n) => [`nodes/${n}.yaml`, spec])));
  dirs.push(dir);
  const fleet = await loadFleet(dir);
  let running = 0;
  let most = 0;
  const report = await auditFleet({
    nodes: fleet.nodes,
    transportFor: () => {
      const inner = scriptedTransport(kernel("6.1.0-28-amd64"));
      return {
        describe: inner.describe,
        async run(script, limits) {
          running++;
          most = Math.max(most, running);
          await sleep(20);
          running--;
          return inner.run(script, limits);
        },
      };
    },
    settings: defaultAuditSettings(),
    drift: { policy: {}, waivers: [], tickets: [], now: new Date() },
    concurrency: 6,
    sessions: {
      // The others arrive after the first node's session has ended and its gate is empty.
      keyOf: async (node) => {
        if (node.name !== "b0-first") await sleep(200);
        return "bastion:22";
      },
      limitOf: (node) => (node.name === "b0-first" ? 1 : 3),
    },
    manifestRevision: null,
  });
  assert.equal(report.summary.clean, names.length);
  // Taken anew from the later nodes, the limit would have let 3 run at once.
  assert.equal(most, 1);
});
