import path from "node:path";
import type { JsonValue } from "../domains/domain.js";
import { append } from "../collections.js";
import { ticketCovers } from "../drift/drift.js";
import { codeSpan, truncate } from "../text/markdown.js";
import {
  acceptEdits,
  dependantsOf,
  groupOfFile,
  type AcceptPlan,
  type Dependants,
} from "./accept-edits.js";
import { branchIdentity, branchName } from "./branch.js";
import { groupDrift, groupKey, itemSignature, type DriftGroup } from "./group.js";
import { ManifestEditError } from "../errors.js";
import { applyChanges } from "../manifest/edit/apply.js";
import type { SpecListShapes } from "../manifest/lists.js";
import type { Report } from "../report/schema.js";
import type { Covered, PlanInput } from "./plan-input.js";
import { nodeList } from "../text/markdown.js";
import { buildProposal, type Proposal, type PullContent } from "./proposal.js";
import { proposalKey, type ExistingPull } from "./pulls.js";
import { ticketFor, ticketIdentity, ticketYaml } from "./ticket.js";

// The pull requests this run's drift and tickets call for: an accept PR for each drift group the
// manifest can take, else a ticket PR, and a resolve PR for each open ticket whose drift is gone.

interface Context {
  input: PlanInput;
  dependants: Dependants;
  lists: SpecListShapes;
  /** The open PR on a branch: its `detected` is kept so the body stays stable. */
  openOn: (branch: string) => ExistingPull | undefined;
  /**
   * A reviewer's rejection is the accept PR they closed, found by its drift (domain, signature and
   * a node in common), never by who reviews it: editing `owners:` keeps the decision.
   */
  rejected: (group: DriftGroup) => ExistingPull | undefined;
  /** A ticket or resolve PR closed unmerged was declined: the same proposal is not made again. */
  declined: ReadonlySet<string>;
  recordedTickets: ReadonlySet<string>;
  /** Whether this run audited a node (a domain it could not show is still audited: not drift). */
  audited: (name: string) => boolean;
  wait: (waiting: Waiting) => void;
}

type Reason = { text: string; detail?: string };

/** An accept that waits for a run auditing every node its shared value reaches. */
export interface Waiting {
  branch: string;
  title: string;
  /** Per shared file: "web: 1 of 3 nodes not audited this run". */
  reasons: string[];
}

export function desiredPulls(
  input: PlanInput,
  covered: Covered,
  lists: SpecListShapes,
): { pulls: PullContent[]; waits: Waiting[] } {
  const waits: Waiting[] = [];
  const context: Context = {
    input,
    audited: auditedIn(input.report),
    wait: (waiting) => waits.push(waiting),
    dependants: dependantsOf(input.nodes),
    lists,
    openOn: (branch) => input.pulls.find((p) => p.branch === branch && p.state === "open"),
    rejected: rejectionOf(input.pulls),
    declined: new Set(
      input.pulls
        .filter((p) => p.marker && p.marker.kind !== "accept" && p.state === "closed" && !p.merged)
        .map((p) => proposalKey(p.branch, p.marker!.nodes)),
    ),
    recordedTickets: new Set(input.tickets.map((t) => t.ticket.id)),
  };
  const nodes = new Map(input.nodes.map((n) => [n.name, n]));
  const proposals = [
    ...groupDrift(input.report, nodes).flatMap((group) => groupProposal(group, context) ?? []),
    ...resolveProposals(context, covered),
  ];
  return {
    pulls: proposals.map((proposal) => buildProposal(proposal, input.labels ?? [], input.files)),
    waits,
  };
}

/**
 * A drift group's proposal: accept it into the manifest, or record a ticket when it must not or
 * cannot be.
 */
