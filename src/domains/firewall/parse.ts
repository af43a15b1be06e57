import { ProbeParseError } from "../../errors.js";
import type { ParseContext } from "../domain.js";
import { bounded, chainOf, tableIn, type Ruleset, type Table } from "./ruleset.js";
import {
  LEGACY_FAMILIES,
  parseIptablesSave,
  parseLegacyLive,
  type LegacyFamily,
} from "./legacy.js";
import { parseIncludes, parseNewer, type Includes } from "./includes.js";
import { hookWords, quoted, ruleWords, value } from "./words.js";
import { utf8 } from "../../text/utf8.js";

/** What the next boot loads: the ruleset and where it comes from (a file, or why nothing). */
export interface Boot {
  ruleset: Ruleset;
  /** The rules file, or why the boot loads nothing. */
  from: string;
  /** The rules file the ruleset comes from. */
  file?: string;
  /** What nft's rules file includes, as the probe read it. */
  includes?: Includes;
}

export interface FirewallLive {
  ruleset: Ruleset;
  /** The host cut the listing at the probe's bound: what it did not send is unknown, never gone. */
  cut: boolean;
  /** Undefined where the probe could not tell what the next boot loads (said in `unknown`). */
  boot?: Boot;
  /** What the saved iptables rules restore at boot, per address family, where legacy tables count. */
  legacyBoot?: Map<LegacyFamily, Boot>;
  unknown: string[];
}

/** The most bytes of listings a host sends: a flood of rules is cut there, never sent whole. */
export const MAX_RULESET_BYTES = 8 * 1024 * 1024;

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
  return tableIn(ruleset, `${name(body.family, "an object")} ${name(body[key], "an object")}`);
}

/** A set's elements in nft's words; interface names quoted. */
function setElements(body: Record<string, unknown>): string[] {
  if (!Array.isArray(body.elem)) return [];
  return body.elem.map((each) => bounded(value(each, body.type === "ifname")));
}

/**
 * One listed object into the ruleset; anything else (maps, flowtables, stateful objects) is left
 * out.
 */
function add(ruleset: Ruleset, kind: string, body: unknown): void {
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
  } else if (kind === "set") {
    const sets = tableOf(ruleset, body).sets;
    const set = name(body.name, "a set");
    sets.set(set, [...(sets.get(set) ?? []), ...setElements(body)]);
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
  for (const item of items) {
    const got = one(item);
    if (got) add(ruleset, got[0], got[1]);
  }
  return { ruleset, cut };
}

/**
 * What `nft -j -i` printed after `include FILE` and `list ruleset` in a scratch network namespace:
 * nft's errors, if the file failed to load, then the ruleset it leaves, in nft's own normalization.
 * The listing is the last `{"nftables"` (a string in it escapes its quotes).
 */
