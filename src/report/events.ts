// One event shape for `--format events` and for the on-node watch mode, so log and telemetry
// pipelines parse both with the same schema.
import * as z from "zod";
import { SEVERITIES } from "../domains/domain.js";
import { DOMAIN_NAMES } from "../domains/registry.js";
import { DriftItem, type NodeResult } from "./schema.js";

const NodeFields = {
  /** ISO 8601: the audit's finish time, or the moment watch mode saw the change. */
  time: z.iso.datetime({ offset: true }),
  node: z.string(),
  host: z.string(),
};

export const DriftEvent = z.object({
  event: z.literal("drift"),
  ...NodeFields,
  domain: z.enum(DOMAIN_NAMES),
  key: z.string(),
  declared: DriftItem.shape.declared,
  live: DriftItem.shape.live,
  severity: z.enum(SEVERITIES),
  fingerprint: DriftItem.shape.fingerprint,
  source: DriftItem.shape.source,
  acknowledged: z.literal(true).optional(),
});
export type DriftEvent = z.infer<typeof DriftEvent>;

/** Watch mode: drift seen earlier is gone (the host was fixed or the manifest accepted it). */
export const ResolvedEvent = z.object({
  event: z.literal("resolved"),
  ...NodeFields,
  domain: z.enum(DOMAIN_NAMES),
  key: z.string(),
  severity: z.enum(SEVERITIES),
  fingerprint: DriftItem.shape.fingerprint,
});
export type ResolvedEvent = z.infer<typeof ResolvedEvent>;

/** The node could not be audited; `status` says whether it was unreachable or failed. */
export const NodeErrorEvent = z.object({
  event: z.literal("node_error"),
  ...NodeFields,
  status: z.enum(["unreachable", "error"]),
  error: z.string(),
});
export type NodeErrorEvent = z.infer<typeof NodeErrorEvent>;

/** Watch mode began monitoring against this manifest revision. */
export const StartedEvent = z.object({
  event: z.literal("started"),
  ...NodeFields,
  manifestRevision: z.string().nullable(),
});
export type StartedEvent = z.infer<typeof StartedEvent>;

/**
 * Watch mode stopped: a signal, or paused for maintenance (no drift is reported while a node is
 * being updated).
 */
export const StoppedEvent = z.object({
  event: z.literal("stopped"),
  ...NodeFields,
  reason: z.string(),
});
export type StoppedEvent = z.infer<typeof StoppedEvent>;

export const Event = z.discriminatedUnion("event", [
  DriftEvent,
  ResolvedEvent,
  NodeErrorEvent,
  StartedEvent,
  StoppedEvent,
]);
export type Event = z.infer<typeof Event>;

type NodeIdentity = Pick<NodeResult, "name" | "host">;

export function driftEvent(node: NodeIdentity, item: DriftItem, time: string): DriftEvent {
  return {
    event: "drift",
    time,
    node: node.name,
    host: node.host,
    domain: item.domain,
    key: item.key,
    declared: item.declared,
    live: item.live,
    severity: item.severity,
    fingerprint: item.fingerprint,
    source: item.source,
    ...(item.acknowledged ? { acknowledged: true as const } : {}),
  };
}

export function nodeErrorEvent(
  node: NodeIdentity & Pick<NodeResult, "error">,
  status: NodeErrorEvent["status"],
  time: string,
): NodeErrorEvent {
  return {
    event: "node_error",
    time,
    node: node.name,
    host: node.host,
    status,
    error: node.error ?? `node ${status}, no message recorded`,
  };
}
