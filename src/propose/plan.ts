import { createHash } from "node:crypto";
import path from "node:path";
import { stringify } from "yaml";
import {
  SEVERITIES,
  type AnyDomain,
  type Finding,
  type JsonValue,
  type SpecPath,
} from "../domains/domain.js";
import { domainByName } from "../domains/registry.js";
import { driftSignature, ticketCovers } from "../drift/drift.js";
import { declaredFor } from "../domains/domain.js";
import type { LoadedNode } from "../manifest/load.js";
import { pathKey } from "../manifest/lists.js";
import { sourceOf } from "../manifest/merge.js";
import type { Ticket } from "../manifest/tickets.js";
import type { DriftItem, Report } from "../report/schema.js";
import { acceptFinding } from "./accept.js";
import { applyChanges } from "../manifest/edit/apply.js";
import { declaredChanges, type DeclaredChange } from "../manifest/edit/changes.js";
import { manifestLists } from "../manifest/lists.js";
import { pullBody, pullTitle, type PullMarker, MARKER_VERSION } from "./body.js";
import { truncate } from "../text/markdown.js";
import { branchIdentity, branchName, slug, type PullKind } from "./branch.js";

// The planner is a pure function: (report, manifests, tickets, the bot's pull requests) -> actions.
// Every decision about pull requests is made here; the executor only carries actions out.

export { branchName, type PullKind };

export interface ExistingPull {
  number: number;
  state: "open" | "closed";
  merged: boolean;
  branch: string;
  title: string;
  body: string;
  labels?: string[];
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
  /** At most this many new PRs; the rest are deferred to later runs. Unset: no limit. */
  maxNewPrs?: number;
  /** Branch -> when its PR was first deferred (ISO time), kept by the forge between runs: oldest open first. */
  waiting?: ReadonlyMap<string, string>;
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
  /** A ticket recording a rejection: the branch of the accept PR a reviewer closed. */
  replaces?: string;
}

export type Action =
  | ({ type: "open" } & PullContent)
  | ({ type: "update"; number: number; updateFiles: boolean; addLabels: string[] } & PullContent)
  | { type: "close"; number: number; branch: string; comment: string }
  | { type: "leave"; number: number; reason: string; comment?: string }
  /** `since`: when this PR was first deferred, to be kept for the next run. */
  | { type: "defer"; kind: PullKind; branch: string; title: string; budget: number; since: string };

export const BOT_LABEL = "quartermaster";

/** One drift signature: the same drift items of one domain on one or more nodes. */
interface DriftGroup {
  signature: string;
  domain: AnyDomain;
  /** One per key, in key order; several only for a domain whose items are a set. */
  items: DriftItem[];
  nodes: { node: LoadedNode; items: DriftItem[] }[];
}

const hash = (text: string, length = 8) =>
  createHash("sha256").update(text).digest("hex").slice(0, length);

const show = (value: JsonValue) => (typeof value === "string" ? value : JSON.stringify(value));
const itemSignature = (item: DriftItem) =>
  driftSignature(item.domain, item.key, item.declared as JsonValue, item.live as JsonValue);
const byKey = (a: DriftItem, b: DriftItem) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/**
 * Unacknowledged drift grouped into proposals: identical drift on several nodes is one group, and
 * all drifting items of a set domain (listeners, routes) on one node are one group, not one each.
 */
function groupDrift(report: Report, nodes: ReadonlyMap<string, LoadedNode>): DriftGroup[] {
  const groups = new Map<string, DriftGroup>();
  const add = (node: LoadedNode, domain: AnyDomain, items: DriftItem[]) => {
    items.sort(byKey);
    const signature =
      items.length === 1
        ? itemSignature(items[0]!)
        : hash(JSON.stringify(items.map(itemSignature).sort()), 16);
    let group = groups.get(signature);
    if (!group) groups.set(signature, (group = { signature, domain, items, nodes: [] }));
    group.nodes.push({ node, items });
  };
  for (const result of report.nodes) {
    const node = nodes.get(result.name);
    if (!node) continue;
    const sets = new Map<AnyDomain, DriftItem[]>();
    for (const item of result.drift) {
      if (item.acknowledged) continue;
      const domain = domainByName(item.domain);
      if (!domain) continue;
      if (domain.itemsAreASet) sets.set(domain, [...(sets.get(domain) ?? []), item]);
      else add(node, domain, [item]);
    }
    for (const [domain, items] of sets) add(node, domain, items);
  }
  return [...groups.values()].sort((a, b) => a.signature.localeCompare(b.signature));
}

