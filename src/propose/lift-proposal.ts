import { append } from "../collections.js";
import { ManifestEditError } from "../errors.js";
import { codeSpan, nodeSpans } from "../text/markdown.js";
import { branchName } from "./branch.js";
import type { DesiredContext } from "./desired-context.js";
import { hash, ownersOf } from "./group.js";
import { liftEdits, repeatedOverrides, type Lift } from "./lift.js";
import { nodesDigest } from "./marker.js";
import { proposalKey, type Proposal } from "./proposal.js";

/**
 * One PR per shared file lifting the values most of its takers override alike (lift.ts). A lift
 * waits while another PR of this run edits one of its files: merging either would leave the other
 * unmergeable, and the lift is found again once that one is merged.
 */
export function liftProposals(context: DesiredContext, busy: ReadonlySet<string>): Proposal[] {
  const { input } = context;
  const byFile = new Map<string, Lift[]>();
  for (const lift of repeatedOverrides(input.nodes, context.dependants))
    append(byFile, lift.file, lift);
  return [...byFile.values()].flatMap((lifts): Proposal[] => {
    let files: Record<string, string>;
    try {
      files = liftEdits(lifts, input.files, context.lists);
    } catch (error) {
      // Nothing drifted: an edit the manifest cannot take is only a lift not proposed.
      if (!(error instanceof ManifestEditError)) throw error;
      return [];
    }
    if (Object.keys(files).some((file) => busy.has(file))) return [];
    const [first] = lifts as [Lift, ...Lift[]];
    const moved = lifts.flatMap((l) => [...l.carriers, ...l.keepers]);
    const nodes = [...new Set(moved.map((n) => n.name))].sort();
    const domains = [...new Set(lifts.map((l) => l.domain.name))];
    const key = String(first.path.at(-1));
    const identity = hash(JSON.stringify([first.file, ...lifts.map((l) => l.path)]), 16);
    const branch = branchName("lift", domains[0]!, key, identity);
    if (context.declined.has(proposalKey(branch, nodesDigest(nodes)))) return [];
    const more = lifts.length > 1 ? ` and ${lifts.length - 1} more` : "";
    return [
      {
        kind: "lift",
        branch,
        title: `Lift repeated overrides into ${first.file}: ${domains[0]!} ${key}${more}`,
        about: {
          signature: identity,
          domain: domains[0]!,
          ...(domains.length > 1 && { domains }),
          nodes,
          detected: context.openOn(branch)?.marker?.detected ?? input.report.startedAt,
        },
        files,
        labels: [],
        owners: [...new Set(moved.flatMap(ownersOf))].sort(),
        body: { group: [], notes: lifts.map(liftNote) },
      },
    ];
  });
}

const shown = (value: unknown) =>
  codeSpan(typeof value === "string" ? value : JSON.stringify(value));

/** What a lift does, for the reviewer: manifest text only in code spans. */
function liftNote(lift: Lift): string {
  const { file, path: at, from, to, carriers, keepers, takers } = lift;
  const kept = keepers.length
    ? `; the other ${keepers.length} taking it from there (${nodeSpans(keepers.map((n) => n.name))}) keep ${shown(from)} in their own files`
    : "";
  return `${codeSpan(file)} declares ${codeSpan(String(at.at(-1)))} as ${shown(from)} for ${takers} nodes, and ${carriers.length} of them override it with ${shown(to)} in their own files (${nodeSpans(carriers.map((n) => n.name))}): the shared file now declares ${shown(to)} and those overrides are removed${kept}.`;
}
