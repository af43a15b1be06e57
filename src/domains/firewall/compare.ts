import type { Latent } from "../cause.js";
import { pathIn, type Finding } from "../domain.js";
import type { SpecPath } from "../../spec-path.js";
import { doesNotLoadIt, includedChange, loadsIt, noLongerLoadsIt } from "./cause.js";
import { LEGACY_FAMILIES } from "./legacy.js";
import { bootFor, boots, type Boot, type FirewallLive } from "./parse.js";
import type { Chain, Table } from "./ruleset.js";

/**
 * nft's address families and legacy iptables' tools, the first word of every table's name and so of
 * every drift key.
 */
export const FAMILIES = [
  "ip",
  "ip6",
  "inet",
  "arp",
  "bridge",
  "netdev",
  ...Object.values(LEGACY_FAMILIES),
] as const;

interface DeclaredChain {
  hook?: string | undefined;
  policy?: string | undefined;
  rules?: string[] | undefined;
}
interface DeclaredTable {
  chains?: Record<string, DeclaredChain> | undefined;
  sets?: Record<string, string[]> | undefined;
}

const entries = <V>(record: Record<string, V> | undefined): [string, V][] =>
  record ? Object.entries(record) : [];

const counts = (items: readonly string[]): Map<string, number> => {
  const n = new Map<string, number>();
  for (const item of items) n.set(item, (n.get(item) ?? 0) + 1);
  return n;
};

/**
 * Which of `items` the other side holds fewer of (the last occurrences of each beyond the other
 * side's count), and which it holds too, by index: one pass each, so linear in the ruleset.
 */
function split(items: readonly string[], other: Map<string, number>) {
  const seen = new Map<string, number>();
  const extra: number[] = [];
  const kept: number[] = [];
  items.forEach((item, i) => {
    const n = (seen.get(item) ?? 0) + 1;
    seen.set(item, n);
    (n > (other.get(item) ?? 0) ? extra : kept).push(i);
  });
  return { extra, kept };
}

/** Where the boot ruleset stands on one item: the file that loads it, or that it does not. */
interface BootView {
  boot: Boot;
  has: boolean;
}

/** A live item the boot does not load is gone at reboot; a declared one it loads comes back. */
function latentOf(view: BootView | undefined, liveHas: boolean, item: string): Latent | undefined {
  if (!view) return undefined;
  if (liveHas && !view.has)
    return {
      after: "reboot",
      becomes: null,
      because: view.boot.file ? doesNotLoadIt(view.boot.file) : view.boot.from,
    };
  if (!liveHas && view.has) return { after: "reboot", becomes: item, because: view.boot.from };
  return undefined;
}

/**
 * A drifted item the boot's rules file loads as it is live: the file says so in the item's detail,
 * which the cause reads (./cause.ts) with the file's record. One that differs says it in `latent`.
 */
function detailOf(view: BootView | undefined, liveHas: boolean): string | undefined {
  if (!view?.boot.file || liveHas !== view.has) return undefined;
  return liveHas ? loadsIt(view.boot.file) : noLongerLoadsIt(view.boot.file);
}

interface Scope {
  specPath: SpecPath;
  findings: Finding[];
  live: FirewallLive;
}

/**
 * Records a finding with its latent drift and cause; an item alike on both sides only when the
 * next boot changes it. `item` is what the boot loads when it loads it (a rule, an element).
 */
function add(
  scope: Scope,
  finding: Finding,
  view: BootView | undefined,
  liveHas: boolean,
  item: string = finding.key,
): void {
  const latent = latentOf(view, liveHas, item);
  const detail = finding.declared === finding.live ? undefined : detailOf(view, liveHas);
  if (finding.declared === finding.live && finding.declared !== null && !latent) return;
  if (finding.declared === null && finding.live === null && !latent) return;
  scope.findings.push({ ...finding, ...(latent && { latent }), ...(detail && { detail }) });
}

function viewOf(boot: Boot | undefined, has: boolean): BootView | undefined {
  return boot && { boot, has };
}