/** The domain's finding back from a report item, with all its accept reads (a diff: the live text was read). */
function findingOf(item: DriftItem): Finding {
  const { key, path } = item;
  const finding: Finding = {
    key,
    declared: item.declared as JsonValue,
    live: item.live as JsonValue,
    path,
  };
  if (item.detail !== undefined) finding.detail = item.detail;
  if (item.diff !== undefined) finding.diff = item.diff;
  return finding;
}

/** Nodes whose effective value at a spec path comes from a file: who an edit of that file would change. */
type Dependants = (file: string, specPath: SpecPath) => readonly string[];

/**
 * The manifest edits accepting a drift group. Each changed value is edited in the file that declares
 * it when every node taking it from there drifted alike, else as an override in the node's own file;
 * a value no file declares yet goes where the drifted item is declared. Throws when an edit cannot be made.
 */
function acceptEdits(
  group: DriftGroup,
  input: PlanInput,
  dependants: Dependants,
): Record<string, string> {
  const { domain } = group;
  const edits = new Map<string, DeclaredChange[]>();
  const shared = new Set<string>();
  const drifted = new Set(group.nodes.map((n) => n.node.name));
  const add = (file: string, changes: DeclaredChange[]) =>
    edits.set(file, [...(edits.get(file) ?? []), ...changes]);
  for (const { node, items } of group.nodes) {
    const before = declaredFor(domain, node.spec);
    // A set's items (listeners, routes) are accepted together, in one edit of their list.
    const after = items.reduce(
      (declared, each) => acceptFinding(domain, declared, findingOf(each)),
      before,
    );
    const own: DeclaredChange[] = [];
    for (const change of declaredChanges(before, after, domain.specPath, domain.listKey)) {
      const at = node.layers.some((layer) => layer.origins.has(pathKey(change.path)))
        ? change.path
        : items[0]!.path;
      const file = sourceOf(node, at).file;
      if (file === node.file || !dependants(file, at).every((name) => drifted.has(name))) {
        own.push(change);
        continue;
      }
      // Nodes taking a value from the same file share it: the edit is made once.
      const key = `${file}\0${pathKey(change.path)}`;
      if (!shared.has(key)) add(file, [change]);
      shared.add(key);
    }
    if (own.length) add(node.file, overrides(node, own, domain));
  }
  const files: Record<string, string> = {};
  for (const [file, changes] of edits) {
    const text = input.files.get(file);
    if (text === undefined) throw new Error(`${file} is not in the manifest repository`);
    files[file] = applyChanges(text, changes, manifestLists());
  }
  return files;
}

/**
 * Changes in a node's own file: removing a value an earlier file declares is written as `null`,
 * which deletes it for that node only (removing it from the node file alone would bring it back).
 */
function overrides(
  node: LoadedNode,
  changes: DeclaredChange[],
  domain: AnyDomain,
): DeclaredChange[] {
  const inherited = node.layers.slice(0, -1);
  return changes.map((change) => {
    if (
      !("delete" in change) ||
      !inherited.some((layer) => layer.origins.has(pathKey(change.path)))
    )
      return change;
    if (domain.listKey && change.path.length === domain.specPath.length + 1) {
      throw new Error(
        `${change.path.at(-1)} is declared for other nodes too, and a node file cannot remove one item of an inherited list`,
      );
    }
    return { path: change.path, value: null };
  });
}

/** What a group's PR is about, in a title or a branch name: the key, or the first key and how many more. */
const groupKey = (group: DriftGroup) =>
  group.items.length === 1
    ? group.items[0]!.key
    : `${group.items[0]!.key} and ${group.items.length - 1} more`;

function ticketFor(group: DriftGroup, id: string, detected: string, reason: string): Ticket {
  const [first, ...more] = group.items as [DriftItem, ...DriftItem[]];
  const many = more.length > 0;
  return {
    id,
    status: "open",
    domain: group.domain.name,
    key: groupKey(group),
    declared: many ? group.items.map((i) => i.declared) : first.declared,
    live: many ? group.items.map((i) => i.live) : first.live,
    severity: first.severity,
    nodes: group.nodes.map((n) => n.node.name).sort(),
    remediation: first.remediation,
    detected,
    signature: group.signature,
    ...(many && {
      items: group.items.map((i) => ({
        key: i.key,
        declared: i.declared,
        live: i.live,
        signature: itemSignature(i),
      })),
    }),
    reason,
  };
}

