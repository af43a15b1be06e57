// Test reports: the realistic fleet fixture (validated, so it cannot drift from the schema)
// and a generated large fleet for size limits.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Report, type DriftItem, type NodeResult } from "../../src/report/schema.js";
import { summarize } from "../../src/report/tally.js";
import { SEVERITIES, type Finding } from "../../src/domains/domain.js";
import { DOMAIN_NAMES, domainByName } from "../../src/domains/registry.js";
import { toDriftItems, type DriftContext } from "../../src/drift/drift.js";
import type { LoadedNode } from "../../src/manifest/load.js";

/** The report's entry for a node, failing the test when it is missing. */
/**
 * A latent ticket: the value is as declared now, a boot or restart would change it, and policy
 * makes it a ticket that leaves the node clean. The test hosts share this machine's sysctl.d, so
 * live values declared from a snapshot may carry one.
 */
export const isLatentTicket = (d: DriftItem): boolean =>
  d.latentPolicy === "ticket" && d.live === d.declared;

/** The drift a user would act on now: latent tickets left out. */
export const driftNow = (drift: readonly DriftItem[]): DriftItem[] =>
  drift.filter((d) => !isLatentTicket(d));

export function byName(report: Report, name: string): NodeResult {
  const node = report.nodes.find((n) => n.name === name);
  assert.ok(node, `${name} missing from the report`);
  return node;
}

export function loadFleetReport(): Report {
  const raw: unknown = JSON.parse(
    readFileSync(new URL("../fixtures/reports/fleet.json", import.meta.url), "utf8"),
  );
  return Report.parse(raw);
}

/** Each node's result, its sysctl `findings` (by node name) made drift items by the audit's code. */
export function sysctlResults(
  nodes: readonly LoadedNode[],
  findings: Record<string, Finding[]>,
  ctx: DriftContext,
): NodeResult[] {
  return nodes.map((node) => {
    const drift = (findings[node.name] ?? []).flatMap((f) =>
      toDriftItems(node, domainByName("sysctl")!, [f], ctx),
    );
    const status = drift.length ? "drift" : "clean";
    return { name: node.name, host: node.host, status, durationMs: 3, drift };
  });
}

/** A report of these node results, as `audit --format json` writes it (validated). */
export function reportOf(nodes: NodeResult[]): Report {
  return Report.parse({
    schemaVersion: 1,
    startedAt: "2026-03-02T06:00:00.000Z",
    finishedAt: "2026-03-02T06:01:00.000Z",
    manifestRevision: null,
    nodes,
    summary: summarize(nodes),
  });
}

/** A fleet of `nodes` drifted nodes carrying `items` drift items in all, every one with a diff. */
export function largeReport(nodes: number, items: number): Report {
  const results: NodeResult[] = Array.from({ length: nodes }, (_, n) => ({
    name: `node-${String(n).padStart(4, "0")}`,
    host: `node-${n}.example.net`,
    status: "drift",
    durationMs: 1000 + n,
    drift: [],
  }));
  for (let i = 0; i < items; i++) {
    const item: DriftItem = {
      domain: DOMAIN_NAMES[i % DOMAIN_NAMES.length]!,
      key: `/etc/app/conf.d/${i}.conf`,
      declared: `value-${i}`,
      live: `other-${i}`,
      severity: SEVERITIES[i % SEVERITIES.length]!,
      fingerprint: i.toString(16).padStart(16, "0"),
      source: { file: "fleet-manifests/groups/app.yaml", line: 10 + (i % 90) },
      remediation: "Restore the file from the manifest.",
      onDrift: "accept",
      path: ["files", `/etc/app/conf.d/${i}.conf`],
      diff: `--- want\n+++ got\n@@ -1 +1 @@\n-value-${i}\n+other-${i}\n`,
    };
    results[i % nodes]!.drift.push(item);
  }
  return Report.parse({
    schemaVersion: 1,
    startedAt: "2026-03-02T06:00:00.000Z",
    finishedAt: "2026-03-02T06:20:00.000Z",
    manifestRevision: "0123456789abcdef0123456789abcdef01234567",
    nodes: results,
    summary: summarize(results),
  });
}
