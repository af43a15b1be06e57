// Ansible's YAML inventory (`all: { hosts, vars, children }`, nested) and the JSON that
// `ansible-inventory --list` prints (`_meta.hostvars`, and per group `hosts`, `vars`, `children`
// as lists). JSON is YAML too: both are read through the YAML parser, which gives every node its
// line; mappings are walked as YAML nodes, never turned into objects a `__proto__` key could bend.
import {
  isAlias,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  type Document,
  type Node,
  type Pair,
} from "yaml";
import { hostEntry } from "./host-pattern.js";
import {
  InventoryBuilder,
  type Inventory,
  type InventoryFormat,
  type InventoryGroup,
  type InventoryProblem,
  type InventoryVar,
} from "./model.js";

type Reader = { b: InventoryBuilder; lineOf: (node: unknown) => number; doc: Document };

/** The node an alias (`*web`) stands for; any other node as it is. */
const deref = (r: Reader, node: unknown): unknown =>
  isAlias(node) ? (node.resolve(r.doc) ?? null) : node;

// A quoted "<<" is a key like any other; a plain one merges.
const isMergeKey = (key: unknown) => isScalar(key) && key.type === "PLAIN" && key.value === "<<";

const scalarText = (node: unknown): string | undefined =>
  isScalar(node) && node.value !== null && typeof node.value !== "object"
    ? String(node.value)
    : undefined;

/**
 * A mapping's pairs, aliases resolved and `<<` merge keys (`<<: *defaults`, `<<: [*a, *b]`)
 * replaced by the pairs they merge, which the mapping's own keys then override.
 */
function pairs(r: Reader, node: unknown, what: string, at: number, depth = 0): Pair[] {
  const value = deref(r, node);
  if (value === null || value === undefined || (isScalar(value) && value.value === null)) return [];
  if (!isMap(value)) {
    r.b.problem(r.lineOf(value) || at, `${what} must be a mapping`);
    return [];
  }
  // A merge of a merge of itself (`&a { <<: *a }`) would never end.
  if (depth > 20) {
    r.b.problem(r.lineOf(value) || at, `${what}: merge keys nested more than 20 deep`);
    return [];
  }
  const merged: Pair[] = [];
  const own: Pair[] = [];
  for (const pair of value.items) {
    if (!isMergeKey(pair.key)) {
      own.push(pair);
      continue;
    }
    const source = deref(r, pair.value);
    const sources = isSeq(source) ? source.items : [source];
    // Of merged mappings, the first one listed wins, as YAML's merge key says.
    for (const item of [...sources].reverse())
      merged.push(...pairs(r, item, `the merge key of ${what}`, at, depth + 1));
  }
  return [...merged, ...own];
}

function readVars(r: Reader, node: unknown, into: Map<string, InventoryVar>, at: number): void {
  for (const pair of pairs(r, node, "vars", at)) {
    const key = scalarText(pair.key);
    if (key === undefined) continue;
    const node = deref(r, pair.value);
    const value = isScalar(node) ? (node.value as InventoryVar["value"]) : {};
    const line = r.lineOf(pair.key);
    // Ansible Vault ciphertext: its value is unknown here, and stays so.
    if (isScalar(node) && node.tag === "!vault") into.set(key, { value: "", line, vault: true });
    else into.set(key, { value, line });
  }
}

/**
 * One host entry of a group's `hosts`: a range or `host:port` stands for hosts as in INI. A
 * name YAML reads as a number (`1234:`) is refused, as Ansible's YAML plugin refuses it.
 */
function readYamlHost(r: Reader, host: Pair, group: string): void {
  const line = r.lineOf(host.key);
  const text = scalarText(host.key);
  if (text === undefined) return;
  if (isScalar(host.key) && typeof host.key.value !== "string") {
    r.b.problem(line, `host name ${text} is a YAML number, not a name: quote it ("${text}")`);
    return;
  }
  const entry = hostEntry(text);
  if ("error" in entry) {
    r.b.problem(line, `host ${JSON.stringify(text.slice(0, 80))}: ${entry.error}`);
    return;
  }
  for (const name of entry.names) {
    const found = r.b.host(name, line, group);
    if (!found) continue;
    if (entry.port !== undefined) found.vars.set("ansible_port", { value: entry.port, line });
    readVars(r, host.value, found.vars, line);
  }
}

/** One group of a YAML inventory, its hosts and vars, then its children, depth first. */
function readYamlGroup(
  r: Reader,
  name: string,
  node: unknown,
  line: number,
): InventoryGroup | undefined {
  const group = r.b.group(name, line);
  if (!group) return undefined;
  for (const pair of pairs(r, node, `group ${JSON.stringify(name)}`, line)) {
    const key = scalarText(pair.key);
    const at = r.lineOf(pair.key);
    if (key === "vars") readVars(r, pair.value, group.vars, at);
    else if (key === "hosts") {
      for (const host of pairs(r, pair.value, "hosts", at)) readYamlHost(r, host, name);
    } else if (key === "children") {
      for (const child of pairs(r, pair.value, "children", at)) {
        const childName = scalarText(child.key);
        if (childName === undefined) continue;
        const childLine = r.lineOf(child.key);
        if (readYamlGroup(r, childName, child.value, childLine))
          r.b.child(group, childName, childLine);
      }
    } else r.b.problem(at, `a group holds hosts, vars and children, not ${JSON.stringify(key)}`);
  }
  return group;
}

