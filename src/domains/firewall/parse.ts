import { createHash } from "node:crypto";
import { ProbeParseError } from "../../errors.js";
import type { ParseContext } from "../domain.js";
import { hookWords, quoted, ruleWords, value } from "./words.js";

/** A chain as nft holds it: a base chain's head and policy, its rules in nft's words, in order. */
export interface Chain {
  hook?: string;
  policy?: string;
  rules: string[];
}

/** A table (`inet filter`): its chains and named sets, in the order nft lists them. */
export interface Table {
  chains: Map<string, Chain>;
  sets: Map<string, string[]>;
}

/** Tables by `family name`. */
export type Ruleset = Map<string, Table>;

/** What the next boot loads: the ruleset and where it comes from (a file, or why nothing). */
export interface Boot {
  ruleset: Ruleset;
  /** The rules file, or why the boot loads nothing. */
  from: string;
  /** The rules file the ruleset comes from. */
  file?: string;
}

export interface FirewallLive {
  ruleset: Ruleset;
  /** The host cut the listing at the probe's bound: what it did not send is unknown, never gone. */
  cut: boolean;
  /** Undefined where the probe could not tell what the next boot loads (said in `unknown`). */
  boot?: Boot;
  unknown: string[];
}

/** The most characters of one rule, set or element kept as is; a longer one keeps its digest. */
export const MAX_WORDS = 4096;

function bounded(words: string): string {
  if (words.length <= MAX_WORDS) return words;
  const digest = createHash("sha256").update(words).digest("hex").slice(0, 32);
  return `${words.slice(0, MAX_WORDS - 100)}… (${words.length} characters, sha256 ${digest})`;
}

/**
 * The objects of nft's `{"nftables": [...]}` one by one, in one pass over the text: each element is
 * parsed on its own, so a listing the host cut at the probe's bound still gives what came before
 * the cut.
 */
