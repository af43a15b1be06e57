import * as z from "zod";
import { replaceAt, valueAt } from "../../spec-path.js";
import { within, type Domain, type Finding } from "../domain.js";
import { firewallCause, firewallLatentCause, NFT_RULES_FILES } from "./cause.js";
import { compareFirewall, FAMILIES } from "./compare.js";
import { includesProbe } from "./includes.js";
import { LEGACY_FAMILIES } from "./legacy.js";
import { MAX_RULESET_BYTES, parseFirewall, SAVED_RULES, type FirewallLive } from "./parse.js";
import type { Chain, Ruleset } from "./ruleset.js";

/**
 * One rule as `nft list ruleset` prints it, counters' values left out; in a legacy iptables table,
 * as iptables-save prints it after `-A CHAIN`.
 */
const Rule = z
  .string()
  .regex(
    /^[^\n]+$/,
    "a rule on one line, as `nft list ruleset` prints it, like tcp dport 22 accept (in an iptables table, as iptables-save does: -p tcp -m tcp --dport 22 -j ACCEPT)",
  );
/** nft writes a policy in lowercase, iptables in uppercase. */
const NFT_POLICIES = ["accept", "drop"] as const;
const IPTABLES_POLICIES = ["ACCEPT", "DROP"] as const;
const DeclaredChain = z.strictObject({
  /** A base chain's head, as nft prints it: `type filter hook input priority 0`. */
  hook: z.string().optional(),
  policy: z.enum([...NFT_POLICIES, ...IPTABLES_POLICIES]).optional(),
  rules: z.array(Rule).optional(),
});
const DeclaredTable = z.strictObject({
  chains: z.record(z.string(), DeclaredChain).optional(),
  sets: z.record(z.string(), z.array(z.string())).optional(),
});
const LEGACY = new Set<string>(Object.values(LEGACY_FAMILIES));
/** Every file a boot loads rules from: nft's rules files, the saved iptables rules. */
const RULES_FILES = new Set<string>([...NFT_RULES_FILES, ...SAVED_RULES.map((s) => s.file)]);
export const FirewallDeclared = z.record(z.string(), DeclaredTable).superRefine((declared, ctx) => {
  for (const [table, { chains }] of Object.entries(declared)) {
    if (!new RegExp(`^(${FAMILIES.join("|")}) [^\\s]+$`).test(table))
      ctx.addIssue({
        code: "custom",
        path: [table],
        message: `a table as nft names it, its family then its name, like "inet filter", or a legacy iptables table as "iptables filter" (families: ${FAMILIES.join(", ")})`,
      });
    const policies: readonly string[] = LEGACY.has(table.split(" ", 1)[0]!)
      ? IPTABLES_POLICIES
      : NFT_POLICIES;
    for (const [chain, { policy }] of Object.entries(chains ?? {}))
      if (policy !== undefined && !policies.includes(policy))
        ctx.addIssue({
          code: "custom",
          path: [table, "chains", chain, "policy"],
          message: `${policies.join(" or ")}, as ${policies === NFT_POLICIES ? "nft" : "iptables-save"} writes a policy in this table`,
        });
  }
});
export type FirewallDeclared = z.infer<typeof FirewallDeclared>;
type DeclaredChain = z.infer<typeof DeclaredChain>;
type DeclaredTable = z.infer<typeof DeclaredTable>;

