import { createHash } from "node:crypto";
import { stringify } from "yaml";
import type { AnyDomain, Finding, JsonValue } from "../domains/domain.js";
import { DOMAINS, domainByName } from "../domains/registry.js";
import { driftSignature } from "../drift/drift.js";
import { declaredFor } from "../audit/node.js";
import { sourceOf, type LoadedNode } from "../manifest/load.js";
import type { Ticket } from "../manifest/tickets.js";
import type { DriftItem, Report } from "../report/schema.js";
import { acceptFinding } from "./accept.js";
import { applyChanges, declaredChanges } from "./manifest-edit.js";
import { pullBody, type PullMarker, MARKER_VERSION } from "./body.js";

// The planner is a pure function: (report, manifests, tickets, the bot's pull requests) -> actions.
// Every decision about pull requests is made here; the executor only carries actions out.

export type PullKind = "accept" | "ticket" | "resolve";

export interface ExistingPull {
  number: number;
  state: "open" | "closed";
  merged: boolean;
  branch: string;
  title: string;
  body: string;
  marker?: PullMarker;
  /** Commits on the branch by anyone but the bot; set by the executor for PRs the plan would write to. */
  humanCommits?: boolean;
  /** The bot already said it leaves this PR alone. */
  leftAloneNotice?: boolean;
}

export interface PlanInput {
  report: Report;
  nodes: readonly LoadedNode[];
  tickets: readonly { ticket: Ticket; file: string }[];
  /** Manifest file texts at the base commit, by repository path. */
  files: ReadonlyMap<string, string>;
  /** Repository path of the manifests directory, e.g. "fleet-manifests". */
  manifestsPath: string;
  pulls: readonly ExistingPull[];
  labels?: readonly string[];
}

export interface PullContent {
  kind: PullKind;
  branch: string;
  title: string;
  body: string;
  labels: string[];
  /** Repository path -> new file text. */
  files: Record<string, string>;
  marker: PullMarker;
}

export type Action =
  | ({ type: "open" } & PullContent)
  | ({ type: "update"; number: number; updateFiles: boolean } & PullContent)
  | { type: "close"; number: number; branch: string; comment: string }
  | { type: "leave"; number: number; reason: string; comment?: string };

export const BOT_LABEL = "quartermaster";

/** One drift signature: the same (domain, key, declared, live) on one or more nodes. */
interface DriftGroup {
  signature: string;
  domain: AnyDomain;
  item: DriftItem;
  nodes: { node: LoadedNode; item: DriftItem }[];
}

const hash = (text: string, length = 8) => createHash("sha256").update(text).digest("hex").slice(0, length);
const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/, "") || "value";

/** Branch names use `--` separators, never `/`: `a/b` and `a/b/c` cannot both exist as refs. */
export function branchName(kind: PullKind, domain: string, key: string, identity: string): string {
  return `quartermaster--${kind}--${domain}--${slug(key)}--${identity}`;
}

const show = (value: JsonValue) => (typeof value === "string" ? value : JSON.stringify(value));

function groupDrift(report: Report, nodes: ReadonlyMap<string, LoadedNode>): DriftGroup[] {
  const groups = new Map<string, DriftGroup>();
  for (const result of report.nodes) {
    const node = nodes.get(result.name);
    if (!node) continue;
    for (const item of result.drift) {
      if (item.acknowledged) continue;
      const domain = domainByName(item.domain);
      if (!domain) continue;
      const signature = driftSignature(item.domain, item.key, item.declared as JsonValue, item.live as JsonValue);
      let group = groups.get(signature);
      if (!group) groups.set(signature, (group = { signature, domain, item, nodes: [] }));
      group.nodes.push({ node, item });
    }
  }
  return [...groups.values()].sort((a, b) => a.signature.localeCompare(b.signature));
}

function findingOf(item: DriftItem): Finding {
  return { key: item.key, declared: item.declared as JsonValue, live: item.live as JsonValue, path: item.path };
}

/** The manifest edits accepting a drift group: in the shared file when every node using it drifted alike, else per node. */
function acceptEdits(group: DriftGroup, input: PlanInput, nodesByFile: ReadonlyMap<string, readonly string[]>): Record<string, string> | undefined {
  const { domain } = group;
  const edits = new Map<string, ReturnType<typeof declaredChanges>>();
  const drifted = new Set(group.nodes.map((n) => n.node.name));
  for (const { node, item } of group.nodes) {
    const origin = sourceOf(node, item.path);
    const users = nodesByFile.get(origin.file) ?? [];
    const shared = origin.file !== node.file && users.length > 0 && users.every((name) => drifted.has(name));
    const target = shared ? origin.file : node.file;
    if (edits.has(target) && shared) continue;
    const before = declaredFor(domain, node.spec);
    const after = acceptFinding(domain, before, findingOf(item));
    const changes = declaredChanges(before, after, domain.specPath, domain.listKey);
    edits.set(target, [...(edits.get(target) ?? []), ...changes]);
  }
  const files: Record<string, string> = {};
  for (const [file, changes] of edits) {
    const text = input.files.get(file);
    if (text === undefined) return undefined;
    files[file] = applyChanges(text, changes, editOptions());
  }
  return files;
}