function parseBootListing(text: string, file: string): { boot?: Boot; unknown?: string } {
  const start = text.lastIndexOf('{"nftables"');
  const lines = text
    .slice(0, start === -1 ? undefined : start)
    .split("\n")
    .filter((line) => line.trim() !== "");
  // No listing at all: nft did not run as asked (an nft built without its interactive mode).
  if (start === -1)
    return {
      unknown: `what ${file} loads at boot: nft listed no ruleset${lines[0] === undefined ? "" : ` (${lines[0].slice(0, 300)})`}`,
    };
  const error = lines.find((line) => / Error: /.test(line));
  if (error !== undefined)
    return { boot: { ruleset: new Map(), from: `${file} fails to load (${error.slice(0, 300)})` } };
  const { ruleset, cut } = parseRuleset(text.slice(start));
  if (cut) return { unknown: `what ${file} loads at boot: its listing was cut` };
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

/** Where a saved iptables file is restored from at boot: by which service, for which family. */
export const SAVED_RULES = [
  { file: "/etc/iptables/rules.v4", family: "ip", by: "netfilter-persistent.service" },
  { file: "/etc/iptables/rules.v6", family: "ip6", by: "netfilter-persistent.service" },
  { file: "/etc/sysconfig/iptables", family: "ip", by: "iptables.service" },
  { file: "/etc/sysconfig/ip6tables", family: "ip6", by: "ip6tables.service" },
] as const;

/**
 * What the next boot restores of the legacy tables: the first line names the services enabled to
 * restore saved rules, the rest is `grep -H ''` of the saved files (each line `FILE:line`).
 */
function parseLegacyBoot(part: string): { boots: Map<LegacyFamily, Boot>; unknown: string[] } {
  const newline = part.indexOf("\n");
  const enabled = new Set(part.slice(0, newline === -1 ? undefined : newline).split(" "));
  const lines = new Map<string, string[]>(SAVED_RULES.map(({ file }) => [file, []]));
  if (newline !== -1)
    for (const line of part.slice(newline + 1).split("\n")) {
      if (line === "") continue;
      const colon = line.indexOf(":");
      const file = lines.get(line.slice(0, colon));
      if (colon === -1 || !file)
        throw new ProbeParseError("firewall", "a saved-rules line without its file");
      file.push(line.slice(colon + 1));
    }
  const boots = new Map<LegacyFamily, Boot>();
  const unknown: string[] = [];
  for (const family of Object.keys(LEGACY_FAMILIES) as LegacyFamily[]) {
    const restored = SAVED_RULES.filter((s) => s.family === family && enabled.has(s.by));
    const saved = restored.filter(({ file }) => lines.get(file)!.length > 0);
    const ruleset: Ruleset = new Map();
    let broken: string | undefined;
    for (const { file } of saved) {
      const read = parseIptablesSave(lines.get(file)!.join("\n"), family, ruleset);
      if (read.foreign !== undefined) broken = `${file} holds a line iptables-save does not write`;
      else if (read.cut) broken = `${file} ends a table without COMMIT`;
    }
    const tables = `the ${LEGACY_FAMILIES[family]} tables`;
    if (broken) unknown.push(`what the next boot restores of ${tables}: ${broken}`);
    else if (saved.length)
      boots.set(family, {
        ruleset,
        from: saved.map((s) => s.file).join(", "),
        file: saved.map((s) => s.file).join(", "),
      });
    else
      boots.set(family, {
        ruleset,
        from: restored.length
          ? `${restored.map((s) => s.by).join(", ")} restores no saved rules (no ${restored.map((s) => s.file).join(", ")})`
          : `no service restores saved rules at boot (${[...new Set(SAVED_RULES.filter((s) => s.family === family).map((s) => s.by))].join(", ")} not enabled)`,
      });
  }
  return { boots, unknown };
}

function parseSection(output: string, ctx: ParseContext): FirewallLive {
  // nft writes names, comments and elements as UTF-8 JSON; the section arrives one byte a char.
  const text = utf8(output);
  const ruleset: Ruleset = new Map();
  let listed = false;
  let cut = false;
  let boot: Boot | undefined;
  let legacyBoot: Map<LegacyFamily, Boot> | undefined;
  let includes: Includes | undefined;
  const unknown: string[] = [];
  const seen = new Set<string>();
  const once = (what: string) => {
    if (seen.has(what)) throw new ProbeParseError("firewall", `${what} appears twice`);
    seen.add(what);
  };
  for (const [label, part] of ctx.parts(text)) {
    if (cut) break;
    if (label === "live") {
      once("the ruleset");
      const listing = parseRuleset(part);
      for (const [name, table] of listing.ruleset) ruleset.set(name, table);
      [listed, cut] = [true, listing.cut];
    } else if (label === "legacy ip" || label === "legacy ip6") {
      once(label);
      listed = true;
      cut = parseLegacyLive(part, label.slice(7) as LegacyFamily, ruleset);
    } else if (label === "legacy-boot") {
      // Printed where legacy tables count: without nft, the legacy tables (none, unless listed).
      listed = true;
      once("the saved iptables rules");
      const got = parseLegacyBoot(part);
      legacyBoot = got.boots;
      unknown.push(...got.unknown);
    } else if (label === "boot") {
      // The rules file's path on the first line, then what nft listed once it was loaded.
      once("the boot part");
      const newline = part.indexOf("\n");
      const got = parseBootListing(part.slice(newline + 1), part.slice(0, Math.max(newline, 0)));
      boot = got.boot;
      if (got.unknown) unknown.push(got.unknown);
    } else if (label === "includes") {
      once(label);
      includes = parseIncludes(part);
    } else if (label === "includes-newer" && includes) {
      once(label);
      parseNewer(part, includes);
    } else if (label.startsWith("boot-none ")) {
      once("the boot part");
      boot = { ruleset: new Map(), from: label.slice(10) };
    } else if (label.startsWith("boot-unknown ")) {
      once("the boot part");
      unknown.push(`what the next boot loads: ${label.slice(13)}`);
    } else throw new ProbeParseError("firewall", `unexpected part ${quoted(label.slice(0, 80))}`);
  }
  // head cut the section: what came after the cut (at a line's end, or a part's) is unknown.
  cut ||= output.length > MAX_RULESET_BYTES;
  if (!listed) throw new ProbeParseError("firewall", "no ruleset");
  if (boot?.file && includes) boot.includes = includes;
  if (cut)
    unknown.push("the ruleset past the probe's bound: not read, so nothing is missing from it");
  else if (seen.has("the ruleset") && !seen.has("the boot part"))
    throw new ProbeParseError("firewall", "no boot part");
  return {
    ruleset,
    cut,
    ...(boot && !cut && { boot }),
    ...(legacyBoot && !cut && { legacyBoot }),
    unknown,
  };
}

/** What the next boot loads of `table`: nft's rules file, or the saved iptables rules. */
export function bootFor(live: FirewallLive, table: string): Boot | undefined {
  const family = table.slice(0, table.indexOf(" "));
  if (family === LEGACY_FAMILIES.ip) return live.legacyBoot?.get("ip");
  if (family === LEGACY_FAMILIES.ip6) return live.legacyBoot?.get("ip6");
  return live.boot;
}

/** Every boot the probe read: nft's and the saved iptables rules', each with its tables. */
export const boots = (live: FirewallLive): Boot[] => [
  ...(live.boot ? [live.boot] : []),
  ...(live.legacyBoot?.values() ?? []),
];
