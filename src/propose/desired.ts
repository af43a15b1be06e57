import path from "node:path";
import { append } from "../collections.js";
import { ticketCovers } from "../drift/drift.js";
import { codeSpan, truncate } from "../text/markdown.js";
import {
  acceptEdits,
  alikeAcross,
  dependantsOf,
  type Alike,
  groupOfFile,
  type AcceptPlan,
  type SharedValue,
} from "./accept-edits.js";
import { firstSeen } from "./body.js";
import { carriedItem, markerDigest, markerItems, nodesDigest } from "./marker.js";
import { branchIdentity } from "./branch.js";
import {
  bundleBranch,
  bundleDomains,
  bundleIdentity,
  bundleLabels,
  bundleNodes,
  bundleRows,
  bundleSignature,
  bundleTicketId,
  bundleTitle,
  type Bundle,
} from "./bundle.js";
import { combineNear } from "./combine.js";
import { bundleGroups, groupDrift, itemSignature, type DriftGroup } from "./group.js";
import type { DesiredContext } from "./desired-context.js";
import { liftProposals } from "./lift-proposal.js";
import { resolveProposals } from "./resolve.js";
import { ManifestEditError } from "../errors.js";
import type { SpecListShapes } from "../manifest/lists.js";
import type { Report } from "../report/schema.js";
import type { Covered, PlanInput } from "./plan-input.js";
import { buildProposal, proposalKey, type DesiredPull, type Proposal } from "./proposal.js";
import type { ExistingPull } from "./pulls.js";
import { ticketFor, ticketIdentity, ticketYaml } from "./ticket.js";

// The pull requests this run's drift and tickets call for: an accept PR for each drift group the
// manifest can take, else a ticket PR, and a resolve PR for each open ticket whose drift is gone.

type Reason = { text: string; detail?: string };

export function desiredPulls(
  input: PlanInput,
  covered: Covered,
  lists: SpecListShapes,
): DesiredPull[] {
  const context: DesiredContext = {
    input,
    audited: auditedIn(input.report),
    dependants: dependantsOf(input.nodes),
    lists,
    openOn: (branch) => input.pulls.find((p) => p.branch === branch && p.state === "open"),
    rejected: rejectionOf(input.pulls),
    declined: new Set(
      input.pulls
        .filter((p) => p.marker && p.marker.kind !== "accept" && p.state === "closed" && !p.merged)
        .map((p) => proposalKey(p.branch, markerDigest(p.marker!))),
    ),
    recordedTickets: new Set(input.tickets.map((t) => t.ticket.id)),
  };
  const nodes = new Map(input.nodes.map((n) => [n.name, n]));
  const raised = raisedOnTickets(input);
  const groups = groupDrift(input.report, nodes)
    .filter((group) => !raised(group))
    .flatMap(context.rejected);
  const bundles: readonly Bundle[] = bundleGroups(groups);
  // Where a shared value is written is decided from every node accepting it alike, in any PR.
  const alike = alikeAcross(bundles.flatMap((bundle) => bundle.filter(accepts)));
  const acceptPlan = acceptPlans(context, alike);
  // A rejected accept is a ticket, never joined into another's PR.
  const proposed = combineNear(
    bundles,
    (bundle) => (bundle.some(accepts) ? acceptPlan(bundle).files : {}),
    input.files,
  );
  const proposals = [
    ...proposed.flatMap((bundle) =>
      bundleProposals(bundle, context, acceptPlan, !bundles.includes(bundle)),
    ),
    ...resolveProposals(context, covered),
  ];
  proposals.push(
    ...liftProposals(context, new Set(proposals.flatMap((p) => Object.keys(p.files)))),
  );
  return proposals.map((proposal) => buildProposal(proposal, input.labels ?? [], input.files));
}

/** The accept edits of a bundle's accepting groups; ManifestEditError when they cannot be made. */
type AcceptPlanOf = (bundle: Bundle) => AcceptPlan;

