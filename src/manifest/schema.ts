import * as z from "zod";
import { CAUSE_KINDS, type CauseKind } from "../domains/cause.js";
import { SEVERITIES } from "../domains/domain.js";
import { DOMAIN_NAMES, DOMAINS, type DomainName } from "../domains/registry.js";
import { globProblem } from "../glob.js";
import { DURATION, UNAUDITED_SHARE } from "../report/unaudited.js";

// A name or host that ssh could read as an option, or that could split a command line.
const SAFE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.@:%\[\]-]*$/;
export const NodeName = z
  .string()
  .regex(
    SAFE_NAME,
    "must start with a letter, digit or _ and hold no whitespace, control characters or shell/option syntax",
  );

// One jump host or more, comma-separated: `[user@]host[:port]` or an ssh_config alias each, as
// ssh's ProxyJump takes them (unquoted: nothing in it may read as an option or split it).
const WORD = "[A-Za-z0-9_][A-Za-z0-9_.%-]*";
const JUMP = `(?:${WORD}@)?(?:${WORD}|\\[[0-9A-Fa-f:.]+\\])(?::\\d{1,5})?`;
export const PROXY_JUMP = new RegExp(`^${JUMP}(,${JUMP})*$`);

export const SshSettings = z.strictObject({
  user: NodeName.optional(),
  port: z.number().int().min(1).max(65535).optional(),
  identity_file: z.string().min(1).optional(),
  /** ssh's CertificateFile: a certificate signed for the key (short-lived, from an SSH CA). */
  certificate_file: z.string().min(1).optional(),
  /** ssh's IdentityAgent: the agent socket holding the key (else SSH_AUTH_SOCK, as ssh uses it). */
  identity_agent: z.string().min(1).optional(),
  /** Run the probe through `sudo -n` (never prompts; a node where sudo would prompt fails). */
  become: z.enum(["sudo"]).optional(),
  connect_timeout: z.number().int().positive().optional(),
  /** Seconds before the whole node audit is abandoned and its ssh process killed. */
  timeout: z.number().int().positive().optional(),
  /** ssh's ProxyJump: the bastions on the way, in order; an ssh_config ProxyJump works as well. */
  proxy_jump: z
    .string()
    .regex(
      PROXY_JUMP,
      "must be one or more jump hosts ([user@]host[:port] or an ssh_config alias) separated by commas, each starting with a letter, digit or _, with no whitespace, quotes or control characters",
    )
    .optional(),
  /**
   * Sessions started at once through this node's first jump host (or its own sshd without one):
   * kept under the sshd's MaxStartups.
   */
  max_sessions: z.number().int().min(1).max(1000).optional(),
});
export type SshSettings = z.infer<typeof SshSettings>;

/**
 * Builds the nested node-spec shape from the domains' spec paths (system.sysctl_parameters, ...).
 */
function domainShape(): Record<string, z.ZodType> {
  const tree: Record<string, unknown> = {};
  for (const domain of DOMAINS) {
    let level = tree;
    domain.specPath.slice(0, -1).forEach((part) => {
      level = (level[part] ??= {}) as Record<string, unknown>;
    });
    level[domain.specPath.at(-1)!] = domain.schema.optional();
  }
  const build = (level: Record<string, unknown>): Record<string, z.ZodType> =>
    Object.fromEntries(
      Object.entries(level).map(([key, value]) => [
        key,
        value instanceof z.ZodType
          ? value
          : z.strictObject(build(value as Record<string, unknown>)).optional(),
      ]),
    );
  return build(tree);
}

const declaredShape = domainShape();

/** A GitHub user (`alice`) or team (`acme/web-team`), with or without CODEOWNERS' `@`. */
export const Owner = z
  .string()
  .regex(
    /^@?[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\/[A-Za-z0-9._-]+)?$/,
    "must be a GitHub user (alice, @alice) or team (org/team-slug, @org/team-slug)",
  );

export const NodeSpec = z.strictObject({
  $schema: z.string().optional(),
  host: NodeName.optional(),
  groups: z.array(NodeName).optional(),
  /** Who reviews this node's pull requests; a node file's list replaces its groups'. */
  owners: z.array(Owner).optional(),
  ssh: SshSettings.optional(),
  ...declaredShape,
});
export type NodeSpec = z.infer<typeof NodeSpec> & Record<string, unknown>;

export const GroupSpec = NodeSpec.omit({ host: true });

export const LATENT_POLICIES = ["drift", "ticket", "ignore"] as const;

export const ON_DRIFT = ["accept", "ticket"] as const;

/**
 * `on_drift` per cause kind: `{ package: accept, otherwise: ticket }`; a kind it leaves out takes
 * `otherwise`, else the domain's default.
 */
export const OnDriftByCause = z.strictObject({
  ...(Object.fromEntries(CAUSE_KINDS.map((kind) => [kind, z.enum(ON_DRIFT).optional()])) as Record<
    CauseKind,
    z.ZodOptional<z.ZodEnum<{ accept: "accept"; ticket: "ticket" }>>
  >),
  otherwise: z.enum(ON_DRIFT).optional(),
});
export type OnDriftByCause = z.infer<typeof OnDriftByCause>;

