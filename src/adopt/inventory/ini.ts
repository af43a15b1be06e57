// Ansible's INI inventory: `[group]` host lines with `key=value` variables, `[group:vars]` and
// `[group:children]` sections; hosts before any section are ungrouped.
import { hostEntry } from "./host-pattern.js";
import {
  InventoryBuilder,
  type Inventory,
  type InventoryGroup,
  type InventoryProblem,
} from "./model.js";

const SECTION = /^\[([^\]:]*)(?::(vars|children))?\]\s*(?:#.*)?$/;
/** A host line that starts with a bracket: an IPv6 address, `[2001:db8::1]:2222`. */
const BRACKETED_HOST = /^\[[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*\](?::\d+)?(?:\s|$)/;

/** A host line's words: `key=value` pairs whose value may be quoted; `#` starts a comment. */
function words(line: string): string[] | { error: string } {
  const found: string[] = [];
  let i = 0;
  while (i < line.length) {
    while (line[i] === " " || line[i] === "\t") i++;
    if (i >= line.length || line[i] === "#") break;
    let word = "";
    while (i < line.length && line[i] !== " " && line[i] !== "\t") {
      const quote = line[i];
      if (quote === "'" || quote === '"') {
        const end = line.indexOf(quote, i + 1);
        if (end === -1) return { error: `unclosed ${quote} quote` };
        word += line.slice(i + 1, end);
        i = end + 1;
      } else word += line[i++];
    }
    found.push(word);
  }
  return found;
}

/**
 * A `[group:vars]` value as Ansible's INI plugin keeps it: all of the rest of the line (a `#` in
 * it included), unquoted when it is one quoted string, as Python's literal_eval reads it.
 */
function varsValue(raw: string): string {
  const quoted = /^(['"])(.*?)\1\s*(?:#.*)?$/.exec(raw);
  return quoted ? quoted[2]! : raw;
}

/** Reads an INI inventory; pure, one pass over the lines. */
export function readIniInventory(text: string): Inventory | { problems: InventoryProblem[] } {
  const b = new InventoryBuilder("ansible-ini");
  let group: InventoryGroup | undefined = b.group("ungrouped", 1);
  let kind: "hosts" | "vars" | "children" = "hosts";
  // Ansible refuses a [x:vars] section or a [y:children] entry for a group no [x] or
  // [x:children] header defines anywhere in the file: checked once every header is known.
  const defined = new Set(["all", "ungrouped"]);
  const mentioned: { name: string; line: number; message: string }[] = [];
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const line = index + 1;
    const trimmed = lines[index]!.trim();
    if (!trimmed || trimmed.startsWith("#") || trimmed.startsWith(";")) continue;
    if (trimmed.startsWith("[") && !BRACKETED_HOST.test(trimmed)) {
      const section = SECTION.exec(trimmed);
      if (!section) {
        b.problem(line, "a section header is [group], [group:vars] or [group:children]");
        group = undefined;
        continue;
      }
      const name = section[1]!.trim();
      group = b.group(name, line);
      kind = (section[2] as "vars" | "children" | undefined) ?? "hosts";
      if (kind === "vars")
        mentioned.push({
          name,
          line,
          message: `section [${name}:vars] is for a group never defined`,
        });
      else defined.add(name);
      continue;
    }
    // Lines of a refused group were reported with its header.
    if (!group) continue;
    if (kind === "children") {
      const child = trimmed.split(/\s+/)[0]!;
      mentioned.push({
        name: child,
        line,
        message: `section [${group.name}:children] names group ${JSON.stringify(child)}, never defined`,
      });
      b.child(group, child, line);
      continue;
    }
    if (kind === "vars") {
      const eq = trimmed.indexOf("=");
      if (eq <= 0) {
        b.problem(line, "a [group:vars] line is key=value");
        continue;
      }
      group.vars.set(trimmed.slice(0, eq).trim(), {
        value: varsValue(trimmed.slice(eq + 1).trim()),
        line,
      });
      continue;
    }
    const parsed = words(trimmed);
    if (!Array.isArray(parsed)) {
      b.problem(line, parsed.error);
      continue;
    }
    const [pattern, ...assignments] = parsed as [string, ...string[]];
    const entry = hostEntry(pattern);
    if ("error" in entry) {
      b.problem(line, `host ${JSON.stringify(pattern.slice(0, 80))}: ${entry.error}`);
      continue;
    }
    const vars = assignments.map((word) => {
      const eq = word.indexOf("=");
      return eq <= 0 ? undefined : ([word.slice(0, eq), word.slice(eq + 1)] as const);
    });
    if (vars.includes(undefined)) {
      b.problem(line, "after the host name, a host line holds key=value variables only");
      continue;
    }
    for (const name of entry.names) {
      const host = b.host(name, line, group.name);
      if (entry.port !== undefined) host?.vars.set("ansible_port", { value: entry.port, line });
      for (const [key, value] of vars as (readonly [string, string])[])
        host?.vars.set(key, { value, line });
    }
  }
  for (const { name, line, message } of mentioned) if (!defined.has(name)) b.problem(line, message);
  return b.done();
}
