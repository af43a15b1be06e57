// Names a host controls (devices, interfaces, packages, modules, units, drop-ins, files, sysctls)
// that are also the names of Object.prototype's members: every domain must treat them as plain
// names.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { stringify } from "yaml";
import { auditFleet } from "../../../src/audit/fleet.js";
import { defaultAuditSettings } from "../../../src/audit/node.js";
import { snapshotSpec } from "../../../src/runs/snapshot.js";
import { DOMAINS } from "../../../src/domains/registry.js";
import { loadFleet } from "../../../src/manifest/load.js";
import { Report } from "../../../src/report/schema.js";
import {
  framed,
  NOT_IN_MAINTENANCE,
  PROTOTYPE_NAMES,
  scriptedTransport,
} from "../../support/probe-output.js";
import { allSamples, specOf } from "../../support/samples.js";
import { removeTree, writeTree } from "../../support/tree.js";

const SAMPLES = await allSamples();
/** Every domain's section from its sample, with prototype names wherever the host names something. */
const hostileOutput = (nonce: string): string =>
  framed(nonce, [
    ["maintenance", NOT_IN_MAINTENANCE(nonce)],
    ...SAMPLES.map(({ domain, sample }): [string, string] => [
      domain.name,
      sample.hostile.section(nonce),
    ]),
  ]);

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeTree)));

describe("prototype names from a host", () => {
  it("are audited as plain names, and the report validates against its own schema", async () => {
    const spec = specOf(SAMPLES.map(({ domain, sample }) => [domain, sample.hostile.declared]));
    const dir = await writeTree({ "nodes/hostile.yaml": stringify(spec) });
    dirs.push(dir);
    const fleet = await loadFleet(dir);
    const report = await auditFleet({
      nodes: fleet.nodes,
      transportFor: () => scriptedTransport(hostileOutput),
      settings: defaultAuditSettings({ maxFileBytes: 1024 }),
      drift: { policy: {}, waivers: [], tickets: [], now: new Date() },
      concurrency: 1,
      manifestRevision: null,
    });
    const node = report.nodes[0]!;
    assert.equal(node.status, "drift", node.error);
    assert.equal(node.unknown, undefined);
    const parsed = Report.safeParse(JSON.parse(JSON.stringify(report)));
    assert.ok(parsed.success, JSON.stringify(parsed.error?.issues.slice(0, 3)));

    for (const { domain, sample } of SAMPLES)
      sample.hostile.drift(node.drift.filter((d) => d.domain === domain.name));
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it("become keys of a snapshot, never its prototype", async () => {
    const { spec } = await snapshotSpec(scriptedTransport(hostileOutput), DOMAINS);
    const system = spec.system as { sysctl_parameters: Record<string, unknown> };
    assert.deepEqual(Object.keys(system.sysctl_parameters).sort(), [...PROTOTYPE_NAMES].sort());
    const io = (spec.storage as { io_scheduler: Record<string, unknown> }).io_scheduler;
    assert.deepEqual(Object.keys(io).sort(), ["vda", ...PROTOTYPE_NAMES].sort());
    assert.equal(Object.getPrototypeOf(io), Object.prototype);
    const packages = (spec.packages as { installed_manifest: Record<string, unknown> })
      .installed_manifest;
    assert.equal(Object.hasOwn(packages, "__proto__"), true);
    assert.match(stringify(spec), /__proto__: mq-deadline/);
  });
});