function groupProposal(group: DriftGroup, context: Context): Proposal | undefined {
  const { domain } = group;
  const item = group.items[0]!;
  const acceptBranch = branchName("accept", domain.name, groupKey(group), group.identity);
  const rejection = context.rejected(group);
  if (rejection)
    return ticketProposal(
      // The ticket keeps the rejected PR's identity: new owners update it rather than replace it.
      { ...group, identity: branchIdentity(rejection.branch)!.identity },
      { text: `the accept PR #${rejection.number} was closed without merging` },
      context,
      rejection.branch,
    );
  if (item.onDrift === "ticket")
    return ticketProposal(
      group,
      { text: `policy: ${domain.name} drift is remediated on the host` },
      context,
    );
  let accepted: AcceptPlan;
  try {
    accepted = acceptEdits(
      group,
      context.input.files,
      context.dependants,
      context.lists,
      context.audited,
    );
  } catch (error) {
    // Only an edit that cannot be made becomes a ticket; anything else is a bug and is reported as
    // one.
    if (!(error instanceof ManifestEditError)) throw error;
    return ticketProposal(
      group,
      { text: "the manifest cannot be edited to accept it", detail: error.message },
      context,
    );
  }
  const names = nodeNames(group);
  if ("waiting" in accepted) {
    context.wait({
      branch: acceptBranch,
      title: groupTitle("Accept", group, names),
      reasons: accepted.waiting,
    });
    return undefined;
  }
  const { files } = accepted;
  // The manifest already declares the live value: the report predates a merged accept PR.
  if (Object.entries(files).every(([file, text]) => context.input.files.get(file) === text))
    return undefined;
  return {
    kind: "accept",
    branch: acceptBranch,
    title: groupTitle("Accept", group, names),
    about: {
      signature: group.signature,
      domain: domain.name,
      nodes: names,
      detected: context.openOn(acceptBranch)?.marker?.detected ?? context.input.report.startedAt,
    },
    files,
    labels: [`drift:${domain.name}`, `severity:${item.severity}`],
    owners: group.owners,
    body: {
      group: rows(group),
      notes: accepted.shared.map((shared) =>
        shared.edited
          ? `${codeSpan(shared.file)} declares this value for ${shared.takers} nodes and ${shared.drifted} drifted alike: the shared file is edited, and the ${shared.takers - shared.drifted} that did not drift keep the old value in their own files, rather than ${shared.drifted} node files each overriding it.`
          : `This writes the same value into ${shared.drifted} node files as overrides of ${codeSpan(shared.file)}, which declares it for ${shared.takers} nodes: consider a group for the drifted nodes.`,
      ),
    },
  };
}

function ticketProposal(
  group: DriftGroup,
  reason: Reason,
  context: Context,
  replaces?: string,
): Proposal | undefined {
  const { domain } = group;
  const names = nodeNames(group);
  const { id, identity } = ticketIdentity(group, context.recordedTickets);
  const branch = branchName("ticket", domain.name, groupKey(group), identity);
  if (context.declined.has(proposalKey(branch, names))) return undefined;
  const detected = context.openOn(branch)?.marker?.detected ?? context.input.report.startedAt;
  // An error may quote a whole live file: the ticket keeps its start, the report has the rest.
  const ticket = ticketFor(
    group,
    id,
    detected,
    reason.detail ? `${reason.text}: ${truncate(reason.detail, 300)}` : reason.text,
  );
  return {
    kind: "ticket",
    branch,
    title: groupTitle("Remediate", group, names),
    about: { signature: group.signature, domain: domain.name, nodes: names, detected, ticket: id },
    files: {
      [path.posix.join(
        context.input.manifestsPath,
        "remediations",
        ticketFolder(group),
        `${id}.yaml`,
      )]: ticketYaml(ticket),
    },
    labels: [`drift:${domain.name}`, `severity:${group.items[0]!.severity}`, "remediation"],
    owners: group.owners,
    body: { group: rows(group), reason },
    ...(replaces !== undefined && { replaces }),
  };
}

/**
 * Open tickets whose drift is gone from every node they name (each audited, the domain shown):
 * resolving them.
 */
