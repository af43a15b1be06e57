import type { NodeStatus } from "../schema.js";
import type { RunDrift, RunHistory } from "../runs.js";
import { compareText } from "../formats/common.js";

// What the fleet page shows, computed from the run history alone: data in, figures out.

const DAY_MS = 86_400_000;
/** The "% resolved within N days" columns. */
export const WITHIN_DAYS = [1, 7, 30] as const;
export const AGE_BUCKETS = [
  { label: "under 1 day", days: 1 },
  { label: "1 to 7 days", days: 7 },
  { label: "7 to 30 days", days: 30 },
  { label: "30 days or more", days: Infinity },
] as const;
/** Drift without `owners:` is counted under this name. */
export const NO_OWNER = "(no owner)";

export interface OwnerFigures {
  owner: string;
  open: number;
  /** Per WITHIN_DAYS: resolved within that many days, of the drift whose outcome is known by now. */
  within: { days: number; resolved: number; of: number }[];
}

export interface NodeStory {
  name: string;
  /** The node's status in the newest run it was in. */
  status: NodeStatus;
  /** Runs in which it turned to drift from anything else. */
  driftEpisodes: number;
  /** Each change of status, oldest first (the first: its status when first seen). */
  statuses: { at: string; status: NodeStatus }[];
  /** Its drift by fingerprint, first seen first. */
  drift: { fingerprint: string; drift: RunDrift }[];
}

export interface FleetFigures {
  runs: { at: string; counts: Record<NodeStatus, number> }[];
  openByAge: { label: string; count: number }[];
  owners: OwnerFigures[];
  nodes: NodeStory[];
}

export function fleetFigures(history: RunHistory): FleetFigures {
  const newest = history.runs.at(-1);
  const now = newest ? Date.parse(newest.at) : 0;
  const stories = new Map<string, NodeStory>();
  // Each run lists the nodes that changed: a status differing from the last one is an event.
  for (const run of history.runs) {
    for (const [name, entry] of Object.entries(run.nodes)) {
      if (entry === null) continue;
      const story = stories.get(name) ?? {
        name,
        status: entry[0],
        driftEpisodes: 0,
        statuses: [],
        drift: [],
      };
      if (story.statuses.length === 0 || story.status !== entry[0]) {
        if (entry[0] === "drift") story.driftEpisodes++;
        story.statuses.push({ at: run.at, status: entry[0] });
      }
      story.status = entry[0];
      stories.set(name, story);
    }
  }
  const open: RunDrift[] = [];
  const owners = new Map<string, { open: number; outcomes: Outcome[] }>();
  const ownerOf = (d: RunDrift) => (d.owners?.length ? d.owners : [NO_OWNER]);
  for (const [fingerprint, drift] of history.drift) {
    const story = stories.get(drift.node);
    story?.drift.push({ fingerprint, drift });
    const isOpen = drift.resolved === undefined && story !== undefined;
    if (isOpen) open.push(drift);
    for (const owner of ownerOf(drift)) {
      const figures = owners.get(owner) ?? { open: 0, outcomes: [] };
      if (isOpen) figures.open++;
      const until = drift.resolved === undefined ? now : Date.parse(drift.resolved);
      figures.outcomes.push({
        days: (until - Date.parse(drift.firstSeen)) / DAY_MS,
        resolved: drift.resolved !== undefined,
      });
      owners.set(owner, figures);
    }
  }
  for (const story of stories.values())
    story.drift.sort((a, b) => Date.parse(a.drift.firstSeen) - Date.parse(b.drift.firstSeen));
  return {
    runs: history.runs.map((r) => ({ at: r.at, counts: r.counts })),
    openByAge: AGE_BUCKETS.map((bucket, i) => {
      const from = i === 0 ? 0 : AGE_BUCKETS[i - 1]!.days;
      return {
        label: bucket.label,
        count: open.filter((d) => {
          const age = (now - Date.parse(d.firstSeen)) / DAY_MS;
          return age >= from && age < bucket.days;
        }).length,
      };
    }),
    owners: [...owners]
      .sort(([a], [b]) => compareText(a, b))
      .map(([owner, { open: count, outcomes }]) => ({
        owner,
        open: count,
        within: WITHIN_DAYS.map((days) => withinFigure(outcomes, days)),
      })),
    nodes: [...stories.values()].sort((a, b) => compareText(a.name, b.name)),
  };
}

/** Days to resolution, or open so far. */
interface Outcome {
  days: number;
  resolved: boolean;
}

/**
 * Of the drift whose outcome within `days` is known (resolved, or open for longer than that), how
 * much was resolved within it.
 */
function withinFigure(outcomes: readonly Outcome[], days: number) {
  let resolved = 0;
  let of = 0;
  for (const outcome of outcomes) {
    if (outcome.resolved || outcome.days > days) of++;
    if (outcome.resolved && outcome.days <= days) resolved++;
  }
  return { days, resolved, of };
}

/** Nodes that turned to drift at least twice, most often first. */
export const repeatDrifters = (figures: FleetFigures): NodeStory[] =>
  figures.nodes
    .filter((n) => n.driftEpisodes >= 2)
    .sort((a, b) => b.driftEpisodes - a.driftEpisodes || compareText(a.name, b.name));
