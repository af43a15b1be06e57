import { createHash } from "../../crypto.js";

/** A chain as the kernel holds it: a base chain's head and policy, its rules in order. */
export interface Chain {
  hook?: string;
  policy?: string;
  rules: string[];
}

/** A table (`inet filter`, `iptables filter`): its chains and named sets, in listing order. */
export interface Table {
  chains: Map<string, Chain>;
  sets: Map<string, string[]>;
}

/** Tables by `family name`. */
export type Ruleset = Map<string, Table>;

/** The most characters of one rule, set or element kept as is; a longer one keeps its digest. */
export const MAX_WORDS = 4096;

export function bounded(words: string): string {
  if (words.length <= MAX_WORDS) return words;
  const digest = createHash("sha256").update(words).digest("hex").slice(0, 32);
  return `${words.slice(0, MAX_WORDS - 100)}… (${words.length} characters, sha256 ${digest})`;
}

/** The table `id` of `ruleset`, made on first sight. */
export function tableIn(ruleset: Ruleset, id: string): Table {
  let table = ruleset.get(id);
  if (!table) ruleset.set(id, (table = { chains: new Map(), sets: new Map() }));
  return table;
}

export function chainOf(table: Table, chain: string): Chain {
  let found = table.chains.get(chain);
  if (!found) table.chains.set(chain, (found = { rules: [] }));
  return found;
}