/** A ticket's id and branch identity: by signature, numbered past tickets already recorded for it. */
function ticketIdentity(
  group: DriftGroup,
  recorded: ReadonlySet<string>,
): { id: string; identity: string } {
  const base = `${group.domain.name}-${slug(groupKey(group))}`.replaceAll("_", "-");
  for (let n = 1; ; n++) {
    const identity = n === 1 ? group.signature : `${group.signature}-${n}`;
    if (!recorded.has(`${base}-${identity}`)) return { id: `${base}-${identity}`, identity };
  }
}

// YAML escapes control characters (`"\0"`, `"\e"`) in the values it writes, so a ticket never carries a raw NUL.
const ticketYaml = (ticket: Ticket) =>
  `# Remediation ticket recorded by Quartermaster. Merging commits the operator to fix the host;\n# set status: resolved once it is fixed (Quartermaster proposes that when the drift is gone).\n${stringify(ticket, { lineWidth: 0 })}`;

function nodeList(names: readonly string[], max = 3): string {
  return names.length <= max
    ? names.join(", ")
    : `${names.slice(0, max).join(", ")} and ${names.length - max} more`;
}

/** A group's title: what drifted where, values only when short, one escaped line. */
function groupTitle(verb: string, group: DriftGroup, names: readonly string[]): string {
  const [item] = group.items;
  const values =
    group.items.length === 1
      ? `${show(item!.declared as JsonValue)} → ${show(item!.live as JsonValue)}`
      : "";
  return pullTitle(
    `${verb} ${group.domain.name} drift on ${nodeList(names)}: ${groupKey(group)}${values && values.length <= 80 ? `: ${values}` : ""}`,
  );
}

