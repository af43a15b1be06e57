import {
  DEFAULT_AUDIT_INTERVAL_MS,
  declaredFor,
  partlyUnknown,
  type ParseContext,
  type ProbeContext,
} from "../domains/domain.js";
import { joinRequests, type RecordRequest } from "../domains/host-record.js";
import { DOMAINS, type AnyDomain, type DomainName } from "../domains/registry.js";
import { onDriftByCause, toDriftItems, type DriftContext } from "../drift/drift.js";
import { NodeAuditError, ProbeParseError, ProbeTruncatedError } from "../errors.js";
import type { LoadedNode } from "../manifest/load.js";
import type { NodeResult } from "../report/schema.js";
import { countsAsDrift } from "../report/tally.js";
import {
  buildProbe,
  newNonce,
  parseContext,
  parseProbeOutput,
  probeContext,
  type ProbeSection,
} from "../probe/script.js";
import type { RunLimits, Transport } from "../transport/transport.js";
import { attachCauses, type SeenDrift } from "./cause/attach.js";
import { causeSection, SINCE_VARIABLE } from "./cause/probe.js";
import { parseHostRecord } from "./cause/record.js";
import { declaredPrints, type DeclaredBefore } from "./cause/rollout.js";
import {
  DEFAULT_MAINTENANCE_MARKER,
  MAINTENANCE_AWK,
  maintenanceProbe,
  parseMaintenance,
} from "./maintenance.js";

export const DEFAULT_MAX_FILE_BYTES = 256 * 1024;
export const DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
/**
 * Drift items one domain lists per node: far past what a manifest declares, so only a host's flood
 * of what it adds (routes, listeners, accounts) meets it; the node's report entry stays bounded.
 */
export const MAX_ITEMS_PER_DOMAIN = 500;

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

/**
 * How many items a declaration holds: a list's entries, a map's keys (lists inside a map by entry),
 * a value one.
 */
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
  /** Connection attempts, when the transport retries. */
  tries?: number;
}

/**
 * A value from a spec as text, one text per value: spec values are YAML data (strings, numbers,
 * booleans, null, lists, plain maps). Anything else has no key (its probe is not cached). An
 * object's text is kept while the object lives: a fleet-wide declaration shared by reference
 * between nodes is written once.
 */
const declaredKeys = new WeakMap<object, string | undefined>();
function declaredKey(value: unknown): string | undefined {
  if (value === undefined) return "u";
  if (value === null || typeof value === "boolean" || typeof value === "string")
    return JSON.stringify(value);
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value !== "object") return undefined;
  if (declaredKeys.has(value)) return declaredKeys.get(value);
  let key: string | undefined;
  if (Array.isArray(value)) {
    const items = value.map(declaredKey);
    key = items.includes(undefined) ? undefined : `[${items.join(",")}]`;
  } else {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto === Object.prototype || proto === null) {
      const entries = Object.entries(value).map(([k, v]) => {
        const inner = declaredKey(v);
        return inner === undefined ? undefined : `${JSON.stringify(k)}:${inner}`;
      });
      key = entries.includes(undefined) ? undefined : `{${entries.join(",")}}`;
    }
  }
  declaredKeys.set(value, key);
  return key;
}

/** The probe script around its nonce: `parts.join(nonce)` is the script for one run. */
type ProbeTemplate = readonly string[];

// Nodes sharing a spec get the same probe but for the nonce: it is assembled once per distinct
// spec. Bounded, so a fleet of all-different specs keeps only the latest few.
const PROBE_CACHE_SIZE = 64;
const probeCache = new Map<string, ProbeTemplate>();

/** What the cause section looks up: the records each declaration asks for (a snapshot's: none). */
function causeTargets(domains: readonly { domain: AnyDomain; declared: unknown }[]): RecordRequest {
  return joinRequests(
    domains.map(({ domain, declared }) =>
      declared === undefined ? {} : (domain.records?.(declared) ?? {}),
    ),
  );
}

/** The cause section is asked for, with the node's last audit (epoch milliseconds) if known. */
export interface CauseRequest {
  since?: number;
  /** The audit keeps a history: record the node's declared prints, compare with its last ones. */
  history?: {
    before?: DeclaredBefore;
    revision: string | null;
    /** When that revision was committed. */
    revisionAt?: string;
    /** This drift fingerprint of the node as the history holds it, if its last audit saw it. */
    seen?: (fingerprint: string) => SeenDrift | undefined;
  };
}

