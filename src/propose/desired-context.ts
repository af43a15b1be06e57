import type { Dependants } from "./accept-edits.js";
import type { DriftGroup } from "./group.js";
import type { SpecListShapes } from "../manifest/lists.js";
import type { PlanInput } from "./plan-input.js";
import type { ExistingPull } from "./pulls.js";

/** What the desired pull requests of one run are made from: the input and what was read of PRs. */
export interface DesiredContext {
  input: PlanInput;
  dependants: Dependants;
  lists: SpecListShapes;
  /** The open PR on a branch: its `detected` is kept so the body stays stable. */
  openOn: (branch: string) => ExistingPull | undefined;
  /**
   * A group split by a reviewer's rejections: the nodes whose items an accept PR closed unmerged
   * carried (each such part `rejectedBy` it), and the others. Found by the items (node, key, live
   * value), never by who reviews them: editing `owners:` keeps the decision.
   */
  rejected: (group: DriftGroup) => DriftGroup[];
  /** A ticket or resolve PR closed unmerged was declined: the same proposal is not made again. */
  declined: ReadonlySet<string>;
  recordedTickets: ReadonlySet<string>;
  /** Whether this run audited a node (a domain it could not show is still audited: not drift). */
  audited: (name: string) => boolean;
}
