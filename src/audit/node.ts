import { declaredFor, partlyUnknown, type AnyDomain, type DomainName } from "../domains/domain.js";
import { DOMAINS } from "../domains/registry.js";
import { toDriftItems, type DriftContext } from "../drift/drift.js";
import { NodeAuditError, ProbeParseError, ProbeTruncatedError } from "../errors.js";
import type { LoadedNode } from "../manifest/load.js";
import type { NodeResult } from "../report/schema.js";
import {
  buildProbe,
  newNonce,
  parseContext,
  parseProbeOutput,
  probeContext,
  type ProbeSection,
} from "../probe/script.js";
import type { RunLimits, Transport } from "../transport/transport.js";
import { DEFAULT_MAINTENANCE_MARKER, maintenanceProbe, parseMaintenance } from "./maintenance.js";

export const DEFAULT_MAX_FILE_BYTES = 256 * 1024;
export const DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

export interface AuditSettings extends RunLimits {
  maxFileBytes: number;
  maintenanceMarker: string;
  /** Audit only these domains (`--category`). */
  categories?: readonly DomainName[];
}

export const defaultAuditSettings = (overrides: Partial<AuditSettings> = {}): AuditSettings => ({
  timeoutMs: 60_000,
  maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES,
  maxFileBytes: DEFAULT_MAX_FILE_BYTES,
  maintenanceMarker: DEFAULT_MAINTENANCE_MARKER,
  ...overrides,
});

/** Domains this node declares, in registry order: only what is declared is audited. */
export function auditedDomains(node: LoadedNode, categories?: readonly DomainName[]): AnyDomain[] {
  return DOMAINS.filter(
    (d) => (!categories || categories.includes(d.name)) && declaredFor(d, node.spec) !== undefined,
  );
}

/** How many items a declaration holds: a list's entries, a map's keys (lists inside a map by entry), a value one. */
export function declaredItems(declared: unknown): number {
  if (Array.isArray(declared)) return declared.length;
  if (declared === null || typeof declared !== "object") return 1;
  return Object.values(declared).reduce(
    (sum: number, v) => sum + (Array.isArray(v) ? v.length : 1),
    0,
  );
}

export interface ProbeResult {
  nonce: string;
  sections: Map<string, { output: string; unknown?: string }>;
  probeBytes: number;
  durationMs: number;
  /** The node's overall time budget, as the transport applied it. */
  timeoutMs: number;
}

/** Builds one probe for the given domains, runs it through the transport, splits its sections. */
export async function runProbe(
  transport: Transport,
  domains: readonly { domain: AnyDomain; declared: unknown }[],
  settings: AuditSettings,
): Promise<ProbeResult> {
  const nonce = newNonce();
  const ctx = probeContext(nonce, settings.maxFileBytes);
  const sections: ProbeSection[] = [
    { name: "maintenance", script: maintenanceProbe(settings.maintenanceMarker, ctx) },
    ...domains.map(({ domain, declared }) => ({
      name: domain.name,
      script: domain.probe(declared, ctx),
    })),
  ];
  const probe = buildProbe(nonce, sections);
  const run = await transport.run(probe.script, settings);
  return {
    nonce,
    sections: parseProbeOutput(run.stdout, nonce),
    probeBytes: run.stdout.length,
    durationMs: run.durationMs,
    timeoutMs: run.timeoutMs,
  };
}

/** Audits one node. Never throws: every failure becomes the node's status and error. */
export async function auditNode(
  node: LoadedNode,
  transport: Transport,
  settings: AuditSettings,
  drift: DriftContext,
): Promise<NodeResult> {
  const started = performance.now();
  const result: NodeResult = {
    name: node.name,
    host: node.host,
    status: "clean",
    durationMs: 0,
    drift: [],
  };
  const domains = auditedDomains(node, settings.categories);
  try {
    const probe = await runProbe(
      transport,
      domains.map((domain) => ({ domain, declared: declaredFor(domain, node.spec) })),
      settings,
    );
    result.probeBytes = probe.probeBytes;
    const parse = parseContext(probe.nonce);
    const maintenance = probe.sections.get("maintenance");
    const reason =
      maintenance && parseMaintenance(maintenance.output, parse.parts(maintenance.output));
    if (reason) {
      result.status = "maintenance";
      result.error = reason;
      return result;
    }
    const unknown: NonNullable<NodeResult["unknown"]> = [];
    const checked = { items: 0, domains: 0 };
    // Parsing runs on the event loop every node shares: it counts against this node's budget, and
    // yields between domains so other nodes' exits and timers are handled on time.
    const deadline = started + probe.timeoutMs;
    const withinBudget = async () => {
      await new Promise((resolve) => setImmediate(resolve));
      if (performance.now() <= deadline) return;
      const seconds = probe.timeoutMs / 1000;
      const message = `parsing the probe output of ${node.host} went past the node's ${seconds}s time budget: node not audited`;
      throw new NodeAuditError(node.name, "probe", message);
    };
    for (const domain of domains) {
      await withinBudget();
      const section = probe.sections.get(domain.name);
      if (!section) throw new ProbeParseError(domain.name, "section missing from probe output");
      if (section.unknown !== undefined) {
        unknown.push({ domain: domain.name, reason: section.unknown });
        continue;
      }
      const live = domain.parse(section.output, parse);
      const partly = partlyUnknown(live);
      for (const reason of partly) unknown.push({ domain: domain.name, reason });
      // An item the host could not show was not checked.
      checked.items += Math.max(0, declaredItems(declaredFor(domain, node.spec)) - partly.length);
      checked.domains++;
      await withinBudget();
      const findings = domain.compare(declaredFor(domain, node.spec), live);
      await withinBudget();
      // One push per item: a host's hundred thousand routes must not become a call's arguments.
      for (const item of toDriftItems(node, domain, findings, drift)) result.drift.push(item);
    }
    await withinBudget();
    if (unknown.length) result.unknown = unknown;
    result.checked = checked;
    result.status = result.drift.some((d) => !d.acknowledged) ? "drift" : "clean";
  } catch (error) {
    const failure =
      error instanceof NodeAuditError
        ? error
        : error instanceof ProbeParseError
          ? new NodeAuditError(
              node.name,
              error instanceof ProbeTruncatedError ? "truncated" : "malformed",
              `probe output ${error.message}; node not audited`,
            )
          : new NodeAuditError(
              node.name,
              "probe",
              error instanceof Error ? error.message : String(error),
              { cause: error },
            );
    result.status = failure.status;
    result.error = failure.message;
    result.drift = [];
  } finally {
    result.durationMs = Math.round(performance.now() - started);
  }
  return result;
}