function editOptions() {
  return {
    listFormPaths: DOMAINS.filter((d) => d.listForm).map((d) => d.specPath),
    keyedLists: DOMAINS.filter((d) => d.listKey).map((d) => ({ path: d.specPath, key: d.listKey! })),
  };
}

function ticketFor(group: DriftGroup, detected: string, reason: string): Ticket {
  const nodes = group.nodes.map((n) => n.node.name).sort();
  return {
    id: `${group.domain.name}-${slug(group.item.key)}-${hash(`${group.signature}:${nodes.join(",")}`)}`.replaceAll("_", "-"),
    status: "open",
    domain: group.domain.name,
    key: group.item.key,
    declared: group.item.declared,
    live: group.item.live,
    severity: group.item.severity,
    nodes,
    remediation: group.item.remediation,
    detected,
    signature: group.signature,
    reason,
  };
}

const ticketYaml = (ticket: Ticket) =>
  `# Remediation ticket recorded by Quartermaster. Merging commits the operator to fix the host;\n# set status: resolved once it is fixed (Quartermaster proposes that when the drift is gone).\n${stringify(ticket, { lineWidth: 0 })}`;

function nodeList(names: readonly string[], max = 3): string {
  return names.length <= max ? names.join(", ") : `${names.slice(0, max).join(", ")} and ${names.length - max} more`;
}

export function plan(input: PlanInput): Action[] {
  const nodes = new Map(input.nodes.map((n) => [n.name, n]));
  const nodesByFile = new Map<string, string[]>();
  for (const node of input.nodes) {
    for (const layer of node.layers) nodesByFile.set(layer.file, [...(nodesByFile.get(layer.file) ?? []), node.name]);
  }
  const audited = new Set(input.report.nodes.filter((n) => n.status === "clean" || n.status === "drift").map((n) => n.name));
  const pullsByBranch = new Map<string, ExistingPull[]>();
  for (const pull of input.pulls) pullsByBranch.set(pull.branch, [...(pullsByBranch.get(pull.branch) ?? []), pull]);
  const rejected = new Map<string, ExistingPull>();
  for (const pull of input.pulls) {
    if (pull.marker?.kind === "accept" && pull.state === "closed" && !pull.merged) rejected.set(pull.marker.signature, pull);
  }
  const labels = [BOT_LABEL, ...(input.labels ?? [])];
  const desired: PullContent[] = [];

  for (const group of groupDrift(input.report, nodes)) {
    const names = group.nodes.map((n) => n.node.name).sort();
    const rejection = rejected.get(group.signature);
    const kind: PullKind = rejection || group.item.onDrift === "ticket" ? "ticket" : "accept";
    const { item, domain } = group;
    const change = `${item.key}: ${show(item.declared as JsonValue)} → ${show(item.live as JsonValue)}`;
    if (kind === "accept") {
      const files = acceptEdits(group, input, nodesByFile);
      if (!files) continue;
      const branch = branchName("accept", domain.name, item.key, group.signature);
      const previous = (pullsByBranch.get(branch) ?? []).find((p) => p.state === "open")?.marker;
      const marker: PullMarker = { v: MARKER_VERSION, kind, signature: group.signature, nodes: names, detected: previous?.detected ?? input.report.startedAt, content: hash(JSON.stringify(files), 16) };
      desired.push({
        kind,
        branch,
        title: `Accept ${domain.name} drift on ${nodeList(names)}: ${change}`.slice(0, 240),
        body: pullBody({ kind, group: group.nodes.map((n) => ({ node: n.node.name, item: n.item })), marker, files: Object.keys(files) }),
        labels: [...labels, `drift:${domain.name}`, `severity:${item.severity}`],
        files,
        marker,
      });
    } else {
      const reason = rejection ? `the accept PR #${rejection.number} was closed without merging` : `policy: ${domain.name} drift is remediated on the host`;
      const ticketIdentity = hash(`${group.signature}:${names.join(",")}`);
      const branch = branchName("ticket", domain.name, item.key, ticketIdentity);
      const previous = (pullsByBranch.get(branch) ?? []).find((p) => p.state === "open")?.marker;
      const detected = previous?.detected ?? input.report.startedAt;
      const ticket = ticketFor(group, detected, reason);
      const files = { [`${input.manifestsPath}/remediations/${ticket.id}.yaml`]: ticketYaml(ticket) };
      const marker: PullMarker = { v: MARKER_VERSION, kind, signature: group.signature, nodes: names, detected, content: hash(JSON.stringify(files), 16) };
      desired.push({
        kind,
        branch,
        title: `Remediate ${domain.name} drift on ${nodeList(names)}: ${change}`.slice(0, 240),
        body: pullBody({ kind, group: group.nodes.map((n) => ({ node: n.node.name, item: n.item })), marker, files: Object.keys(files), reason }),
        labels: [...labels, `drift:${domain.name}`, `severity:${item.severity}`, "remediation"],
        files,
        marker,
      });
    }
  }

  // Open tickets whose drift is gone from every node they name (all audited): propose resolving them.
  const present = new Set(
    input.report.nodes.flatMap((n) => n.drift.map((d) => `${n.name}\0${driftSignature(d.domain, d.key, d.declared as JsonValue, d.live as JsonValue)}`)),
  );
  for (const { ticket, file } of input.tickets) {
    if (ticket.status !== "open") continue;
    if (!ticket.nodes.every((name) => audited.has(name))) continue;
    if (ticket.nodes.some((name) => present.has(`${name}\0${ticket.signature}`))) continue;
    const text = input.files.get(file);
    if (text === undefined) continue;
    const resolvedAt = (pullsByBranch.get(branchName("resolve", ticket.domain, ticket.key, ticket.id)) ?? []).find((p) => p.state === "open")?.marker?.detected ?? input.report.startedAt;
    const files = { [file]: applyChanges(text, [{ path: ["status"], value: "resolved" }, { path: ["resolved"], value: resolvedAt }], { listFormPaths: [], keyedLists: [] }) };
    const marker: PullMarker = { v: MARKER_VERSION, kind: "resolve", signature: ticket.signature, nodes: ticket.nodes, detected: resolvedAt, content: hash(JSON.stringify(files), 16), ticket: ticket.id };
    desired.push({
      kind: "resolve",
      branch: branchName("resolve", ticket.domain, ticket.key, ticket.id),
      title: `Resolve remediation ticket ${ticket.id}: drift gone from ${nodeList(ticket.nodes)}`.slice(0, 240),
      body: pullBody({ kind: "resolve", group: [], marker, files: Object.keys(files), ticket }),
      labels: [...labels, "remediation"],
      files,
      marker,
    });
  }

  return reconcile(desired, input.pulls, audited);
}