export function plan(input: PlanInput): Action[] {
  const nodes = new Map(input.nodes.map((n) => [n.name, n]));
  const byFile = new Map<string, LoadedNode[]>();
  for (const node of input.nodes)
    for (const layer of node.layers)
      byFile.set(layer.file, [...(byFile.get(layer.file) ?? []), node]);
  const dependantsCache = new Map<string, string[]>();
  const dependants: Dependants = (file, specPath) => {
    const key = `${file}\0${pathKey(specPath)}`;
    let names = dependantsCache.get(key);
    if (!names)
      dependantsCache.set(
        key,
        (names = (byFile.get(file) ?? [])
          .filter((n) => sourceOf(n, specPath).file === file)
          .map((n) => n.name)),
      );
    return names;
  };
  const results = new Map(input.report.nodes.map((n) => [n.name, n]));
  /** Whether this run saw `domain` on node `name`: audited, in the run's categories, not unknown there. Only then is absent drift gone. */
  const covered = (name: string, domain: string): boolean => {
    const result = results.get(name);
    if (!result || (result.status !== "clean" && result.status !== "drift")) return false;
    if (input.report.categories && !(input.report.categories as string[]).includes(domain))
      return false;
    return !result.unknown?.some((u) => u.domain === domain);
  };
  const openOn = (branch: string) =>
    input.pulls.find((p) => p.branch === branch && p.state === "open");
  // A reviewer's rejection is the accept PR they closed: keyed by that PR's own branch, never by its body.
  const rejected = new Map<string, ExistingPull>();
  for (const pull of input.pulls) {
    if (branchIdentity(pull.branch)?.kind === "accept" && pull.state === "closed" && !pull.merged)
      rejected.set(pull.branch, pull);
  }
  // A ticket or resolve PR closed unmerged was declined: the same proposal is not made again.
  const declined = new Set(
    input.pulls
      .filter((p) => p.marker && p.marker.kind !== "accept" && p.state === "closed" && !p.merged)
      .map((p) => proposalKey(p.branch, p.marker!.nodes)),
  );
  const recordedTickets = new Set(input.tickets.map((t) => t.ticket.id));
  const labels = [BOT_LABEL, ...(input.labels ?? [])];
  const desired: PullContent[] = [];

  for (const group of groupDrift(input.report, nodes)) {
    const names = group.nodes.map((n) => n.node.name).sort();
    const { domain } = group;
    const item = group.items[0]!;
    const acceptBranch = branchName("accept", domain.name, groupKey(group), group.signature);
    const rejection = rejected.get(acceptBranch);
    let reason: { text: string; detail?: string } | undefined = rejection
      ? { text: `the accept PR #${rejection.number} was closed without merging` }
      : item.onDrift === "ticket"
        ? { text: `policy: ${domain.name} drift is remediated on the host` }
        : undefined;
    const rows = group.nodes.flatMap((n) =>
      n.items.map((each) => ({ node: n.node.name, item: each })),
    );
    if (reason === undefined) {
      let files: Record<string, string> | undefined;
      try {
        files = acceptEdits(group, input, dependants);
      } catch (error) {
        reason = {
          text: "the manifest cannot be edited to accept it",
          detail: (error as Error).message,
        };
      }
      if (files) {
        // The manifest already declares the live value: the report predates a merged accept PR.
        if (Object.entries(files).every(([file, text]) => input.files.get(file) === text)) continue;
        const branch = acceptBranch;
        const marker: PullMarker = {
          v: MARKER_VERSION,
          kind: "accept",
          signature: group.signature,
          domain: domain.name,
          nodes: names,
          detected: openOn(branch)?.marker?.detected ?? input.report.startedAt,
          content: hash(JSON.stringify(files), 16),
        };
        desired.push({
          kind: "accept",
          branch,
          title: groupTitle("Accept", group, names),
          body: pullBody({ kind: "accept", group: rows, marker, files: Object.keys(files) }),
          labels: [...labels, `drift:${domain.name}`, `severity:${item.severity}`],
          files,
          marker,
        });
        continue;
      }
    }
    const { id, identity } = ticketIdentity(group, recordedTickets);
    const branch = branchName("ticket", domain.name, groupKey(group), identity);
    if (declined.has(proposalKey(branch, names))) continue;
    const detected = openOn(branch)?.marker?.detected ?? input.report.startedAt;
    // An error may quote a whole live file: the ticket keeps its start, the report has the rest.
    const ticket = ticketFor(
      group,
      id,
      detected,
      reason!.detail ? `${reason!.text}: ${truncate(reason!.detail, 300)}` : reason!.text,
    );
    const files = {
      [path.posix.join(input.manifestsPath, "remediations", `${id}.yaml`)]: ticketYaml(ticket),
    };
    const marker: PullMarker = {
      v: MARKER_VERSION,
      kind: "ticket",
      signature: group.signature,
      domain: domain.name,
      nodes: names,
      detected,
      content: hash(JSON.stringify(files), 16),
      ticket: id,
    };
    desired.push({
      kind: "ticket",
      branch,
      title: groupTitle("Remediate", group, names),
      body: pullBody({ kind: "ticket", group: rows, marker, files: Object.keys(files), reason }),
      labels: [...labels, `drift:${domain.name}`, `severity:${item.severity}`, "remediation"],
      files,
      marker,
      ...(rejection && { replaces: rejection.branch }),
    });
  }

  // Open tickets whose drift is gone from every node they name (each audited, the domain shown): propose resolving them.
  const present = new Map<string, string[]>();
  for (const n of input.report.nodes) present.set(n.name, n.drift.map(itemSignature));
  for (const { ticket, file } of input.tickets) {
    if (ticket.status !== "open") continue;
    if (!ticket.nodes.every((name) => covered(name, ticket.domain))) continue;
    if (
      ticket.nodes.some((name) =>
        present.get(name)?.some((signature) => ticketCovers(ticket, signature)),
      )
    )
      continue;
    const text = input.files.get(file);
    if (text === undefined) continue;
    const branch = branchName("resolve", ticket.domain, ticket.key, ticket.id);
    if (declined.has(proposalKey(branch, ticket.nodes))) continue;
    const resolvedAt = openOn(branch)?.marker?.detected ?? input.report.startedAt;
    const files = {
      [file]: applyChanges(
        text,
        [
          { path: ["status"], value: "resolved" },
          { path: ["resolved"], value: resolvedAt },
        ],
        { listFormPaths: [], keyedLists: [] },
      ),
    };
    const marker: PullMarker = {
      v: MARKER_VERSION,
      kind: "resolve",
      signature: ticket.signature,
      domain: ticket.domain,
      nodes: ticket.nodes,
      detected: resolvedAt,
      content: hash(JSON.stringify(files), 16),
      ticket: ticket.id,
    };
    desired.push({
      kind: "resolve",
      branch,
      title: pullTitle(
        `Resolve remediation ticket ${ticket.id}: drift gone from ${nodeList(ticket.nodes)}`,
      ),
      body: pullBody({ kind: "resolve", group: [], marker, files: Object.keys(files), ticket }),
      labels: [...labels, "remediation"],
      files,
      marker,
    });
  }

  return budget(
    reconcile(desired, input.pulls, covered),
    input.maxNewPrs,
    input.waiting ?? new Map(),
    input.report.startedAt,
  );
}

