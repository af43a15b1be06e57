import * as z from "zod";
import { Json, SEVERITIES } from "../domains/domain.js";
import { Cause, Latent } from "../domains/cause.js";
import { Holder } from "../domains/holder.js";
import { DOMAIN_NAMES } from "../domains/registry.js";
import { SSH_FAILURE_CLASSES } from "../errors.js";
import { MAX_SHARDS, SCHEMA_VERSION } from "./version.js";

export const DriftItem = z.object({
  domain: z.enum(DOMAIN_NAMES),
  key: z.string(),
  declared: Json,
  live: Json,
  severity: z.enum(SEVERITIES),
  fingerprint: z.string().regex(/^[0-9a-f]{16}$/),
  source: z.object({ file: z.string(), line: z.number().int().nonnegative() }),
  remediation: z.string(),
  /** A merged remediation ticket or a waiver covers this drift: reported, no new PR. */
  acknowledged: z.boolean().optional(),
  /** Why it is acknowledged: the ticket id or the waiver's reason. */
  acknowledgedBy: z.string().optional(),
  /**
   * Why this drift is back although something covered it: "waiver expired 2026-11-30: reason", or
   * "ticket X past due since 2026-11-30". Never set on acknowledged drift.
   */
  lapsed: z.string().optional(),
  onDrift: z.enum(["accept", "ticket"]),
  /** Where the declared value sits in the effective node spec. */
  path: z.array(z.union([z.string(), z.number()])),
  detail: z.string().optional(),
  /**
   * Unified `-want +got` diff, present only when `live` is the live text itself: an accept PR
   * writes that text.
   */
  diff: z.string().optional(),
  /**
   * When this drift (by fingerprint) was first seen, as kept across runs on the bot's state branch;
   * absent when the audit had no state to read.
   */
  firstSeen: z.iso.datetime({ offset: true }).optional(),
  /** Why it drifted (issue: cause): set on every item an audit finds. */
  cause: Cause.optional(),
  /** Holds now, will not after an event (issue: latent drift). */
  latent: Latent.optional(),
  /**
   * Who holds what drifted: an unauthorized listener's processes (pid, name) and the user owning
   * its socket, as far as the audit user may read them; a holder without a pid is a socket whose
   * process the audit user may not read (another user's, without `become: sudo`).
   */
  holders: z.array(Holder).optional(),
  /**
   * On latent-only items (declared equals live now): `policy.latent`. `ticket` items are reported
   * and ticketed but leave the node clean and the exit code alone; `drift` items count as drift.
   */
  latentPolicy: z.enum(["drift", "ticket"]).optional(),
});
export type DriftItem = z.infer<typeof DriftItem>;

export const NODE_STATUSES = ["clean", "drift", "unreachable", "error", "maintenance"] as const;
export type NodeStatus = (typeof NODE_STATUSES)[number];

export const NodeResult = z.object({
  name: z.string(),
  host: z.string(),
  status: z.enum(NODE_STATUSES),
  error: z.string().optional(),
  /** Why ssh could not connect, from ssh's own words (the `error` is its line). */
  errorClass: z.enum(SSH_FAILURE_CLASSES).optional(),
  /** At most a day: an audit's own timeout ends it long before. */
  durationMs: z.number().nonnegative().max(86_400_000),
  drift: z.array(DriftItem),
  /** Domains the host could not show, with the host's reason: never drift. */
  unknown: z.array(z.object({ domain: z.enum(DOMAIN_NAMES), reason: z.string() })).optional(),
  /**
   * What the audit compared: declared items, and the domains they are in (wholly unknown domains
   * left out).
   */
  checked: z
    .object({ items: z.number().int().nonnegative(), domains: z.number().int().nonnegative() })
    .optional(),
  /**
   * Set when the audit keeps a history: a short hash of each declared value at its spec path,
   * joined, so that the next audit can tell a pending rollout (src/audit/cause/rollout.ts).
   */
  declared: z
    .string()
    .regex(/^(?:[A-Za-z0-9_-]{8})*$/, "8-character prints")
    .optional(),
  /** Bytes of probe output received from the node. */
  probeBytes: z.number().int().nonnegative().optional(),
  /** SSH connection attempts it took (transient failures are retried), absent for `--local`. */
  tries: z.number().int().positive().optional(),
  /**
   * Set on a node not audited in this run, from the state kept across runs: not audited since
   * `since` (its last successful audit, or when it was first tried if `never`), for `runs` runs.
   */
  unaudited: z
    .object({
      since: z.iso.datetime({ offset: true }),
      runs: z.number().int().positive(),
      never: z.literal(true).optional(),
    })
    .optional(),
});
export type NodeResult = z.infer<typeof NodeResult>;

export const Summary = z.object({
  nodes: z.number().int(),
  clean: z.number().int(),
  drifted: z.number().int(),
  unreachable: z.number().int(),
  errors: z.number().int(),
  maintenance: z.number().int(),
  /** Items that are not latent-only and not acknowledged: what drifted now and is not yet decided. */
  driftItems: z.number().int(),
  /**
   * Items that are not latent-only and are acknowledged (a waiver, an open ticket), apart from
   * `driftItems`; absent from reports written before it was counted.
   */
  acknowledgedItems: z.number().int().default(0),
  /**
   * Latent-only items (live as declared; the next boot, restart or daemon-reload changes them),
   * apart from `driftItems`; absent from reports written before it was counted.
   */
  latentItems: z.number().int().default(0),
});
export type Summary = z.infer<typeof Summary>;

export const Report = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  startedAt: z.iso.datetime({ offset: true }),
  finishedAt: z.iso.datetime({ offset: true }),
  /** The manifests' git commit (SHA-1 or SHA-256), when they are in a repository. */
  manifestRevision: z
    .string()
    .regex(/^([0-9a-f]{40}|[0-9a-f]{64})$/, "a git commit id")
    .nullable(),
  /**
   * Set when the manifests audited had uncommitted changes: manifestRevision is not all of what was
   * checked.
   */
  manifestDirty: z.literal(true).optional(),
  /** The domains this run audited (`--category`); absent when every declared domain was audited. */
  categories: z.array(z.enum(DOMAIN_NAMES)).optional(),
  /** Set on a shard's report: which slice of the fleet it covers. */
  shard: z
    .object({
      index: z.number().int().positive(),
      count: z.number().int().positive().max(MAX_SHARDS),
    })
    .refine((s) => s.index <= s.count, "shard index past the shard count")
    .optional(),
  /**
   * The unaudited budget this run was judged against (`--max-unaudited`, `audit.max_unaudited`,
   * `audit.max_unaudited_for`), and, when it was exceeded, why: `over` sets exit bit 8.
   */
  unauditedBudget: z
    .object({
      maxUnaudited: z.union([z.number().int().nonnegative(), z.string()]).optional(),
      /** Unset: the default, one missed run of grace. */
      maxUnauditedFor: z.string().optional(),
      over: z.array(z.string()).min(1).optional(),
    })
    .optional(),
  nodes: z.array(NodeResult),
  summary: Summary,
});
export type Report = z.infer<typeof Report>;