/** Desired PRs against existing ones: open, update, close, or leave alone. */
function reconcile(desired: readonly PullContent[], pulls: readonly ExistingPull[], audited: ReadonlySet<string>): Action[] {
  const actions: Action[] = [];
  const open = new Map(pulls.filter((p) => p.state === "open" && p.marker).map((p) => [p.branch, p]));
  const wanted = new Set(desired.map((d) => d.branch));
  const leave = (pull: ExistingPull, reason: string) => {
    actions.push({
      type: "leave",
      number: pull.number,
      reason,
      ...(!pull.leftAloneNotice && {
        comment: `Quartermaster leaves this pull request alone: ${reason}. It will not push to this branch or close it; close it yourself when it is no longer needed.`,
      }),
    });
  };
  for (const content of desired) {
    const pull = open.get(content.branch);
    if (!pull) {
      // A closed accept PR is never reopened: its drift has become a ticket (a different branch).
      actions.push({ type: "open", ...content });
      continue;
    }
    const sameFiles = pull.marker?.content === content.marker.content;
    if (sameFiles && pull.body === content.body && pull.title === content.title) continue;
    if (!sameFiles && pull.humanCommits) {
      leave(pull, "someone other than Quartermaster pushed commits to its branch");
      continue;
    }
    actions.push({ type: "update", number: pull.number, updateFiles: !sameFiles, ...content });
  }
  for (const pull of open.values()) {
    if (wanted.has(pull.branch)) continue;
    // Drift on nodes that were not audited this run is unknown, not gone.
    if (!pull.marker!.nodes.every((name) => audited.has(name))) continue;
    if (pull.humanCommits) {
      leave(pull, "its drift is gone, but someone other than Quartermaster pushed commits to its branch");
      continue;
    }
    actions.push({
      type: "close",
      number: pull.number,
      branch: pull.branch,
      comment:
        pull.marker!.kind === "resolve"
          ? "The drift this ticket names is back or the ticket changed; closing this resolve proposal."
          : `This drift is no longer present on ${nodeList(pull.marker!.nodes, 10)} (or is now waived or ticketed); closing.`,
    });
  }
  return actions;
}
