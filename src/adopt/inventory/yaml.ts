// Ansible's YAML inventory (`all: { hosts, vars, children }`, nested) and the JSON that
// `ansible-inventory --list` prints (`_meta.hostvars`, and per group `hosts`, `vars`, `children`
// as lists). JSON is YAML too: both are read through the YAML parser, which gives every node its
// line; mappings are walked as YAML nodes, never turned into objects a `__proto__` key could bend.
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node, type Pair } from "yaml";
import {
  InventoryBuilder,
  type Inventory,
  type InventoryFormat,
  type InventoryGroup,
  type InventoryProblem,
  type InventoryVar,
} from "./model.js";

type Reader = { b: InventoryBuilder; lineOf: (node: unknown) => number };

const scalarText = (node: unknown): string | undefined =>
  isScalar(node) && node.value !== null && typeof node.value !== "object"
    ? String(node.value)
    : undefined;

function pairs(r: Reader, node: unknown, what: string, at: number): Pair[] {
  if (node === null || node === undefined || (isScalar(node) && node.value === null)) return [];
  if (isMap(node)) return node.items;
  r.b.problem(r.lineOf(node) || at, `${what} must be a mapping`);
  return [];
}

function readVars(r: Reader, node: unknown, into: Map<string, InventoryVar>, at: number): void {
  for (const pair of pairs(r, node, "vars", at)) {
    const key = scalarText(pair.key);
    if (key === undefined) continue;
    const value = isScalar(pair.value) ? (pair.value.value as InventoryVar["value"]) : {};
    into.set(key, { value, line: r.lineOf(pair.key) });
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
      for (const host of pairs(r, pair.value, "hosts", at)) {
        const hostName = scalarText(host.key);
        if (hostName === undefined) continue;
        const entry = r.b.host(hostName, r.lineOf(host.key), name);
        if (entry) readVars(r, host.value, entry.vars, r.lineOf(host.key));
      }
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
        if (!isSeq(field.value)) {
          r.b.problem(at, `${key} must be a list`);
          continue;
        }
        for (const item of field.value.items) {
          const itemName = scalarText(item);
          if (itemName === undefined) continue;
          if (key === "hosts") r.b.host(itemName, r.lineOf(item) || at, name);
          else r.b.child(group, itemName, r.lineOf(item) || at);
        }
      } else r.b.problem(at, `a group holds hosts, vars and children, not ${JSON.stringify(key)}`);
    }
  }
}

/** Reads a YAML inventory, or the JSON of `ansible-inventory --list`; pure. */
export function readYamlInventory(
  text: string,
  format: Extract<InventoryFormat, "ansible-yaml" | "ansible-json">,
): Inventory | { problems: InventoryProblem[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: false });
  const b = new InventoryBuilder(format);
  if (doc.errors.length)
    return {
      problems: doc.errors.map((e) => ({
        line: lineCounter.linePos(e.pos[0]).line,
        message: e.message.split("\n")[0]!,
      })),
    };
  const lineOf = (node: unknown) =>
    (node as Node | null)?.range ? lineCounter.linePos((node as Node).range![0]).line : 0;
  const r = { b, lineOf };
  const root = pairs(r, doc.contents, "an inventory", 1);
  if (format === "ansible-json") readListJson(r, root);
  else
    for (const pair of root) {
      const name = scalarText(pair.key);
      if (name !== undefined) readYamlGroup(r, name, pair.value, lineOf(pair.key));
    }
  return b.done();
}