/** A chain's rules: added, removed, reordered, and (declared and live alike) gone at reboot. */
function compareRules(
  scope: Scope,
  table: string,
  name: string,
  want: readonly string[],
  got: readonly string[],
  bootChain: Chain | undefined,
): void {
  const key = (rule: string) => `${table} ${name}: ${rule}`;
  const at = (i: number) => pathIn(scope, table, "chains", name, "rules", i);
  const boot = bootFor(scope.live, table);
  const bootRules = new Set(bootChain?.rules ?? []);
  const view = (rule: string) => viewOf(boot, bootRules.has(rule));
  const removed = split(want, counts(got));
  const added = split(got, counts(want));
  const keptWant = removed.kept.map((i) => want[i]!);
  const keptGot = added.kept.map((i) => got[i]!);
  if (keptWant.some((rule, i) => rule !== keptGot[i]))
    scope.findings.push({
      key: `${table} ${name}: rule order`,
      declared: keptWant,
      live: keptGot,
      path: pathIn(scope, table, "chains", name, "rules"),
      detail: "the same rules in another order: nft applies them top to bottom",
    });
  // Removed from the end first, so each accept finds its rule at its declared place.
  if (!scope.live.cut)
    for (const i of [...removed.extra].reverse())
      add(
        scope,
        { key: key(want[i]!), declared: want[i]!, live: null, path: at(i) },
        view(want[i]!),
        false,
        want[i],
      );
  for (const i of added.extra)
    add(
      scope,
      { key: key(got[i]!), declared: null, live: got[i]!, path: at(i) },
      view(got[i]!),
      true,
    );
  for (const i of removed.kept)
    add(
      scope,
      { key: key(want[i]!), declared: want[i]!, live: want[i]!, path: at(i) },
      view(want[i]!),
      true,
    );
  if (boot && !scope.live.cut) {
    const everywhere = new Set([...want, ...got]);
    for (const rule of bootRules)
      if (!everywhere.has(rule))
        add(
          scope,
          { key: key(rule), declared: null, live: null, path: at(want.length) },
          view(rule),
          false,
          rule,
        );
  }
}

function compareChain(
  scope: Scope,
  table: string,
  name: string,
  want: DeclaredChain | undefined,
  got: Chain | undefined,
  bootTable: Table | undefined,
): void {
  const bootChain = bootTable?.chains.get(name);
  const boot = bootFor(scope.live, table);
  const view = viewOf(boot, bootChain !== undefined);
  const path = pathIn(scope, table, "chains", name);
  if (!got) {
    if (!scope.live.cut)
      add(
        scope,
        { key: `${table} ${name}`, declared: want as Finding["declared"], live: null, path },
        view,
        false,
      );
    return;
  }
  if (!want) {
    const live = {
      ...(got.hook !== undefined && { hook: got.hook }),
      ...(got.policy !== undefined && { policy: got.policy }),
    };
    add(scope, { key: `${table} ${name}`, declared: null, live, path }, view, true);
  }
  for (const field of ["hook", "policy"] as const) {
    const declared = want?.[field];
    if (declared === undefined) continue;
    const live = got[field] ?? null;
    const bootValue = bootChain?.[field];
    const finding: Finding = {
      key: `${table} ${name} ${field}`,
      declared,
      live,
      path: [...path, field],
    };
    const latent: Latent | undefined =
      boot && bootValue !== undefined && bootValue !== live
        ? { after: "reboot", becomes: bootValue, because: boot.from }
        : undefined;
    if (declared !== live || latent) scope.findings.push({ ...finding, ...(latent && { latent }) });
  }
  compareRules(scope, table, name, want?.rules ?? [], got.rules, bootChain);
}

