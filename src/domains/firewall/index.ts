import * as z from "zod";
import { replaceAt, valueAt } from "../../spec-path.js";
import { within, type Domain, type Finding } from "../domain.js";
import { compareFirewall, FAMILIES } from "./compare.js";
import { parseFirewall, type Chain, type FirewallLive, type Ruleset } from "./parse.js";

/** One rule as `nft list ruleset` prints it, counters' values left out. */
const Rule = z
  .string()
  .regex(
    /^[^\n]+$/,
    "a rule on one line, as `nft list ruleset` prints it, like tcp dport 22 accept",
  );
const DeclaredChain = z.strictObject({
  /** A base chain's head, as nft prints it: `type filter hook input priority 0`. */
  hook: z.string().optional(),
  policy: z.enum(["accept", "drop"]).optional(),
  rules: z.array(Rule).optional(),
});
const DeclaredTable = z.strictObject({
  chains: z.record(z.string(), DeclaredChain).optional(),
  sets: z.record(z.string(), z.array(z.string())).optional(),
});
export const FirewallDeclared = z.record(z.string(), DeclaredTable).superRefine((declared, ctx) => {
  for (const table of Object.keys(declared))
    if (!new RegExp(`^(${FAMILIES.join("|")}) [^\\s]+$`).test(table))
      ctx.addIssue({
        code: "custom",
        path: [table],
        message: `a table as nft names it, its family then its name, like "inet filter" (families: ${FAMILIES.join(", ")})`,
      });
});
export type FirewallDeclared = z.infer<typeof FirewallDeclared>;
type DeclaredChain = z.infer<typeof DeclaredChain>;
type DeclaredTable = z.infer<typeof DeclaredTable>;

/** The most bytes of `nft -j` output a host sends: a flood of rules is cut there, never sent whole. */
export const MAX_RULESET_BYTES = 8 * 1024 * 1024;

/** A live chain as declared: its head and policy when a base chain, its rules when it has any. */
export function chainDeclared(chain: Chain): DeclaredChain {
  return {
    ...(chain.hook !== undefined && { hook: chain.hook }),
    ...(chain.policy !== undefined && { policy: chain.policy as "accept" | "drop" }),
    ...(chain.rules.length > 0 && { rules: [...chain.rules] }),
  };
}

// Object.fromEntries defines each key, so a host's `__proto__` stays a table, chain or set name.
export function rulesetDeclared(ruleset: Ruleset): FirewallDeclared {
  return Object.fromEntries(
    [...ruleset].map(([name, table]): [string, DeclaredTable] => {
      const declared: DeclaredTable = {};
      if (table.chains.size)
        declared.chains = Object.fromEntries(
          [...table.chains].map(([c, chain]) => [c, chainDeclared(chain)]),
        );
      if (table.sets.size)
        declared.sets = Object.fromEntries([...table.sets].map(([s, elems]) => [s, [...elems]]));
      return [name, declared];
    }),
  );
}

/** One list in the declaration with one finding's item put in or taken out. */
function listAccepted(
  list: readonly string[],
  finding: Finding,
  at: number,
  ordered: boolean,
): string[] {
  const next = [...list];
  if (finding.live === null) {
    const gone = next[at] === finding.declared ? at : next.lastIndexOf(finding.declared as string);
    if (gone !== -1) next.splice(gone, 1);
  } else if (ordered) next.splice(Math.min(at, next.length), 0, finding.live as string);
  else if (!next.includes(finding.live as string)) next.push(finding.live as string);
  return next;
}

