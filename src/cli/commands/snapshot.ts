import type { AnyDomain } from "../../domains/domain.js";
import { DOMAINS } from "../../domains/registry.js";
import { NodeAuditError, ProbeParseError, UsageError } from "../../errors.js";
import { defaultAuditSettings, runProbe, type AuditSettings } from "../../audit/node.js";
import { parseContext } from "../../probe/script.js";
import { localTransport } from "../../transport/local.js";
import { sshTransport } from "../../transport/ssh.js";
import type { Transport } from "../../transport/transport.js";
import { visible } from "../../text/escape.js";
import { stringifyPortable } from "../../text/yaml-scalar.js";
import { ExitBit } from "../exit.js";
import { checkOut, writeOut } from "../output.js";
import { loadManifests, localNode, MANIFEST_OPTIONS, parse, parseCategories, parsePositiveInt, selectNodes } from "../options.js";
import { fleetAuditSettings, fleetSshOptions } from "./audit.js";

/** Live state as a node spec: each domain's snapshot at its spec path; unknown domains left out. */
export async function snapshotSpec(
  transport: Transport,
  domains: readonly AnyDomain[],
  settings: AuditSettings = defaultAuditSettings(),
): Promise<{ spec: Record<string, unknown>; unknown: string[] }> {
  const probe = await runProbe(transport, domains.map((domain) => ({ domain, declared: undefined })), settings);
  const parse = parseContext(probe.nonce);
  const spec: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const domain of domains) {
    const section = probe.sections.get(domain.name);
    if (!section) throw new Error(`probe output lacks the ${domain.name} section`);
    if (section.unknown !== undefined) {
      unknown.push(`${domain.name}: ${section.unknown}`);
      continue;
    }
    const declared = domain.snapshot(domain.parse(section.output, parse));
    if (declared === undefined) continue;
    let level = spec;
    for (const part of domain.specPath.slice(0, -1)) level = (level[part] ??= {}) as Record<string, unknown>;
    level[domain.specPath.at(-1)!] = declared;
  }
  return { spec, unknown };
}

/** The snapshot as a node-spec file: a comment header (host text escaped, one line each), then the spec. */
export function snapshotText(
  title: string,
  snapshot: { spec: Record<string, unknown>; unknown: string[] },
  takenAt: Date,
): string {
  const header = [
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
  });
  if (!values.local && !values.node) throw new UsageError("snapshot needs --local or --node NAME");
  const categories = parseCategories(values.category);
  await checkOut(values.out);
  const domains = DOMAINS.filter((d) => !categories || categories.includes(d.name));
  const timeoutMs = values.timeout === undefined ? undefined : parsePositiveInt("timeout", values.timeout, 60) * 1000;
  let transport: Transport;
  let title: string;
  let settings = defaultAuditSettings(timeoutMs ? { timeoutMs } : {});
  if (values.local && !values.node) {
    transport = localTransport("localhost");
    title = "this machine";
  } else {
    const fleet = await loadManifests(values);
    const node = values.local ? localNode(fleet, values.node) : selectNodes(fleet, values.node).find((n) => n.name === values.node);
    if (!node) throw new UsageError(`--node "${values.node}" names no node`);
    settings = fleetAuditSettings(fleet, timeoutMs ? { timeoutMs } : {});
    const ssh = await fleetSshOptions(fleet, values["ssh-config"]);
    transport = values.local
      ? localTransport(node.name)
      : sshTransport(node, { ...ssh, ...(!timeoutMs && node.ssh.timeout && { timeoutMs: node.ssh.timeout * 1000 }) });
    title = node.name;
  }
  let snapshot;
  try {
    snapshot = await snapshotSpec(transport, domains, settings);
  } catch (error) {
    if (!(error instanceof NodeAuditError || error instanceof ProbeParseError)) throw error;
    const message = error instanceof ProbeParseError ? `probe output ${error.message}` : error.message;
    process.stderr.write(`quartermaster snapshot: ${title}: ${visible(message)}\n`);
    return ExitBit.unaudited;
  }
  const text = snapshotText(title, snapshot, new Date());
  if (values.out) await writeOut(values.out, text);
  else process.stdout.write(text);
  return 0;
}