/**
 * Each bundle's accept plan made once: the bundles not combined with others are planned when
 * combining, and planned again only at the cost of a lookup.
 */
function acceptPlans(context: DesiredContext, alike: Alike): AcceptPlanOf {
  const made = new Map<Bundle, AcceptPlan | ManifestEditError>();
  return (bundle) => {
    let plan = made.get(bundle);
    if (plan === undefined) {
      try {
        plan = acceptEdits(
          bundle.filter(accepts),
          context.input.files,
          context.dependants,
          context.lists,
          context.audited,
          alike,
        );
      } catch (error) {
        if (!(error instanceof ManifestEditError)) throw error;
        plan = error;
      }
      made.set(bundle, plan);
    }
    if (plan instanceof ManifestEditError) throw plan;
    return plan;
  };
}

/**
 * A bundle's proposals: accept what the manifest can take and policy allows, as one PR; record a
 * ticket for the rest (policy, a rejected accept PR, an edit the manifest cannot take), as one PR.
 */
function bundleProposals(
  bundle: Bundle,
  context: DesiredContext,
  acceptPlan: AcceptPlanOf,
  combined: boolean,
): Proposal[] {
  const pending = bundle.filter(rollingOut);
  const byPolicy = bundle.filter((g) => !rollingOut(g) && g.items[0]!.onDrift === "ticket");
  const rejected = bundle.filter((g) => g.rejectedBy && !rollingOut(g) && !byPolicy.includes(g));
  const ticketed = [...pending, ...byPolicy, ...rejected];
  const rejections = [...new Set(rejected.map((g) => g.rejectedBy!.number))];
  const reasons: Reason[] = [
    ...(pending.length ? [rolloutReason(pending)] : []),
    ...(byPolicy.length
      ? [{ text: `policy: ${bundleDomains(byPolicy).join(", ")} drift is remediated on the host` }]
      : []),
    ...(rejections.length
      ? [
          {
            text: `the accept PR ${rejections.map((n) => `#${n}`).join(", ")} was closed without merging`,
          },
        ]
      : []),
  ];
  const accepting = bundle.filter(accepts);
  let accept: Proposal | undefined;
  // The ticket keeps a rejected PR's identity: new owners update it rather than replace it.
  const replaces = rejected[0]?.rejectedBy!.branch;
  if (accepting.length) {
    const outcome = acceptProposal(accepting, context, () => acceptPlan(bundle), combined);
    if (outcome && "reason" in outcome) {
      ticketed.push(...accepting);
      reasons.push(outcome.reason);
    } else accept = outcome;
  }
  const ticket = ticketed.length
    ? ticketProposal(ticketed, joined(reasons), context, replaces)
    : undefined;
  return [...(accept ? [accept] : []), ...(ticket ? [ticket] : [])];
}

/** A node still running what the manifest declared before a merged change: accepting would revert it. */
const rollingOut = (group: DriftGroup) =>
  group.nodes.some((n) => n.items.some((item) => item.cause?.kind === "rollout"));

/**
 * Whether a group may be accepted into the manifest: policy allows it, it is no pending rollout, and
 * no reviewer rejected it.
 */
const accepts = (group: DriftGroup) =>
  group.items[0]!.onDrift !== "ticket" && !rollingOut(group) && !group.rejectedBy;

/** Why pending rollouts are tickets: the commits (manifest text, so shown only in a code span). */
function rolloutReason(groups: Bundle): Reason {
  const commits = [
    ...new Set(
      groups.flatMap((g) =>
        g.nodes.flatMap((n) => n.items.map((item) => item.cause?.commit ?? [])),
      ),
    ),
  ];
  return {
    text: "rollout pending: the manifest moved and the host did not, so accepting the live value would revert a merged change",
    ...(commits.length && { detail: commits.join(", ") }),
  };
}

const joined = (reasons: readonly Reason[]): Reason => ({
  text: reasons.map((r) => r.text).join("; "),
  ...(reasons.some((r) => r.detail) && {
    detail: reasons.flatMap((r) => r.detail ?? []).join("; "),
  }),
});

