// Legacy iptables (the x_tables of `iptables-legacy`, which nft cannot list) in iptables' own words:
// `iptables-save` output, and the saved rules a boot restores (iptables-persistent's rules.v4 and
// rules.v6, iptables-services' /etc/sysconfig/iptables), which are iptables-save output too. A table
// is keyed `iptables filter` or `ip6tables nat`, a chain's policy is `ACCEPT` or `DROP`, a rule is
// its `-A CHAIN` line without that head: `-p tcp -m tcp --dport 22 -j ACCEPT`.
import { ProbeParseError } from "../../errors.js";
import { bounded, chainOf, tableIn, type Ruleset, type Table } from "./ruleset.js";

/** The table-key family of each iptables address family, as the probe's marks name them. */
export const LEGACY_FAMILIES = { ip: "iptables", ip6: "ip6tables" } as const;
export type LegacyFamily = keyof typeof LEGACY_FAMILIES;

/** iptables-save's lines read: the tables, or the first line it cannot have written. */
export interface LegacyListing {
  /** A table was not closed by `COMMIT`: the text was cut. */
  cut: boolean;
  /** A line iptables-save does not write (a saved file written by hand), else undefined. */
  foreign?: string;
}

/**
 * `iptables-save` (or a saved rules file) of one address family into `ruleset`, one pass over the
 * lines; an overlong rule keeps its digest, as nft's do.
 */
export function parseIptablesSave(
  text: string,
  family: LegacyFamily,
  ruleset: Ruleset,
): LegacyListing {
  let table: Table | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line === "" || line.startsWith("#")) continue;
    if (line.startsWith("*")) {
      if (table) return { cut: false, foreign: line };
      table = tableIn(ruleset, `${LEGACY_FAMILIES[family]} ${line.slice(1)}`);
    } else if (line === "COMMIT" && table) table = undefined;
    else if (line.startsWith(":") && table) {
      const [name = "", policy] = line.slice(1).split(" ", 2);
      const chain = chainOf(table, name);
      if (policy !== undefined && policy !== "-") chain.policy = policy;
    } else if (line.startsWith("-A ") && table) {
      const space = line.indexOf(" ", 3);
      const name = space === -1 ? line.slice(3) : line.slice(3, space);
      chainOf(table, name).rules.push(bounded(space === -1 ? "" : line.slice(space + 1)));
    } else return { cut: false, foreign: line };
  }
  return { cut: table !== undefined };
}

/** The live listing of one family: iptables-save wrote it, so any other line is a broken answer. */
export function parseLegacyLive(text: string, family: LegacyFamily, ruleset: Ruleset): boolean {
  const listing = parseIptablesSave(text, family, ruleset);
  if (listing.foreign !== undefined)
    throw new ProbeParseError(
      "firewall",
      `a line iptables-save does not write: ${JSON.stringify(listing.foreign.slice(0, 80))}`,
    );
  return listing.cut;
}
