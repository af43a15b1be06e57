// What the planner (plan.ts) reads, and what the steps it calls (desired.ts, reconcile.ts) share.
import type { LoadedNode } from "../manifest/load.js";
import type { Ticket } from "../manifest/tickets.js";
import type { Report } from "../report/schema.js";
import type { ExistingPull } from "./pulls.js";

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
  /**
   * Branch -> when its PR was first deferred (ISO time), kept by the forge between runs: oldest
   * open first.
   */
  waiting?: ReadonlyMap<string, string>;
}

/**
 * Whether this run saw `domain` on node `name`: audited, in the run's categories, not unknown
 * there. Only then is absent drift gone.
 */
export type Covered = (name: string, domain: string) => boolean;