/**
 * The accept PR of a bundle, nothing when the manifest already says it, or why it is a ticket
 * instead.
 */
function acceptProposal(
  bundle: Bundle,
  context: DesiredContext,
  plan: () => AcceptPlan,
  combined: boolean,
): Proposal | { reason: Reason } | undefined {
  const branch = bundleBranch("accept", bundle);
  let accepted: AcceptPlan;
  try {
    accepted = plan();
  } catch (error) {
    // Only an edit that cannot be made becomes a ticket; anything else is a bug and is reported as
    // one.
    if (!(error instanceof ManifestEditError)) throw error;
    return {
      reason: { text: "the manifest cannot be edited to accept it", detail: error.message },
    };
  }
  const { files } = accepted;
  // The manifest already declares the live value: the report predates a merged accept PR.
  if (Object.entries(files).every(([file, text]) => context.input.files.get(file) === text))
    return undefined;
  return {
    kind: "accept",
    branch,
    title: bundleTitle("Accept", bundle),
    about: about(bundle, detectedOf(bundle, branch, context), true),
    files,
    labels: bundleLabels(bundle),
    owners: bundle[0]!.owners,
    body: {
      group: bundleRows(bundle),
      notes: [...accepted.shared.map(sharedNote), ...(combined ? [COMBINED] : [])],
    },
  };
}

/**
 * What a bundle's marker says besides its kind: the domains when there are several; for an accept,
 * the items it carries (what closing it rejects).
 */
function about(bundle: Bundle, detected: string, accept = false): Proposal["about"] {
  const domains = bundleDomains(bundle);
  const items =
    accept &&
    markerItems(
      bundle.flatMap((g) =>
        g.nodes.flatMap((n) => n.items.map((item) => carriedItem(n.node.name, item))),
      ),
    );
  return {
    signature: bundleSignature(bundle),
    domain: domains[0]!,
    ...(domains.length > 1 && { domains }),
    nodes: bundleNodes(bundle),
    detected,
    ...(items && { items }),
  };
}

/**
 * When the drift was first seen (kept across runs), else when its open PR first proposed it, else
 * now.
 */
const detectedOf = (bundle: Bundle, branch: string, context: DesiredContext) =>
  firstSeen(bundle.flatMap((g) => g.items)) ??
  context.openOn(branch)?.marker?.detected ??
  context.input.report.startedAt;

const COMBINED =
  "This pull request accepts drift that edits adjacent lines of one file together: as separate pull requests, merging one would leave the other unmergeable.";

/** What the reviewer is told about a value a shared file declares for more than a few nodes. */
function sharedNote(shared: SharedValue): string {
  const { file, takers, unaudited, drifted } = shared;
  const dark = unaudited ? ` (${unaudited} not audited this run)` : "";
  if (shared.edited && drifted === takers)
    return `${codeSpan(file)} declares this value for ${takers} nodes, and all ${takers} drifted alike: the shared file is edited, rather than ${drifted} node files each overriding it.`;
  return shared.edited
    ? `${codeSpan(file)} declares this value for ${takers} nodes and ${drifted} of the ${takers - unaudited} audited drifted alike: the shared file is edited, and the other ${takers - drifted}${dark} keep the old value in their own files, rather than ${drifted} node files each overriding it.`
    : `This writes the same value into ${drifted} node files as overrides of ${codeSpan(file)}, which declares it for ${takers} nodes${dark}: consider a group for the drifted nodes.`;
}