function compareSet(
  scope: Scope,
  table: string,
  name: string,
  want: readonly string[] | undefined,
  got: readonly string[] | undefined,
  bootTable: Table | undefined,
): void {
  const boot = bootFor(scope.live, table);
  const bootSet = bootTable?.sets.get(name);
  const path = pathIn(scope, table, "sets", name);
  const key = `${table} @${name}`;
  if (!got) {
    if (!scope.live.cut)
      add(
        scope,
        { key, declared: want ? [...want] : null, live: null, path },
        viewOf(boot, bootSet !== undefined),
        false,
      );
    return;
  }
  if (!want)
    add(scope, { key, declared: null, live: [], path }, viewOf(boot, bootSet !== undefined), true);
  const wanted = new Map((want ?? []).map((element, i) => [element, i]));
  const have = new Set(got);
  const booted = new Set(bootSet ?? []);
  const view = (element: string) => viewOf(boot, booted.has(element));
  if (!scope.live.cut)
    (want ?? []).forEach((element, i) => {
      if (!have.has(element))
        add(
          scope,
          { key: `${key}: ${element}`, declared: element, live: null, path: [...path, i] },
          view(element),
          false,
          element,
        );
    });
  got.forEach((element) => {
    const i = wanted.get(element) ?? wanted.size;
    add(
      scope,
      {
        key: `${key}: ${element}`,
        declared: wanted.has(element) ? element : null,
        live: element,
        path: [...path, i],
      },
      view(element),
      true,
    );
  });
}

function compareTable(
  scope: Scope,
  name: string,
  want: DeclaredTable | undefined,
  got: Table | undefined,
): void {
  const boot = bootFor(scope.live, name);
  const bootTable = boot?.ruleset.get(name);
  const view = viewOf(boot, bootTable !== undefined);
  if (!got) {
    if (!scope.live.cut)
      add(
        scope,
        { key: name, declared: want as Finding["declared"], live: null, path: pathIn(scope, name) },
        view,
        false,
      );
    return;
  }
  if (!want)
    add(scope, { key: name, declared: null, live: {}, path: pathIn(scope, name) }, view, true);
  const chains = new Map(entries(want?.chains));
  for (const [chain, declared] of chains)
    compareChain(scope, name, chain, declared, got.chains.get(chain), bootTable);
  for (const [chain, live] of got.chains)
    if (!chains.has(chain)) compareChain(scope, name, chain, undefined, live, bootTable);
  // Chains only the boot loads: their rules come at the next boot.
  if (!scope.live.cut)
    for (const [chain, booted] of bootTable?.chains ?? [])
      if (!chains.has(chain) && !got.chains.has(chain))
        compareRules(scope, name, chain, [], [], booted);
  const sets = new Map(entries(want?.sets));
  for (const [set, declared] of sets)
    compareSet(scope, name, set, declared, got.sets.get(set), bootTable);
  for (const [set, live] of got.sets)
    if (!sets.has(set)) compareSet(scope, name, set, undefined, live, bootTable);
}

/**
 * Declared tables against the live ruleset, in the order an accept needs: a table or chain before
 * its rules, a rule removed from the end of its chain before one added at its live place.
 */
export function compareFirewall(
  domain: { specPath: SpecPath },
  declared: Record<string, DeclaredTable>,
  live: FirewallLive,
): Finding[] {
  const scope: Scope = { specPath: domain.specPath, findings: [], live };
  const tables = new Map(entries(declared));
  for (const [name, want] of tables) compareTable(scope, name, want, live.ruleset.get(name));
  for (const [name, got] of live.ruleset)
    if (!tables.has(name)) compareTable(scope, name, undefined, got);
  // Tables only the boot loads: their rules come at the next boot.
  if (!live.cut)
    for (const [name, booted] of boots(live).flatMap((boot) => [...boot.ruleset]))
      if (!tables.has(name) && !live.ruleset.has(name))
        for (const [chain, bootChain] of booted.chains)
          compareRules(scope, name, chain, [], [], bootChain);
  const included =
    live.boot?.file && live.boot.includes && includedChange(live.boot.file, live.boot.includes);
  if (!included) return scope.findings;
  // What the rules file includes changed after it, or was not all read: its cause reads that.
  const legacy: readonly string[] = Object.values(LEGACY_FAMILIES);
  return scope.findings.map((finding) =>
    legacy.includes(finding.key.slice(0, finding.key.indexOf(" ")))
      ? finding
      : { ...finding, cause: included },
  );
}