/** The `--list` JSON: groups with lists of hosts and children, host variables under `_meta`. */
function readListJson(r: Reader, root: Pair[]): void {
  for (const pair of root) {
    const name = scalarText(pair.key);
    const line = r.lineOf(pair.key);
    if (name === undefined) continue;
    if (name === "_meta") {
      for (const meta of pairs(r, pair.value, "_meta", line)) {
        if (scalarText(meta.key) !== "hostvars") continue;
        for (const host of pairs(r, meta.value, "hostvars", r.lineOf(meta.key))) {
          const hostName = scalarText(host.key);
          const entry = hostName === undefined ? undefined : r.b.host(hostName, r.lineOf(host.key));
          if (entry) readVars(r, host.value, entry.vars, r.lineOf(host.key));
        }
      }
      continue;
    }
    const group = r.b.group(name, line);
    if (!group) continue;
    for (const field of pairs(r, pair.value, `group ${JSON.stringify(name)}`, line)) {
      const key = scalarText(field.key);
      const at = r.lineOf(field.key);
      if (key === "vars") readVars(r, field.value, group.vars, at);
      else if (key === "hosts" || key === "children") {
        const list = deref(r, field.value);
        if (!isSeq(list)) {
          r.b.problem(at, `${key} must be a list`);
          continue;
        }
        for (const item of list.items) {
          const itemName = scalarText(item);
          if (itemName === undefined) continue;
          if (key === "hosts") r.b.host(itemName, r.lineOf(item) || at, name);
          else r.b.child(group, itemName, r.lineOf(item) || at);
        }
      } else r.b.problem(at, `a group holds hosts, vars and children, not ${JSON.stringify(key)}`);
    }
  }
}

/**
 * Whether JSON is what `ansible-inventory --list` prints (`_meta`, lists of hosts and children)
 * rather than a YAML inventory written as JSON (mappings all the way down), which Ansible reads too.
 */
function isListShape(r: Reader, root: Pair[]): boolean {
  return root.some((pair) => {
    if (scalarText(pair.key) === "_meta") return true;
    const group = deref(r, pair.value);
    return (
      isMap(group) &&
      group.items.some(
        (f) => ["hosts", "children"].includes(scalarText(f.key) ?? "") && isSeq(deref(r, f.value)),
      )
    );
  });
}

/** The YAML document of `text`, or its syntax problems; every node's line through `lineOf`. */
function parsed(text: string, b: InventoryBuilder): Reader | { problems: InventoryProblem[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: false });
  if (doc.errors.length)
    return {
      problems: doc.errors.map((e) => ({
        line: lineCounter.linePos(e.pos[0]).line,
        message: e.message.split("\n")[0]!,
      })),
    };
  const lineOf = (node: unknown) =>
    (node as Node | null)?.range ? lineCounter.linePos((node as Node).range![0]).line : 0;
  return { b, lineOf, doc };
}

/** How a file Ansible Vault encrypted as a whole starts. */
export const VAULT_FILE = /^\$ANSIBLE_VAULT;/;

/**
 * A group_vars or host_vars file (YAML or JSON): a mapping of variables, as Ansible requires one,
 * or nothing when empty. A file Vault encrypted as a whole is not read; pure.
 */
export function readVarsFile(
  text: string,
): { vars: Map<string, InventoryVar> } | { vault: true } | { problems: InventoryProblem[] } {
  if (VAULT_FILE.test(text)) return { vault: true };
  const b = new InventoryBuilder("ansible-yaml");
  const r = parsed(text, b);
  if ("problems" in r) return r;
  const vars = new Map<string, InventoryVar>();
  readVars(r, r.doc.contents, vars, 1);
  return b.problems.length ? { problems: b.problems } : { vars };
}

/** Reads a YAML inventory, or the JSON of `ansible-inventory --list`; pure. */
export function readYamlInventory(
  text: string,
  format: Extract<InventoryFormat, "ansible-yaml" | "ansible-json">,
): Inventory | { problems: InventoryProblem[] } {
  const b = new InventoryBuilder(format);
  const r = parsed(text, b);
  if ("problems" in r) return r;
  const root = pairs(r, r.doc.contents, "an inventory", 1);
  if (format === "ansible-json" && isListShape(r, root)) readListJson(r, root);
  else
    for (const pair of root) {
      const name = scalarText(pair.key);
      if (name !== undefined) readYamlGroup(r, name, pair.value, r.lineOf(pair.key));
    }
  return b.done();
}