function ticketProposal(
  bundle: Bundle,
  reason: Reason,
  context: DesiredContext,
  replaces?: string,
): Proposal | undefined {
  const tickets = bundle.map((group) => ({
    group,
    ...ticketIdentity(group, context.recordedTickets),
  }));
  const [first] = tickets;
  // The ticket keeps a rejected PR's identity: new owners update it rather than replace it.
  const base = replaces === undefined ? bundleIdentity(bundle) : branchIdentity(replaces)!.identity;
  // A number past recorded tickets, which the first group's id carries, numbers the bundle's too.
  const identity = `${base}${first!.identity.slice(first!.group.identity.length)}`;
  const branch = bundleBranch("ticket", bundle, identity);
  if (context.declined.has(proposalKey(branch, nodesDigest(bundleNodes(bundle))))) return undefined;
  const detected = detectedOf(bundle, branch, context);
  // An error may quote a whole live file: the ticket keeps its start, the report has the rest.
  const why = reason.detail ? `${reason.text}: ${truncate(reason.detail, 300)}` : reason.text;
  return {
    kind: "ticket",
    branch,
    title: bundleTitle("Remediate", bundle),
    about: { ...about(bundle, detected), ticket: bundleTicketId(bundle, identity, first!.id) },
    files: Object.fromEntries(
      tickets.map(({ group, id }) => [
        path.posix.join(
          context.input.manifestsPath,
          "remediations",
          ticketFolder(group),
          `${id}.yaml`,
        ),
        ticketYaml(ticketFor(group, id, firstSeen(group.items) ?? detected, why)),
      ]),
    ),
    labels: [...bundleLabels(bundle), "remediation"],
    owners: bundle[0]!.owners,
    body: { group: bundleRows(bundle), reason },
    ...(replaces !== undefined && { replaces }),
  };
}

/**
 * Drift an open ticket covers is never a fresh PR for the same drift: past its due date it is raised
 * on that ticket (the dashboard lists it); before, it is acknowledged, which a report audited before
 * the ticket was merged (the one a refresh plans from) does not say yet.
 */
function raisedOnTickets(input: PlanInput): (group: DriftGroup) => boolean {
  const open = input.tickets.filter(({ ticket }) => ticket.status === "open");
  return (group) =>
    group.nodes.every(({ node, items }) =>
      items.every((item) =>
        open.some(
          ({ ticket }) =>
            ticket.nodes.includes(node.name) && ticketCovers(ticket, itemSignature(item)),
        ),
      ),
    );
}

/**
 * The accept PRs closed unmerged, looked up by the items they carried: a group's nodes whose items
 * one of them carried are split off as rejected by it. A marker that does not list its items (too
 * many, or written before they were) rejects its drift's signature on its nodes.
 */
function rejectionOf(pulls: readonly ExistingPull[]): DesiredContext["rejected"] {
  const byItem = new Map<string, ExistingPull>();
  const byDrift = new Map<string, ExistingPull[]>();
  for (const p of pulls) {
    const domain = branchIdentity(p.branch);
    if (!p.marker || domain?.kind !== "accept" || p.state !== "closed" || p.merged) continue;
    if (p.marker.items) for (const item of p.marker.items) byItem.set(item, p);
    else append(byDrift, `${domain.domain}\0${p.marker.signature}`, p);
  }
  if (!byItem.size && !byDrift.size) return (group) => [group];
  return (group) => {
    const signature = bundleSignature([group]);
    // A rejection whose node list is lost holds for any nodes: a rejected accept is never proposed
    // again, at worst a ticket is.
    const byNodes = (name: string) =>
      byDrift
        .get(`${group.domain.name}\0${signature}`)
        ?.find((p) => p.nodes?.includes(name) ?? true);
    const parts = new Map<ExistingPull | undefined, DriftGroup["nodes"]>();
    for (const taker of group.nodes) {
      const name = taker.node.name;
      const pull =
        taker.items.map((item) => byItem.get(carriedItem(name, item))).find(Boolean) ??
        byNodes(name);
      append(parts, pull, taker);
    }
    return [...parts].map(([pull, nodes]) => ({
      ...group,
      nodes,
      ...(pull && { rejectedBy: { number: pull.number, branch: pull.branch } }),
    }));
  };
}

function auditedIn(report: Report): (name: string) => boolean {
  const audited = new Set(
    report.nodes.filter((n) => n.status === "clean" || n.status === "drift").map((n) => n.name),
  );
  return (name) => audited.has(name);
}

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