/**
 * At most `max` of the `open` actions are kept: those deferred longest first (the forge keeps when
 * each was first deferred), then the most severe, then by branch, an order that stays the same
 * from run to run; the others become `defer`. Updates and closes are never limited.
 */
function budget(
  actions: Action[],
  max: number | undefined,
  waiting: ReadonlyMap<string, string>,
  now: string,
): Action[] {
  if (max === undefined) return actions;
  type Open = Extract<Action, { type: "open" }>;
  const since = (a: Open) => waiting.get(a.branch) ?? now;
  // Resolve PRs carry no severity label and go first among equals: they only close out recorded work.
  const rank = (a: Open) => SEVERITIES.findIndex((s) => a.labels.includes(`severity:${s}`));
  const order = (a: Open, b: Open) =>
    (since(a) < since(b) ? -1 : since(a) > since(b) ? 1 : 0) ||
    rank(a) - rank(b) ||
    (a.branch < b.branch ? -1 : 1);
  const opens = actions.filter((a): a is Open => a.type === "open");
  const kept = new Set([...opens].sort(order).slice(0, max));
  return actions.map((a) =>
    a.type !== "open" || kept.has(a)
      ? a
      : {
          type: "defer",
          kind: a.kind,
          branch: a.branch,
          title: a.title,
          budget: max,
          since: since(a),
        },
  );
}

/** What the forge keeps for the next run: when each PR deferred now was first deferred. */
export function waitingAfter(actions: readonly Action[]): Map<string, string> {
  return new Map(
    actions.flatMap((a) => (a.type === "defer" ? [[a.branch, a.since] as const] : [])),
  );
}

const proposalKey = (branch: string, nodes: readonly string[]) =>
  `${branch}\0${[...nodes].sort().join(",")}`;

/** Desired PRs against existing ones: open, update, close, or leave alone. */
function reconcile(
  desired: readonly PullContent[],
  pulls: readonly ExistingPull[],
  covered: (node: string, domain: string) => boolean,
): Action[] {
  const actions: Action[] = [];
  const open = new Map(
    pulls.filter((p) => p.state === "open" && p.marker).map((p) => [p.branch, p]),
  );
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
      // A closed accept PR is never reopened: its drift has become a ticket, on a different branch.
      actions.push({ type: "open", ...content });
      continue;
    }
    const sameFiles = pull.marker?.content === content.marker.content;
    // Labels a failed run did not get to add; labels people added are theirs.
    const addLabels = pull.labels ? content.labels.filter((l) => !pull.labels!.includes(l)) : [];
    if (
      sameFiles &&
      pull.body === content.body &&
      pull.title === content.title &&
      !addLabels.length
    )
      continue;
    if (!sameFiles && pull.humanCommits) {
      leave(pull, "someone other than Quartermaster pushed commits to its branch");
      continue;
    }
    actions.push({
      type: "update",
      number: pull.number,
      updateFiles: !sameFiles,
      addLabels,
      ...content,
    });
  }
  for (const pull of open.values()) {
    if (wanted.has(pull.branch)) continue;
    // Drift this run did not look at (node unaudited, domain not in --category, or unknown) is not gone.
    const domain = pull.marker!.domain ?? pull.branch.split("--")[2] ?? "";
    if (!pull.marker!.nodes.every((name) => covered(name, domain))) continue;
    if (pull.humanCommits) {
      leave(
        pull,
        "its drift is gone, but someone other than Quartermaster pushed commits to its branch",
      );
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
