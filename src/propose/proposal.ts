import { structuredPatch } from "diff";
import { MAX_DIFF_EDITS } from "../domains/file-text.js";
import { pullBody, pullTitle, type BodyInput } from "./body.js";
import type { PullKind } from "./branch.js";
import { hash } from "./group.js";
import { MARKER_VERSION, markerNodes, type PullMarker } from "./marker.js";

// What a pull request proposes, and what can be done about one: the planner's vocabulary.

/** What identifies a proposal across runs: its branch and the nodes it names (their digest). */
export const proposalKey = (branch: string, digest: string) => `${branch}\0${digest}`;

export const BOT_LABEL = "quartermaster";
/** GitHub refuses a label name longer than this (HTTP 422). */
export const MAX_LABEL_CHARS = 50;

/** `label` as GitHub takes it: a longer one is cut, with a hash of the whole so it stays unique. */
export const fitLabel = (label: string): string =>
  label.length <= MAX_LABEL_CHARS
    ? label
    : `${label.slice(0, MAX_LABEL_CHARS - 9)}~${hash(label, 8)}`;

export interface PullContent {
  kind: PullKind;
  branch: string;
  title: string;
  body: string;
  labels: string[];
  /** Repository path -> new file text; null removes the file. */
  files: Record<string, string | null>;
  marker: PullMarker;
  /** Every node the PR is about: in its marker, or named there by digest (node-lists.ts). */
  nodes: string[];
  /** A ticket recording a rejection: the branch of the accept PR a reviewer closed. */
  replaces?: string;
  /** What the reviewer should know about how it was made, also said in the plan. */
  notes?: string[];
  /** The nodes' owners (GitHub users and org/team), asked to review. */
  owners: string[];
}

export type Action =
  | ({ type: "open" } & PullContent)
  | ({ type: "update"; number: number; updateFiles: boolean; addLabels: string[] } & PullContent)
  | { type: "close"; number: number; branch: string; comment: string }
  | { type: "leave"; number: number; reason: string; comment?: string }
  /** `since`: when this PR was first deferred, to be kept for the next run. */
  | { type: "defer"; kind: PullKind; branch: string; title: string; budget: number; since: string };

/** A pull request the drift calls for: its body is written only once it is compared or opened. */
export type DesiredPull = Omit<PullContent, "body"> & { body: () => string };

/** An action before the budget: an `open` the budget may defer, its body not written yet. */
export type Reconciled = Exclude<Action, { type: "open" }> | ({ type: "open" } & DesiredPull);

/** One proposal of any kind, before its marker, title, body and labels are written. */
export interface Proposal {
  kind: PullKind;
  branch: string;
  /** What the PR is about in words; host text is escaped and capped here. */
  title: string;
  /** What the marker says besides its version, kind and content hash. */
  about: {
    signature: string;
    domain: NonNullable<PullMarker["domain"]>;
    domains?: PullMarker["domains"];
    nodes: string[];
    detected: string;
    ticket?: string;
    /** An accept PR's items (carriedItem), when few enough to list. */
    items?: string[];
  };
  files: Record<string, string | null>;
  /** Labels of this kind of proposal, after the bot's and the configured ones. */
  labels: string[];
  body: Pick<BodyInput, "group" | "reason" | "ticket" | "notes">;
  replaces?: string;
  /** The nodes' owners: each is asked to review and named by an `owner:` label. */
  owners?: string[];
}

/**
 * What a PR changes, apart from where: each file's changed lines with one line of context, without
 * line numbers. A merge elsewhere in the same file leaves it equal, so the branch is not rewritten;
 * a change on or next to those lines (where git would see a conflict) does not.
 */
function ownChanges(
  files: Record<string, string | null>,
  base: ReadonlyMap<string, string>,
): string {
  return JSON.stringify(
    Object.entries(files).map(([file, text]) => {
      const before = base.get(file) ?? "";
      const patch = structuredPatch(file, file, before, text ?? "", undefined, undefined, {
        context: 1,
        maxEditLength: MAX_DIFF_EDITS,
      });
      return [file, patch ? patch.hunks.map((h) => h.lines) : text];
    }),
  );
}

/**
 * The one place a proposal becomes a pull request's content: marker, content hash, title, body,
 * labels. `base`: the manifest files' texts the PR's changes are made on.
 */
export function buildProposal(
  proposal: Proposal,
  configured: readonly string[],
  base: ReadonlyMap<string, string>,
): DesiredPull {
  const { kind, about, files } = proposal;
  const marker: PullMarker = {
    v: MARKER_VERSION,
    kind,
    signature: about.signature,
    domain: about.domain,
    ...(about.domains !== undefined && { domains: about.domains }),
    ...markerNodes(about.nodes),
    detected: about.detected,
    content: hash(ownChanges(files, base), 16),
    ...(about.ticket !== undefined && { ticket: about.ticket }),
    ...(about.items !== undefined && { items: about.items }),
  };
  return {
    kind,
    branch: proposal.branch,
    title: pullTitle(proposal.title),
    body: () => pullBody({ kind, ...proposal.body, marker, files: Object.keys(files) }),
    labels: [
      BOT_LABEL,
      ...configured,
      ...proposal.labels,
      ...(proposal.owners ?? []).map((o) => `owner:${o}`),
    ].map(fitLabel),
    owners: proposal.owners ?? [],
    files,
    marker,
    nodes: about.nodes,
    ...(proposal.replaces !== undefined && { replaces: proposal.replaces }),
    ...(proposal.body.notes?.length && { notes: proposal.body.notes }),
  };
}