function resolveProposals(context: Context, covered: Covered): Proposal[] {
  const { input } = context;
  const present = new Map<string, string[]>();
  for (const n of input.report.nodes) present.set(n.name, n.drift.map(itemSignature));
  const proposals: Proposal[] = [];
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
    // A resolved ticket leaves the open ones: moved to remediations/resolved/, its history in git.
    const resolvedFile = path.posix.join(
      input.manifestsPath,
      "remediations",
      RESOLVED_FOLDER,
      path.posix.basename(file),
    );
    const branch = branchName("resolve", ticket.domain, ticket.key, ticket.id);
    if (context.declined.has(proposalKey(branch, ticket.nodes))) continue;
    const resolvedAt = context.openOn(branch)?.marker?.detected ?? input.report.startedAt;
    proposals.push({
      kind: "resolve",
      branch,
      title: `Resolve remediation ticket ${ticket.id}: drift gone from ${nodeList(ticket.nodes)}`,
      about: {
        signature: ticket.signature,
        domain: ticket.domain,
        nodes: ticket.nodes,
        detected: resolvedAt,
        ticket: ticket.id,
      },
      files: {
        ...(file !== resolvedFile && { [file]: null }),
        [resolvedFile]: applyChanges(
          text,
          [
            { path: ["status"], value: "resolved" },
            { path: ["resolved"], value: resolvedAt },
          ],
          { listFormPaths: [], keyedLists: [] },
        ),
      },
      labels: ["remediation"],
      // CODEOWNERS' @ left off, as ownersOf does for group and node files.
      owners: ticket.owner === undefined ? [] : [ticket.owner.replace(/^@/, "")],
      body: { group: [], ticket },
    });
  }
  return proposals;
}

/** The accept PRs closed unmerged, looked up by the drift group they rejected. */
function rejectionOf(pulls: readonly ExistingPull[]): Context["rejected"] {
  const byDrift = new Map<string, ExistingPull[]>();
  for (const p of pulls) {
    const domain = branchIdentity(p.branch);
    if (p.marker && domain?.kind === "accept" && p.state === "closed" && !p.merged)
      append(byDrift, `${domain.domain}\0${p.marker.signature}`, p);
  }
  return (group) => {
    const names = new Set(nodeNames(group));
    return byDrift
      .get(`${group.domain.name}\0${group.signature}`)
      ?.find((p) => p.marker!.nodes.some((name) => names.has(name)));
  };
}

function auditedIn(report: Report): (name: string) => boolean {
  const audited = new Set(
    report.nodes.filter((n) => n.status === "clean" || n.status === "drift").map((n) => n.name),
  );
  return (name) => audited.has(name);
}

/** Where resolved tickets go, out of the open ones' folders. */
export const RESOLVED_FOLDER = "resolved";

/**
 * The folder a new ticket is filed in, so CODEOWNERS can route it: the group declaring the drifted
 * value, else the one node's, else a group every node is in, else `fleet`.
 */
function ticketFolder(group: DriftGroup): string {
  const declaredIn = groupOfFile(group.items[0]!.source.file);
  if (declaredIn) return declaredIn;
  const [first, ...others] = group.nodes.map((n) => n.node);
  if (!others.length) return first!.name;
  const common = first!.groups.filter((g) => others.every((n) => n.groups.includes(g)));
  return common.at(-1) ?? "fleet";
}

const nodeNames = (group: DriftGroup) => group.nodes.map((n) => n.node.name).sort();

/** One row per node and drift item, for the body's table. */
const rows = (group: DriftGroup) =>
  group.nodes.flatMap((n) => n.items.map((item) => ({ node: n.node.name, item })));

// A missing unit, file or package is live `null`: a title says it in words.
const show = (value: JsonValue) =>
  typeof value === "string" ? value : value === null ? "absent" : JSON.stringify(value);

/** A group's title: what drifted where, values only when short. */
function groupTitle(verb: string, group: DriftGroup, names: readonly string[]): string {
  const [item] = group.items;
  const values =
    group.items.length === 1
      ? `${show(item!.declared as JsonValue)} → ${show(item!.live as JsonValue)}`
      : "";
  return `${verb} ${group.domain.name} drift on ${nodeList(names)}: ${groupKey(group)}${values && values.length <= 80 ? `: ${values}` : ""}`;
}
