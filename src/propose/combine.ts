import { structuredPatch } from "diff";
import { MAX_DIFF_EDITS } from "../domains/file-text.js";
import { ManifestEditError } from "../errors.js";
import type { Bundle } from "./bundle.js";

// Open pull requests never edit overlapping or adjacent lines of one file: git sees a conflict
// there, and merging one would leave the other unmergeable. Bundles whose edits meet so are one PR
// where one PR may carry them: every node in it made the same changes (one node, or one change on
// each). Others stay apart, each decidable on its own; once one is merged the next run rebuilds the
// other on the new base (reconcile.ts).

type Lines = [first: number, last: number];

/** Lines of `before` an edit to `after` touches (an insertion touches the line it follows). */
function touched(before: string, after: string): Lines[] {
  const patch = structuredPatch("a", "b", before, after, undefined, undefined, {
    context: 0,
    maxEditLength: MAX_DIFF_EDITS,
  });
  // Too big to diff: the whole file counts as touched.
  if (!patch) return [[0, Number.MAX_SAFE_INTEGER]];
  return patch.hunks.map((h) => [h.oldStart, h.oldStart + Math.max(h.oldLines - 1, 0)]);
}

const near = (a: Lines, b: Lines) => a[0] <= b[1] + 1 && b[0] <= a[1] + 1;

/** Whether every node in `groups` made the same changes (drift signatures): one PR may say yes to all. */
function sameChangesOnEach(groups: Bundle): boolean {
  const changes = new Map<string, Set<string>>();
  for (const group of groups)
    for (const { node } of group.nodes) {
      const mine = changes.get(node.name) ?? new Set<string>();
      changes.set(node.name, mine.add(group.signature));
    }
  const [first, ...rest] = [...changes.values()].map((set) => [...set].sort().join());
  return rest.every((other) => other === first);
}

/**
 * The bundles, those whose accept edits (`editsOf`, made on `base`) touch the same or adjacent
 * lines of a file joined into one (never across owners, never different changes of different
 * nodes), in their first member's place. A bundle whose edit cannot be made stays alone: it becomes
 * a ticket.
 */
export function combineNear(
  bundles: readonly Bundle[],
  editsOf: (bundle: Bundle) => Record<string, string>,
  base: ReadonlyMap<string, string>,
): Bundle[] {
  type Combined = { groups: Bundle; owners: string; lines: Map<string, Lines[]> };
  const combined: Combined[] = [];
  // Which combined bundles edit each file: a bundle is compared with those only, not every one.
  const editing = new Map<string, Set<Combined>>();
  const index = (c: Combined) => {
    for (const file of c.lines.keys()) {
      const set = editing.get(file) ?? new Set<Combined>();
      editing.set(file, set.add(c));
    }
  };
  for (const bundle of bundles) {
    const owners = JSON.stringify(bundle[0]!.owners);
    let files: Record<string, string>;
    try {
      files = editsOf(bundle);
    } catch (error) {
      if (!(error instanceof ManifestEditError)) throw error;
      combined.push({ groups: bundle, owners, lines: new Map() });
      continue;
    }
    const lines = new Map(
      Object.entries(files).map(([file, text]) => [file, touched(base.get(file) ?? "", text)]),
    );
    const candidates = new Set([...lines.keys()].flatMap((file) => [...(editing.get(file) ?? [])]));
    // Never mixing owners: each owner reviews its own PR.
    const meets = combined.filter(
      (c) =>
        candidates.has(c) &&
        c.owners === owners &&
        [...lines].some(([file, mine]) =>
          (c.lines.get(file) ?? []).some((theirs) => mine.some((m) => near(m, theirs))),
        ),
    );
    const into = meets.find((c) => sameChangesOnEach([...c.groups, ...bundle]));
    if (!into) {
      const alone = { groups: bundle, owners, lines };
      combined.push(alone);
      index(alone);
      continue;
    }
    const joined = [into, { groups: bundle, owners, lines }];
    for (const other of meets)
      if (!joined.includes(other) && sameChangesOnEach([...joined, other].flatMap((c) => c.groups)))
        joined.splice(joined.length - 1, 0, other);
    // In the order they were met, the new bundle last.
    into.groups = joined.slice(1).reduce((groups, c) => [...groups, ...c.groups], into.groups);
    for (const other of joined.slice(1)) {
      for (const [file, more] of other.lines)
        into.lines.set(file, [...(into.lines.get(file) ?? []), ...more]);
      if (combined.includes(other)) {
        combined.splice(combined.indexOf(other), 1);
        for (const set of editing.values()) set.delete(other);
      }
    }
    index(into);
  }
  return combined.map((c) => c.groups);
}