/** A live chain as declared: its head and policy when a base chain, its rules when it has any. */
export function chainDeclared(chain: Chain): DeclaredChain {
  return {
    ...(chain.hook !== undefined && { hook: chain.hook }),
    ...(chain.policy !== undefined && { policy: chain.policy as DeclaredChain["policy"] & string }),
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
    "Remove the rule added by hand, or write it into the boot-time rules file (/etc/nftables.conf) and declare it; reload with `nft -f`. For legacy iptables, save it (`netfilter-persistent save`, or `iptables-save` into the saved rules) and declare it.",
  keyPrefixes: FAMILIES.map((family) => `${family} `),
  // The key is the item in nft's (or iptables') words; host text stays in it, quoted by the caller.
  driftSentence(item, key, hosts) {
    const ruleset = `${hosts === "the host" ? "the host's" : "the hosts'"} ruleset`;
    // Only a chain's rule order has a list on both sides.
    if (Array.isArray(item.declared) && Array.isArray(item.live))
      return `${key}: ${ruleset} holds the declared rules in another order, and the kernel applies them top to bottom.`;
    if (item.declared === null)
      return `${key} is in ${ruleset}, and networking.firewall does not declare it.`;
    if (item.live === null)
      return `${key} is declared in networking.firewall, but ${ruleset} does not hold it.`;
    return `${key} in ${ruleset} differs from its declaration in networking.firewall.`;
  },
  declaredWords(item) {
    return item.declared === null ? "not in networking.firewall" : undefined;
  },
  // An undeclared rule's or set element's live value is the key's own text, and an undeclared
  // table's or set's is empty (its chains and elements are items of their own): say where it is.
  // An undeclared chain keeps its hook and policy, which say more.
  liveWords({ declared, live }) {
    if (declared !== null || live === null) return undefined;
    const repeatsKey =
      typeof live === "string" || (typeof live === "object" && Object.keys(live).length === 0);
    return repeatsKey ? "in the running ruleset" : undefined;
  },
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
    // Listing needs root (`become: sudo`). nft lists the kernel's nf_tables (iptables-nft's rules
    // too); legacy iptables tables, which nft cannot see, are listed by iptables-save where
    // /proc/net lists any. The boot-time rules file is loaded by nft itself into a scratch network
    // namespace (`unshare -n`, gone when nft ends) and listed there: what the next boot loads, in
    // nft's own normalization, with the host's ruleset untouched. One nft lists, one loads (a
    // namespace is nft's for its whole life; `nft -c -e` echoes nothing, and a listing after an
    // include under `nft -c -i` is the live ruleset again, the check's batch aborted), and one
    // `head` bounds all; the rest is the shell's own, but a `stat` of included files changed after
    // the rules file. The tools are found by the shell, so `unshare` starts nft without searching
    // PATH, and nothing more is read where a listing failed.
    const unit = (target: string, service: string) =>
      `/etc/systemd/system/${target}.target.wants/${service}`;
    const wants = (service: string) =>
      ["sysinit", "basic", "multi-user"].map((target) => unit(target, service)).join(" ");
    const services = [...new Set(SAVED_RULES.map((s) => s.by))];
    const savedFiles = SAVED_RULES.map((s) => s.file).join(" ");
    const tool = (variable: string, names: string[]) =>
      `${variable}=; for qm_t in ${names.join(" ")}; do for qm_d in /usr/bin /bin /usr/sbin /sbin; do [ -z "$${variable}" ] && [ -x "$qm_d/$qm_t" ] && ${variable}=$qm_d/$qm_t; done; done`;
    const tables = (variable: string, file: string) =>
      `${variable}=; [ -r ${file} ] && IFS= read -r ${variable} < ${file}`;
    const root = "declare ssh: { become: sudo } for this node";
    const legacy = (family: keyof typeof LEGACY_FAMILIES, variable: string, save: string) =>
      `if [ -n "$qm_ok" ] && [ -n "$${variable}" ]; then ${ctx.mark(`legacy ${family}`)}; if [ -z "$${save}" ] || ! "$${save}" 2>/dev/null; then qm_ok=; ${ctx.unknown(`${LEGACY_FAMILIES[family]}-save could not list the legacy ${LEGACY_FAMILIES[family]} tables (listing them needs root: ${root})`)}; fi; fi`;
    return [
      tool("qm_nft", ["nft"]),
      tool("qm_s4", ["iptables-legacy-save", "iptables-save"]),
      tool("qm_s6", ["ip6tables-legacy-save", "ip6tables-save"]),
      tool("qm_xn", ["iptables-nft-save"]),
      tables("qm_v4", "/proc/net/ip_tables_names"),
      tables("qm_v6", "/proc/net/ip6_tables_names"),
      `if [ -z "$qm_nft" ] && [ -e /proc/net/ip_tables_names ] && [ ! -r /proc/net/ip_tables_names ]; then ${ctx.unknown(`the legacy iptables tables cannot be listed: listing them needs root (${root})`)}`,
      // Without nft and legacy tables, iptables-nft may hold rules only nft would list.
      `elif [ -z "$qm_nft$qm_v4$qm_v6" ] && [ -n "$qm_xn" ]; then ${ctx.unknown("nft is not installed: the ruleset, iptables-nft's rules included, cannot be listed")}`,
      `elif [ -z "$qm_nft$qm_s4" ]; then ${ctx.unknown("neither nft nor iptables-save is installed: the ruleset cannot be listed")}`,
      `else {`,
      `qm_ok=1`,
      `if [ -n "$qm_nft" ]; then ${ctx.mark("live")}; "$qm_nft" -j list ruleset 2>/dev/null || { qm_ok=; ${ctx.unknown(`nft could not list the ruleset: listing it needs root (${root})`)}; }; fi`,
      legacy("ip", "qm_v4", "qm_s4"),
      legacy("ip6", "qm_v6", "qm_s6"),
      // The saved iptables rules count for legacy tables, and where there is no nft.
      `qm_saved=; for f in ${savedFiles}; do [ -e "$f" ] && qm_saved=1; done`,
      // Which services restore them at boot on the first line, then the files, each line `FILE:…`.
      `if [ -n "$qm_ok" ] && { [ -n "$qm_v4$qm_v6" ] || [ -z "$qm_nft" ]; }; then ${ctx.mark("legacy-boot")}`,
      `qm_by=; for qm_t in ${services.join(" ")}; do qm_e=; for f in ${wants("$qm_t")}; do [ -e "$f" ] && qm_e=1; done; [ -n "$qm_e" ] && qm_by="$qm_by $qm_t"; done`,
      `printf '%s\\n' "$qm_by"; [ -z "$qm_by" ] || [ -z "$qm_saved" ] || grep -H -s '' ${savedFiles}; fi`,
      `if [ -z "$qm_ok" ] || [ -z "$qm_nft" ]; then :`,
      `else qm_f=; for f in ${NFT_RULES_FILES.join(" ")}; do [ -z "$qm_f" ] && [ -e "$f" ] && qm_f=$f; done`,
      `qm_on=; for f in ${wants("nftables.service")}; do [ -e "$f" ] && qm_on=1; done`,
      `if [ -n "$qm_saved" ] && [ -z "$qm_v4$qm_v6" ]; then ${ctx.mark("boot-unknown the boot may also restore saved iptables rules through iptables-nft, which are not read")}`,
      `elif [ -z "$qm_on" ]; then ${ctx.mark("boot-none nftables.service is not enabled: the next boot loads no rules")}`,
      `elif [ -z "$qm_f" ]; then ${ctx.mark("boot-none no /etc/nftables.conf: the next boot loads no rules")}`,
      `elif ! command -v unshare >/dev/null 2>&1; then ${ctx.mark("boot-unknown no unshare to read the rules file in a scratch network namespace")}`,
      // nft's interactive mode commits each line on its own, so the listing after the include is
      // what the file leaves, its deletes and flushes done (`-e` echoes only what it adds). HOME
      // names no folder: nft -i would write its history file there. A quoted here-document per
      // rules file: dash forks to expand one that is not.
      // What it includes first: nft, last, then takes the place of the section's shell.
      "else",
      ...includesProbe(ctx.mark),
      `${ctx.mark("boot")}; printf '%s\\n' "$qm_f"; case $qm_f in`,
      ...NFT_RULES_FILES.flatMap((file, i) => [
        `${file}) HOME=/dev/null unshare -n "$qm_nft" -j -i 2>&1 <<'QM_FW_${i}'`,
        `include "${file}"`,
        "list ruleset",
        `QM_FW_${i}`,
        ";;",
      ]),
      "esac",
      "fi; fi",
      `} | head -c ${MAX_RULESET_BYTES + 1}; fi`,
    ].join("\n");
  },
  parse(output, ctx) {
    return parseFirewall(output, ctx);
  },
  compare(declared, live) {
    return compareFirewall(this, declared, live);
  },
  records(declared) {
    // The rules files' mtimes: one `stat` the cause section shares with every domain; and the
    // package runs since the last audit (`steps`: dpkg's configure steps and apt's runs, read by the
    // log pass the section makes anyway), whose times tell a change a package made. Not which
    // package ships them (a `files` request): that pass over dpkg's status and logs, md5sum
    // included, tripled the cause section's processes for a cause rarely seen (an upgrade
    // replacing an unmodified nftables.conf).
    const tables = Object.keys(declared).map((table) => table.split(" ", 1)[0]!);
    return {
      steps: true,
      stat: [
        ...(tables.some((family) => !LEGACY.has(family))
          ? [
              { under: "/etc", entries: ["nftables.conf"] },
              { under: "/etc/sysconfig", entries: ["nftables.conf"] },
            ]
          : []),
        ...(tables.some((family) => LEGACY.has(family))
          ? [
              { under: "/etc/iptables", entries: ["rules.v4", "rules.v6"] },
              { under: "/etc/sysconfig", entries: ["iptables", "ip6tables"] },
            ]
          : []),
      ],
    };
  },
  cause(item, record, ctx) {
    return firewallCause(item, record, ctx, RULES_FILES);
  },
  latentCause(item, record, ctx) {
    return firewallLatentCause(item, record, ctx, RULES_FILES);
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
