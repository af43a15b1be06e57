import { declaredFor, partlyUnknown, type AnyDomain } from "../../domains/domain.js";
import { ANY_VERSION } from "../../domains/packages/constraint.js";
import { DOMAINS } from "../../domains/registry.js";
import { acceptFinding } from "../../propose/accept.js";
import { ManifestEditError, NodeAuditError, ProbeParseError, UsageError } from "../../errors.js";
import { defaultAuditSettings, runProbe, type AuditSettings } from "../../audit/node.js";
import { parseContext } from "../../probe/script.js";
import { localTransport } from "../../transport/local.js";
import { sshTransport } from "../../transport/ssh.js";
import type { Transport } from "../../transport/transport.js";
import { visible } from "../../text/escape.js";
import { stringifyPortable } from "../../text/yaml-scalar.js";
import { ExitBit } from "../exit.js";
import { checkOut, writeOut } from "../output.js";
import {
  loadManifests,
  localNode,
  MANIFEST_OPTIONS,
  parse,
  parseCategories,
  parseWholeNumber,
  selectNodes,
} from "../options.js";
import { fleetAuditSettings, fleetSshOptions } from "./audit.js";

/** How a snapshot declares installed packages: any version, the live version, or not at all. */
export const PACKAGES_MODES = ["names", "versions", "none"] as const;
export type PackagesMode = (typeof PACKAGES_MODES)[number];

export interface SnapshotOptions {
  packages?: PackagesMode;
  /** The node's effective spec: its files and units are taken at their live state. */
  declared?: Record<string, unknown>;
}

/**
 * The declaration with every finding's live state accepted; what cannot be written stays declared,
 * with the reason.
 */
function acceptAll(
  domain: AnyDomain,
  declared: unknown,
  live: unknown,
  unknown: string[],
): unknown {
  let state = declared;
  for (const finding of domain.compare(declared, live)) {
    try {
      state = acceptFinding(domain, state, finding);
    } catch (error) {
      if (!(error instanceof ManifestEditError)) throw error;
      unknown.push(`${domain.name}: ${error.message}; kept as declared`);
    }
  }
  return state;
}

/**
 * Live state as a node spec: each domain's snapshot at its spec path, and for a node's declared
 * files and units, the declaration with its live state accepted. Unknown domains are left out.
 */
export async function snapshotSpec(
  transport: Transport,
  domains: readonly AnyDomain[],
  settings: AuditSettings = defaultAuditSettings(),
  options: SnapshotOptions = {},
): Promise<{ spec: Record<string, unknown>; unknown: string[] }> {
  const packages = options.packages ?? "names";
  const taken = domains.filter((d) => !(d.name === "packages" && packages === "none"));
  const declaredOf = (domain: AnyDomain) =>
    domain.snapshotsDeclared && options.declared
      ? declaredFor(domain, options.declared)
      : undefined;
  const probe = await runProbe(
    transport,
    taken.map((domain) => ({ domain, declared: declaredOf(domain) })),
    settings,
  );
  const parse = parseContext(probe.nonce);
  const spec: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const domain of taken) {
    const section = probe.sections.get(domain.name);
    if (!section) throw new Error(`probe output lacks the ${domain.name} section`);
    if (section.unknown !== undefined) {
      unknown.push(`${domain.name}: ${section.unknown}`);
      continue;
    }
    const live = domain.parse(section.output, parse);
    for (const reason of partlyUnknown(live)) unknown.push(`${domain.name}: ${reason}`);
    const declared = declaredOf(domain);
    let value =
      declared === undefined ? domain.snapshot(live) : acceptAll(domain, declared, live, unknown);
    if (value === undefined) continue;
    // Built by entries, so a host's `__proto__` package stays a key.
    if (domain.name === "packages" && packages === "names") {
      value = Object.fromEntries(Object.keys(value as object).map((name) => [name, ANY_VERSION]));
    }
    let level = spec;
    for (const part of domain.specPath.slice(0, -1))
      level = (level[part] ??= {}) as Record<string, unknown>;
    level[domain.specPath.at(-1)!] = value;
  }
  return { spec, unknown };
}