function elements(text: string, what: string): { items: unknown[]; cut: boolean } {
  const start = /^\s*\{\s*"nftables"\s*:\s*\[/.exec(text);
  if (!start) throw new ProbeParseError("firewall", `${what} is not nft's JSON`);
  const items: unknown[] = [];
  let depth = 0;
  let begin = -1;
  let inString = false;
  for (let i = start[0].length; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (depth++ === 0) begin = i;
    } else if (c === 0x7d || c === 0x5d) {
      if (depth === 0) return { items, cut: false };
      if (--depth === 0) items.push(parseElement(text.slice(begin, i + 1), what));
    }
  }
  return { items, cut: true };
}

function parseElement(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ProbeParseError("firewall", `${what} holds an element that is not JSON`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const name = (v: unknown, what: string): string => {
  if (typeof v !== "string") throw new ProbeParseError("firewall", `${what} without a name`);
  return v;
};

/** The table an object belongs to, made on first sight (nft lists a table before its contents). */
function tableOf(ruleset: Ruleset, body: Record<string, unknown>, key = "table"): Table {
  const id = `${name(body.family, "an object")} ${name(body[key], "an object")}`;
  let table = ruleset.get(id);
  if (!table) ruleset.set(id, (table = { chains: new Map(), sets: new Map() }));
  return table;
}

function chainOf(table: Table, chain: string): Chain {
  let found = table.chains.get(chain);
  if (!found) table.chains.set(chain, (found = { rules: [] }));
  return found;
}

/** A set's elements in nft's words (nft -e echoes them as one set each); interface names quoted. */
function setElements(body: Record<string, unknown>, type: unknown): string[] {
  const elem = isObject(body.elem) && Array.isArray(body.elem.set) ? body.elem.set : body.elem;
  if (!Array.isArray(elem)) return [];
  return elem.map((each) => bounded(value(each, type === "ifname")));
}

/**
 * One listed (or, with `nft -e`, added) object into the ruleset; anything else (maps, flowtables,
 * stateful objects) is left out. `types` keeps each set's type for the elements added to it later.
 */
function add(ruleset: Ruleset, types: Map<string, unknown>, kind: string, body: unknown): void {
  if (!isObject(body)) return;
  if (kind === "table") tableOf(ruleset, body, "name");
  else if (kind === "chain") {
    const chain = chainOf(tableOf(ruleset, body), name(body.name, "a chain"));
    const hook = hookWords(body);
    if (hook !== undefined) chain.hook = bounded(hook);
    if (typeof body.policy === "string") chain.policy = body.policy;
  } else if (kind === "rule") {
    const chain = chainOf(tableOf(ruleset, body), name(body.chain, "a rule"));
    chain.rules.push(bounded(ruleWords(body.expr, body.comment)));
  } else if (kind === "set" || kind === "element") {
    const sets = tableOf(ruleset, body).sets;
    const set = name(body.name, `a ${kind}`);
    const id = `${String(body.family)} ${String(body.table)} ${set}`;
    if (kind === "set") types.set(id, body.type);
    sets.set(set, [...(sets.get(set) ?? []), ...setElements(body, types.get(id))]);
  }
}

function one(item: unknown): [string, unknown] | undefined {
  if (!isObject(item)) return undefined;
  const keys = Object.keys(item);
  return keys.length === 1 ? [keys[0]!, item[keys[0]!]] : undefined;
}

/** `nft -j list ruleset` into tables, chains, rules and sets. */
export function parseRuleset(text: string): { ruleset: Ruleset; cut: boolean } {
  const { items, cut } = elements(text, "the ruleset");
  const ruleset: Ruleset = new Map();
  const types = new Map<string, unknown>();
  for (const item of items) {
    const got = one(item);
    if (got) add(ruleset, types, got[0], got[1]);
  }
  return { ruleset, cut };
}

/**
 * What `nft -j -e -f FILE` printed in a scratch network namespace: the objects the file adds, in
 * nft's own normalization; undefined with the reason when the file does something else or fails.
 */
function parseBootEcho(text: string, file: string): { boot?: Boot; unknown?: string } {
  if (!text.trim()) return { boot: { ruleset: new Map(), from: `${file} loads no rules`, file } };
  if (!/^\s*\{\s*"nftables"/.test(text)) {
    const first = text.trim().split("\n", 1)[0]!.slice(0, 300);
    return {
      boot: { ruleset: new Map(), from: `${file} fails to load (${first})` },
    };
  }
  const { items, cut } = elements(text, "the boot ruleset");
  if (cut) return { unknown: `what ${file} loads at boot: its listing was cut` };
  const ruleset: Ruleset = new Map();
  const types = new Map<string, unknown>();
  for (const item of items) {
    const command = one(item);
    const added = command && (command[0] === "add" || command[0] === "insert") && one(command[1]);
    if (!added)
      return {
        unknown: `what ${file} loads at boot: it does more than add tables, chains, rules and sets`,
      };
    if (command[0] === "insert" && added[0] === "rule" && isObject(added[1])) {
      // An inserted rule goes first in its chain.
      const body = added[1];
      const chain = chainOf(tableOf(ruleset, body), name(body.chain, "a rule"));
      chain.rules.unshift(bounded(ruleWords(body.expr, body.comment)));
    } else add(ruleset, types, added[0], added[1]);
  }
  return { boot: { ruleset, from: file, file } };
}

export function parseFirewall(output: string, ctx: ParseContext): FirewallLive {
  try {
    return parseSection(output, ctx);
  } catch (error) {
    // A host can nest an expression deeper than JSON.parse or the words' recursion goes.
    if (error instanceof RangeError)
      throw new ProbeParseError("firewall", "an expression nested too deep");
    throw error;
  }
}

function parseSection(output: string, ctx: ParseContext): FirewallLive {
  // nft writes names, comments and elements as UTF-8 JSON; the section arrives one byte a char.
  const text = Buffer.from(output, "latin1").toString("utf8");
  let listing: { ruleset: Ruleset; cut: boolean } | undefined;
  let boot: Boot | undefined;
  const unknown: string[] = [];
  let bootSeen = false;
  for (const [label, part] of ctx.parts(text)) {
    if (label === "live") {
      if (listing) throw new ProbeParseError("firewall", "the ruleset appears twice");
      listing = parseRuleset(part);
    } else if (!bootSeen && label === "boot") {
      // The rules file's path on the first line, then what nft echoed loading it.
      bootSeen = true;
      const newline = part.indexOf("\n");
      const got = parseBootEcho(part.slice(newline + 1), part.slice(0, Math.max(newline, 0)));
      boot = got.boot;
      if (got.unknown) unknown.push(got.unknown);
    } else if (!bootSeen && label.startsWith("boot-none ")) {
      bootSeen = true;
      boot = { ruleset: new Map(), from: label.slice(10) };
    } else if (!bootSeen && label.startsWith("boot-unknown ")) {
      bootSeen = true;
      unknown.push(`what the next boot loads: ${label.slice(13)}`);
    } else throw new ProbeParseError("firewall", `unexpected part ${quoted(label.slice(0, 80))}`);
  }
  if (!listing) throw new ProbeParseError("firewall", "no ruleset");
  if (listing.cut)
    unknown.push("the ruleset past the probe's bound: not read, so nothing is missing from it");
  else if (!bootSeen) throw new ProbeParseError("firewall", "no boot part");
  return {
    ruleset: listing.ruleset,
    cut: listing.cut,
    ...(boot && !listing.cut && { boot }),
    unknown,
  };
}