/** The sections of a node's probe, in the order it runs them. */
export function probeSections(
  domains: readonly { domain: AnyDomain; declared: unknown }[],
  settings: AuditSettings,
  cause: boolean,
  ctx: ProbeContext,
): ProbeSection[] {
  return [
    {
      name: "maintenance",
      script: maintenanceProbe(settings.maintenanceMarker, ctx),
      awk: MAINTENANCE_AWK,
    },
    ...domains.map(({ domain, declared }) => ({
      name: domain.name,
      script: domain.probe(declared, ctx),
      awk: domain.awk,
    })),
    ...(cause ? [causeSection(causeTargets(domains), ctx)] : []),
  ];
}

function probeTemplate(
  domains: readonly { domain: AnyDomain; declared: unknown }[],
  settings: AuditSettings,
  cause: boolean,
): ProbeTemplate {
  // Domain probes see the nonce only through `$QM_N` (ProbeContext has no nonce): a random
  // placeholder marks where buildProbe writes it.
  const placeholder = newNonce();
  const ctx = probeContext(placeholder, settings.maxFileBytes);
  const sections = probeSections(domains, settings, cause, ctx);
  return buildProbe(placeholder, sections, ctx.statAsks).script.split(placeholder);
}

/** The probe for the given domains with a fresh nonce, assembled once per distinct declaration. */
export function assembleProbe(
  domains: readonly { domain: AnyDomain; declared: unknown }[],
  settings: AuditSettings,
  cause?: CauseRequest,
): { nonce: string; script: string } {
  const parts = [
    cause ? "cause" : "",
    JSON.stringify(settings.maintenanceMarker),
    String(settings.maxFileBytes),
    ...domains.map(({ domain, declared }) => {
      const key = declaredKey(declared);
      return key === undefined ? undefined : `${domain.name}=${key}`;
    }),
  ];
  const key = parts.includes(undefined) ? undefined : parts.join("\n");
  let template = key === undefined ? undefined : probeCache.get(key);
  if (!template) {
    template = probeTemplate(domains, settings, cause !== undefined);
    if (key !== undefined) {
      if (probeCache.size >= PROBE_CACHE_SIZE) probeCache.delete(probeCache.keys().next().value!);
      probeCache.set(key, template);
    }
  }
  const nonce = newNonce();
  // The only per-node value in a shared template: set before the probe, a number or empty.
  const since = cause?.since === undefined ? "" : String(Math.floor(cause.since / 1000));
  return { nonce, script: `${cause ? `${SINCE_VARIABLE}=${since}\n` : ""}${template.join(nonce)}` };
}

/** Builds one probe for the given domains, runs it through the transport, splits its sections. */
export async function runProbe(
  transport: Transport,
  domains: readonly { domain: AnyDomain; declared: unknown }[],
  settings: AuditSettings,
  cause?: CauseRequest,
): Promise<ProbeResult> {
  const { nonce, script } = assembleProbe(domains, settings, cause);
  const run = await transport.run(script, settings);
  return {
    nonce,
    sections: parseProbeOutput(run.stdout, nonce),
    probeBytes: run.stdout.length,
    durationMs: run.durationMs,
    timeoutMs: run.timeoutMs,
    ...(run.tries !== undefined && { tries: run.tries }),
  };
}

/**
 * One domain's live state from its section of the probe output: the reason the host gave for not
 * showing it, or the parsed state with the reasons for the parts it could not show. A section the
 * host left out is a ProbeParseError, as is output the domain cannot parse.
 */
export function readSection(
  probe: ProbeResult,
  domain: AnyDomain,
  parse: ParseContext,
): { unknown: string } | { live: unknown; partly: string[] } {
  const section = probe.sections.get(domain.name);
  if (!section) throw new ProbeParseError(domain.name, "section missing from probe output");
  if (section.unknown !== undefined) return { unknown: section.unknown };
  const live = domain.parse(section.output, parse);
  return { live, partly: partlyUnknown(live) };
}

/** Why the probed node is in maintenance (its marker, a package manager's lock); undefined if not. */
export function readMaintenance(probe: ProbeResult, parse: ParseContext): string | undefined {
  const section = probe.sections.get("maintenance");
  return section && parseMaintenance(section.output, parse.parts(section.output));
}

