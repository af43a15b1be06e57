import path from "node:path";
import { ticketCovers } from "../drift/drift.js";
import { applyChanges } from "../manifest/edit/apply.js";
import { nodeList } from "../text/markdown.js";
import { branchName } from "./branch.js";
import type { DesiredContext } from "./desired-context.js";
import { itemSignature } from "./group.js";
import type { Covered } from "./plan-input.js";
import { nodesDigest } from "./marker.js";
import { proposalKey, type Proposal } from "./proposal.js";

/** Where resolved tickets go: a folder beside the open ones. */
const RESOLVED_FOLDER = "resolved";

/**
 * Where a resolved ticket goes: out of the open ones, into `resolved/` in its own folder, its
 * history in git. Never into a folder elsewhere: the last ticket leaving a folder would read to
 * git as the folder renamed, and a sibling PR adding a ticket to it would conflict ("file
 * location") whichever merged first. A ticket already in a `resolved/` folder stays there.
 */
function resolvedPath(file: string): string {
  const dir = path.posix.dirname(file);
  return path.posix.basename(dir) === RESOLVED_FOLDER
    ? file
    : path.posix.join(dir, RESOLVED_FOLDER, path.posix.basename(file));
}

/**
 * Open tickets whose drift is gone from every node they name (each audited, the domain shown):
 * resolving them.
 */
export function resolveProposals(context: DesiredContext, covered: Covered): Proposal[] {
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
    const resolvedFile = resolvedPath(file);
    const branch = branchName("resolve", ticket.domain, ticket.key, ticket.id);
    if (context.declined.has(proposalKey(branch, nodesDigest(ticket.nodes)))) continue;
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