export const firewall: Domain<FirewallDeclared, FirewallLive, "firewall"> = {
  name: "firewall",
  specPath: ["networking", "firewall"],
  schema: FirewallDeclared,
  severity: "high",
  onDrift: "ticket",
  itemsAreASet: true,
  remediation:
    "Remove the rule added by hand, or write it into the boot-time rules file (/etc/nftables.conf) and declare it; reload with `nft -f`.",
  keyPrefixes: FAMILIES.map((family) => `${family} `),
  latentWords: {
    sentence(item, quote) {
      const { becomes, because } = item.latent;
      if (becomes === null) return `the next boot drops ${quote(item.key)} (${quote(because)})`;
      if (typeof becomes === "string" && item.live === null && item.declared !== null)
        return `the next boot loads ${quote(becomes)} again (${quote(because)})`;
      if (typeof becomes === "string" && item.live === null)
        return `the next boot loads ${quote(item.key)} (${quote(because)})`;
      return undefined;
    },
    remediation: {
      reboot:
        "Write the live rules into the boot-time rules file (`nft list ruleset` shows them) or remove them at runtime, so the next boot loads what the manifest declares.",
    },
  },
  probe(_declared, ctx) {
    // Listing the ruleset needs root (`become: sudo`). The boot-time rules file is loaded by nft
    // itself into a scratch network namespace (`unshare -n`, gone when nft ends) and echoed: what
    // the next boot loads, in nft's own normalization, with the host's ruleset untouched. One nft
    // lists, one loads (a namespace is nft's for its whole life, and `nft -c` echoes nothing), and
    // one `head` bounds both; everything else is the shell's own. nft is found by the shell, so
    // `unshare` starts it without searching PATH, and the boot file is not read where the listing
    // failed.
    const unit = (target: string) => `/etc/systemd/system/${target}.wants/nftables.service`;
    const saved = ["/etc/iptables/rules.v4", "/etc/iptables/rules.v6", "/etc/sysconfig/iptables"];
    return [
      `qm_nft=; for qm_d in /usr/bin /bin /usr/sbin /sbin; do [ -z "$qm_nft" ] && [ -x "$qm_d/nft" ] && qm_nft=$qm_d/nft; done`,
      `if [ -z "$qm_nft" ]; then ${ctx.unknown("nft is not installed: the ruleset cannot be listed")}`,
      `else {`,
      ctx.mark("live"),
      `if ! "$qm_nft" -j list ruleset 2>/dev/null; then ${ctx.unknown("nft could not list the ruleset: listing it needs root (declare ssh: { become: sudo } for this node)")}`,
      `else qm_f=; for f in /etc/sysconfig/nftables.conf /etc/nftables.conf; do [ -z "$qm_f" ] && [ -e "$f" ] && qm_f=$f; done`,
      `qm_on=; for f in ${unit("sysinit.target")} ${unit("multi-user.target")}; do [ -e "$f" ] && qm_on=1; done`,
      `qm_saved=; for f in ${saved.join(" ")}; do [ -e "$f" ] && qm_saved=$f; done`,
      `if [ -n "$qm_saved" ]; then ${ctx.mark("boot-unknown the boot may also restore saved iptables rules, which are not read")}`,
      `elif [ -z "$qm_on" ]; then ${ctx.mark("boot-none nftables.service is not enabled: the next boot loads no rules")}`,
      `elif [ -z "$qm_f" ]; then ${ctx.mark("boot-none no /etc/nftables.conf: the next boot loads no rules")}`,
      `elif ! command -v unshare >/dev/null 2>&1; then ${ctx.mark("boot-unknown no unshare to read the rules file in a scratch network namespace")}`,
      `else ${ctx.mark("boot")}; printf '%s\\n' "$qm_f"; unshare -n "$qm_nft" -j -e -f "$qm_f" 2>&1; fi; fi`,
      `} | head -c ${MAX_RULESET_BYTES + 1}; fi`,
    ].join("\n");
  },
  parse(output, ctx) {
    return parseFirewall(output, ctx);
  },
  compare(declared, live) {
    return compareFirewall(this, declared, live);
  },
  accept(declared, finding) {
    const at = within(this, finding.path);
    const [table, kind, name, field, index] = at as [string, string?, string?, string?, number?];
    // A rule goes in at its live place, or out from its declared one; a set element joins or
    // leaves its set; everything else (a table, a chain, a policy, a rule order) takes its live
    // value, or goes when it has none.
    if (kind === "chains" && field === "rules" && typeof index === "number") {
      const rules = (valueAt(declared, [table, kind, name!, "rules"]) ?? []) as string[];
      const next = listAccepted(rules, finding, index, true);
      return replaceAt(
        declared,
        [table, kind, name!, "rules"],
        next.length ? next : undefined,
      ) as FirewallDeclared;
    }
    if (kind === "sets" && typeof field === "number") {
      const elements = (valueAt(declared, [table, kind, name!]) ?? []) as string[];
      return replaceAt(
        declared,
        [table, kind, name!],
        listAccepted(elements, finding, field, false),
      ) as FirewallDeclared;
    }
    return replaceAt(
      declared,
      at,
      finding.live === null ? undefined : finding.live,
    ) as FirewallDeclared;
  },
  snapshot(live) {
    return rulesetDeclared(live.ruleset);
  },
};