/** Any failure probing or parsing a node, as that node's error (status and message). */
export function nodeFailure(node: string, error: unknown): NodeAuditError {
  if (error instanceof NodeAuditError) return error;
  if (error instanceof ProbeParseError)
    return new NodeAuditError(
      node,
      error instanceof ProbeTruncatedError ? "truncated" : "malformed",
      `probe output ${error.message}; node not audited`,
    );
  return new NodeAuditError(node, "probe", error instanceof Error ? error.message : String(error), {
    cause: error,
  });
}

/** How long one node's parsing holds the event loop before it lets the other nodes' events in (ms). */
const PARSE_SLICE_MS = 4;

/** Audits one node. Never throws: every failure becomes the node's status and error. */
export async function auditNode(
  node: LoadedNode,
  transport: Transport,
  settings: AuditSettings,
  drift: DriftContext,
  cause: CauseRequest = {},
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
      cause,
    );
    result.probeBytes = probe.probeBytes;
    if (probe.tries !== undefined) result.tries = probe.tries;
    const parse = parseContext(probe.nonce);
    const reason = readMaintenance(probe, parse);
    if (reason) {
      result.status = "maintenance";
      result.error = reason;
      return result;
    }
    const unknown: NonNullable<NodeResult["unknown"]> = [];
    const checked = { items: 0, domains: 0 };
    // Parsing runs on the event loop every node shares: it counts against this node's budget, and
    // yields once it has held the loop PARSE_SLICE_MS, so other nodes' exits and timers are handled
    // on time. (A yield at each of these checks, three a domain, cost about 5 µs each: 40 turns of
    // the loop a node, most of a small fleet's per-node CPU beyond its parsing.)
    const deadline = started + probe.timeoutMs;
    let held = performance.now();
    const withinBudget = async () => {
      if (performance.now() - held >= PARSE_SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        held = performance.now();
      }
      if (performance.now() <= deadline) return;
      const seconds = probe.timeoutMs / 1000;
      const message = `parsing the probe output of ${node.host} went past the node's ${seconds}s time budget: node not audited`;
      throw new NodeAuditError(node.name, "probe", message);
    };
    for (const domain of domains) {
      await withinBudget();
      const read = readSection(probe, domain, parse);
      if ("unknown" in read) {
        unknown.push({ domain: domain.name, reason: read.unknown });
        continue;
      }
      const { live, partly } = read;
      for (const reason of partly) unknown.push({ domain: domain.name, reason });
      // An item the host could not show was not checked.
      checked.items += Math.max(0, declaredItems(declaredFor(domain, node.spec)) - partly.length);
      checked.domains++;
      await withinBudget();
      const now = drift.now.getTime();
      const findings = domain.compare(declaredFor(domain, node.spec), live, {
        now,
        nextAudit: now + (drift.auditInterval ?? DEFAULT_AUDIT_INTERVAL_MS),
      });
      await withinBudget();
      // Past the cap, a host's flood (routes, accounts, mounts) is counted, not listed.
      const unlisted = findings.splice(MAX_ITEMS_PER_DOMAIN).length;
      if (unlisted > 0)
        unknown.push({
          domain: domain.name,
          reason: `${unlisted} more drift items than the ${MAX_ITEMS_PER_DOMAIN} a domain lists per node: not listed`,
        });
      // One push per item: a host's hundred thousand routes must not become a call's arguments.
      for (const item of toDriftItems(node, domain, findings, drift)) result.drift.push(item);
    }
    await withinBudget();
    // A host that leaves its records out (an old or filtered probe) hides nothing but causes:
    // every item's is then unknown.
    const record = probe.sections.get("cause");
    const host = parseHostRecord(record ? parse.parts(record.output) : [], cause.since);
    const { history, ...since } = cause;
    if (history)
      result.declared = declaredPrints(
        domains.map((d) => ({ path: d.specPath, declared: declaredFor(d, node.spec) })),
      );
    const declared = result.declared === undefined ? {} : { declared: result.declared };
    result.drift = onDriftByCause(
      attachCauses(result.drift, host, { node: node.name, ...since, ...history, ...declared }),
      drift.policy,
    );
    if (unknown.length) result.unknown = unknown;
    result.checked = checked;
    result.status = result.drift.some(countsAsDrift) ? "drift" : "clean";
  } catch (error) {
    const failure = nodeFailure(node.name, error);
    result.status = failure.status;
    result.error = failure.message;
    if (failure.sshClass) result.errorClass = failure.sshClass;
    if (failure.tries !== undefined) result.tries = failure.tries;
    result.drift = [];
  } finally {
    result.durationMs = Math.round(performance.now() - started);
  }
  return result;
}