// The README has the snapshot written to fleet-manifests/nodes/<host>.yaml: the schema is two
// folders up.
const SCHEMA_HEADER = "# yaml-language-server: $schema=../../schemas/node-spec.schema.json";

/**
 * The snapshot as a node-spec file: a comment header (host text escaped, one line each), then the
 * spec.
 */
export function snapshotText(
  title: string,
  snapshot: { spec: Record<string, unknown>; unknown: string[] },
  takenAt: Date,
): string {
  const header = [
    SCHEMA_HEADER,
    `# Live state of ${visible(title)}, taken ${takenAt.toISOString()} by quartermaster snapshot.`,
    // A reason is host text: one escaped line, so no CR or line separator starts a YAML key.
    ...snapshot.unknown.map((u) => `# not shown by this host: ${visible(u)}`),
  ].join("\n");
  return `${header}\n${stringifyPortable(snapshot.spec)}`;
}

export async function snapshotCommand(argv: string[]): Promise<number> {
  const { values } = parse("snapshot", argv, {
    ...MANIFEST_OPTIONS,
    node: { type: "string" },
    local: { type: "boolean", default: false },
    category: { type: "string" },
    out: { type: "string" },
    "ssh-config": { type: "string" },
    timeout: { type: "string" },
    packages: { type: "string", default: "names" },
  });
  if (!values.local && !values.node) throw new UsageError("snapshot needs --local or --node NAME");
  const packages = PACKAGES_MODES.find((mode) => mode === values.packages);
  if (!packages)
    throw new UsageError(
      `--packages takes names, versions or none, not "${visible(values.packages)}"`,
    );
  const categories = parseCategories(values.category);
  await checkOut(values.out);
  const domains = DOMAINS.filter((d) => !categories || categories.includes(d.name));
  const timeoutMs =
    values.timeout === undefined
      ? undefined
      : parseWholeNumber("timeout", values.timeout, 60) * 1000;
  let transport: Transport;
  let title: string;
  let settings = defaultAuditSettings(timeoutMs ? { timeoutMs } : {});
  let declared: Record<string, unknown> | undefined;
  // --local alone is this machine, declared or not (a first snapshot bootstraps its node); a tree
  // named is used.
  if (values.local && !values.node && values.manifests === undefined && values.repo === undefined) {
    transport = localTransport("localhost");
    title = "this machine";
  } else {
    const fleet = await loadManifests(values);
    const node = values.local
      ? localNode(fleet, values.node)
      : selectNodes(fleet, values.node, "--node").find((n) => n.name === values.node);
    if (!node) throw new UsageError(`--node "${values.node}" names no node`);
    settings = fleetAuditSettings(fleet, timeoutMs ? { timeoutMs } : {});
    const ssh = await fleetSshOptions(fleet, values["ssh-config"]);
    transport = values.local
      ? localTransport(node.name)
      : sshTransport(node, {
          ...ssh,
          ...(!timeoutMs && node.ssh.timeout && { timeoutMs: node.ssh.timeout * 1000 }),
        });
    title = node.name;
    declared = node.spec;
  }
  let snapshot;
  try {
    snapshot = await snapshotSpec(transport, domains, settings, { packages, declared });
  } catch (error) {
    if (!(error instanceof NodeAuditError || error instanceof ProbeParseError)) throw error;
    const message =
      error instanceof ProbeParseError ? `probe output ${error.message}` : error.message;
    process.stderr.write(`quartermaster snapshot: ${title}: ${visible(message)}\n`);
    return ExitBit.unaudited;
  }
  const text = snapshotText(title, snapshot, new Date());
  if (values.out) await writeOut(values.out, text);
  else process.stdout.write(text);
  return 0;
}
