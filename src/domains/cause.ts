import { createHash } from "../crypto.js";
import * as z from "zod";
import { Json } from "./json.js";

// The cause and latent-drift shapes a finding may carry, shared by the domains (which know some
// causes themselves: a sysctl set by a persisted file) and the report (schema.ts re-uses them).

/**
 * Why a drift happened, as the host recorded it since the node's last audit (or the manifest's own
 * history, for a rollout). `unknown` is honest: a wrong cause is worse than none.
 */
export const CAUSE_KINDS = [
  "package",
  "package-file",
  "file-edit",
  "runtime",
  "persisted",
  "reboot",
  "rollout",
  "unknown",
] as const;
export type CauseKind = (typeof CAUSE_KINDS)[number];

export const Cause = z.object({
  kind: z.enum(CAUSE_KINDS),
  /** When it happened, as the host (or the manifest's commit) recorded it; absent for `unknown`. */
  at: z.iso.datetime({ offset: true }).optional(),
  /** Who or what made the change: "unattended-upgrades", "apt-get (alice)", a commit's author. */
  by: z.string().optional(),
  /**
   * One line a reviewer reads: "postgresql-16 16.4-1 → 16.6-1", "/etc/sysctl.d/99-net.conf:3 sets
   * 8192".
   */
  evidence: z.string(),
  /**
   * The cause's identity, the same on every node and domain it touched (one package transaction,
   * one persisted file): the key that makes its items one pull request. Absent for `unknown`.
   */
  group: z.string().optional(),
  /** `rollout`: the manifest commit that changed the declared value. */
  commit: z.string().optional(),
});
export type Cause = z.infer<typeof Cause>;

/** The most characters of a cause's host-made fields a report keeps: a line, not a log. */
export const MAX_CAUSE_CHARS = { group: 1000, by: 200, evidence: 1000 } as const;

/** `text` cut to `chars` characters, saying how many more there were (never half a character pair). */
function cut(text: string, chars: number, tail = ""): string {
  if (text.length <= chars) return text;
  const note = `… (${text.length} characters${tail})`;
  let end = Math.max(0, chars - note.length);
  if (/[\uD800-\uDBFF]/.test(text[end - 1] ?? "")) end--;
  return `${text.slice(0, end)}${note}`;
}

/**
 * The cause with its host-made fields bounded, whatever the host sent: a cut group keeps its
 * identity by the digest of the whole, so two causes are one group only if their whole groups are.
 */
export function boundedCause(cause: Cause): Cause {
  const { group, by, evidence } = cause;
  const digest = (text: string) =>
    `, sha256 ${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
  return {
    ...cause,
    evidence: cut(evidence, MAX_CAUSE_CHARS.evidence),
    ...(by !== undefined && { by: cut(by, MAX_CAUSE_CHARS.by) }),
    ...(group !== undefined && {
      group:
        group.length > MAX_CAUSE_CHARS.group
          ? cut(group, MAX_CAUSE_CHARS.group, digest(group))
          : group,
    }),
  };
}

export const LATENT_EVENTS = ["reboot", "restart", "daemon-reload", "expiry"] as const;
export type LatentEvent = (typeof LATENT_EVENTS)[number];

/** Declared state that holds now and will not after `after`: the value it will then take. */
export const Latent = z.object({
  after: z.enum(LATENT_EVENTS),
  becomes: Json,
  /** What will change it: "/etc/sysctl.d/99-old.conf:3", "linux-image-6.1.0-29-amd64 installed". */
  because: z.string(),
});
export type Latent = z.infer<typeof Latent>;
