import type { Covered } from "./plan-input.js";
import { nodeSpans } from "../text/markdown.js";
import type { DesiredPull, Reconciled } from "./proposal.js";
import type { ExistingPull } from "./pulls.js";

/**
 * Desired PRs against existing ones: open, update, close, or leave alone. Only a PR that exists has
 * its body written here, to compare; one to open is written once the budget keeps it.
 */
export function reconcile(
  desired: readonly DesiredPull[],
  pulls: readonly ExistingPull[],
  covered: Covered,
): Reconciled[] {
  const actions: Reconciled[] = [];
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
    const body = content.body();
    const sameFiles = pull.marker?.content === content.marker.content;
    // Labels a failed run did not get to add; labels people added are theirs.
    const addLabels = content.labels.filter((l) => !pull.labels.includes(l));
    // A PR whose node list is lost is written again, unchanged, so the list is kept once more.
    const same = pull.body === body && pull.title === content.title && pull.nodes !== undefined;
    // A PR a merge left unmergeable is rebuilt on the new base, whatever moved under it.
    const rebuild = !sameFiles || Boolean(pull.conflicts);
    if (!rebuild && same && !addLabels.length) continue;
    if (rebuild && pull.humanCommits) {
      leave(pull, "someone other than Quartermaster pushed commits to its branch");
      continue;
    }
    actions.push({
      type: "update",
      number: pull.number,
      updateFiles: rebuild,
      addLabels,
      ...content,
      body,
    });
  }
  for (const pull of open.values()) {
    if (wanted.has(pull.branch)) continue;
    // Drift this run did not look at (node unaudited, domain not in --category, or unknown) is not
    // gone.
    const domains = pull.marker!.domains ?? [
      pull.marker!.domain ?? pull.branch.split("--")[2] ?? "",
    ];
    // Nodes not known (named by a digest whose list is lost) are not known to be covered.
    const { nodes } = pull;
    if (!nodes?.every((name) => domains.every((d) => covered(name, d)))) continue;
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
          : pull.marker!.kind === "lift"
            ? "Most of these nodes no longer carry the same override (or the shared file changed); closing this lift."
            : `This drift is no longer present on ${nodeSpans(nodes)} (or is now waived or ticketed); closing.`,
    });
  }
  return actions;
}