export const DomainPolicy = z.strictObject({
  severity: z.enum(SEVERITIES).optional(),
  /** `accept` or `ticket` for every item of the domain, or one per cause kind. */
  on_drift: z
    .union([z.enum(ON_DRIFT), OnDriftByCause], {
      error: `on_drift is accept, ticket, or a map from cause kinds (${CAUSE_KINDS.join(", ")}, otherwise) to accept or ticket`,
    })
    .optional(),
  /**
   * What latent drift (clean now, not after a reboot or restart) yields: `drift` counts as drift
   * (node status, exit bit 1), `ticket` (the default) is reported and ticketed only, `ignore` drops it.
   */
  latent: z.enum(LATENT_POLICIES).optional(),
});
export type DomainPolicy = z.infer<typeof DomainPolicy>;

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * When an `expires` value ends: a date at the end of that day, UTC; a date-time at that instant,
 * read as UTC when it has no offset (never the runner's time zone). NaN when it is no real time.
 */
export function expiryTime(expires: string): number {
  if (expires.length === 10) return Date.parse(`${expires}T23:59:59.999Z`);
  return Date.parse(/(?:Z|[+-]\d{2}:?\d{2})$/.test(expires) ? expires : `${expires}Z`);
}

/** A date that is on the calendar: Date.parse takes 2026-02-30 for March 2nd. */
function isRealDate(text: string): boolean {
  const [year, month, day] = text.slice(0, 10).split("-").map(Number) as [number, number, number];
  const date = new Date(Date.UTC(year, month - 1, day));
  return (
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    !Number.isNaN(expiryTime(text))
  );
}

export const IsoDate = z.union([
  z
    .string()
    .regex(ISO_DATE, "must be a date like 2026-12-31")
    // Asked only of a text shaped like a date: one that is not is told so once.
    .refine(
      (text) => !ISO_DATE.test(text) || isRealDate(text),
      "is not a real date or time (2026-12-31 or 2026-12-31T18:00:00Z)",
    ),
  // An unquoted YAML 1.1 timestamp: a date alone comes as midnight UTC; any other time is kept,
  // never cut to its day (which would extend it by up to a day).
  z.date().transform((d) => {
    const iso = d.toISOString();
    return iso.endsWith("T00:00:00.000Z") ? iso.slice(0, 10) : iso;
  }),
]);

const Glob = z.string().superRefine((glob, ctx) => {
  const problem = globProblem(glob);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

export const Waiver = z.strictObject({
  node: Glob.default("*"),
  domain: Glob.default("*"),
  key: Glob.default("*"),
  /** When set, the waiver holds only while the live value is exactly this. */
  live: z.union([z.string(), z.number(), z.boolean(), z.null()]).optional(),
  reason: z.string().min(1, "say why this drift is waived"),
  expires: IsoDate.optional(),
});
export type Waiver = z.infer<typeof Waiver>;

export const AuditSettings = z.strictObject({
  /**
   * Largest declared file whose contents are sent back for diffing; larger ones compare by hash.
   */
  max_file_bytes: z.number().int().positive().optional(),
  /** Largest probe output accepted from one node. */
  max_output_bytes: z.number().int().positive().optional(),
  /** Marker file that puts a node in maintenance. */
  maintenance_marker: z.string().startsWith("/").optional(),
  /** More nodes than this not audited in a run sets exit bit 8: a number, or a share ("10%"). */
  max_unaudited: z
    .union([
      z.number().int().nonnegative(),
      z.string().regex(UNAUDITED_SHARE, 'a number of nodes or a share such as "10%"'),
    ])
    .optional(),
  /**
   * A node not audited for longer than this sets exit bit 8: "90m", "2d", "1d12h". Unset: a node
   * may miss one run, and sets bit 8 when it misses a second in a row.
   */
  max_unaudited_for: z
    .string()
    .regex(DURATION, 'a duration such as "24h", "90m" or "2d"')
    .optional(),
  /**
   * How often the scheduled audit runs ("24h", "7d"; default 24h): what will change before the
   * next one (a certificate falling under its declared validity) is latent drift now.
   */
  interval: z.string().regex(DURATION, 'a duration such as "24h", "7d" or "90m"').optional(),
});
export type AuditSettings = z.infer<typeof AuditSettings>;

export const ProposeSettings = z.strictObject({
  /**
   * At most this many new pull requests per `propose` run; the rest wait for later runs (default
   * 10).
   */
  max_new_prs: z.number().int().nonnegative().optional(),
});
export type ProposeSettings = z.infer<typeof ProposeSettings>;

export const WaiverPolicy = z.strictObject({
  /** `validate` warns on a waiver expiring later than this many days from now. */
  max_days: z.number().int().positive().optional(),
});

/** `policy`: per domain (severity, on_drift), and for waivers. */
export const Policy = z.strictObject({
  ...(Object.fromEntries(DOMAIN_NAMES.map((name) => [name, DomainPolicy.optional()])) as Record<
    DomainName,
    z.ZodOptional<typeof DomainPolicy>
  >),
  waivers: WaiverPolicy.optional(),
});
export type Policy = z.infer<typeof Policy>;

export const FleetSpec = NodeSpec.omit({ host: true, groups: true }).extend({
  policy: Policy.optional(),
  ignore: z.array(Waiver).optional(),
  audit: AuditSettings.optional(),
  propose: ProposeSettings.optional(),
});
export type FleetSpec = z.infer<typeof FleetSpec>;

export const FLEET_SETTINGS = ["policy", "ignore", "audit", "propose"] as const;
