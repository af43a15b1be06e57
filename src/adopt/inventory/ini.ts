// Ansible's INI inventory: `[group]` host lines with `key=value` variables, `[group:vars]` and
// `[group:children]` sections; hosts before any section are ungrouped.
import {
  InventoryBuilder,
  type Inventory,
  type InventoryGroup,
  type InventoryProblem,
} from "./model.js";

const SECTION = /^\[([^\]:]*)(?::(vars|children))?\]$/;
/** A host pattern's range, `web[01:20]` or `db-[a:c]`, expanded as Ansible does. */
const RANGE = /\[([0-9]+|[a-z]):([0-9]+|[a-z])\]/;
// Expanding a hostile `[0:99999999]` would hold it all in memory: past this, the line is refused.
const MAX_EXPANSION = 100_000;

/** The names a host pattern stands for, or why it stands for none. */
export function expandHostPattern(pattern: string): string[] | { error: string } {
  let names = [pattern];
  for (let round = 0; round < 4 && names.some((n) => RANGE.test(n)); round++) {
    const next: string[] = [];
    for (const name of names) {
      const m = RANGE.exec(name);
      if (!m) {
        next.push(name);
        continue;
      }
      const [from, to] = [m[1]!, m[2]!];
      const numeric = /^\d/.test(from);
      if (numeric !== /^\d/.test(to))
        return { error: `range [${from}:${to}] mixes digits and letters` };
      const [low, high] = numeric
        ? [Number(from), Number(to)]
        : [from.charCodeAt(0), to.charCodeAt(0)];
      if (low > high) return { error: `range [${from}:${to}] runs backwards` };
      if (next.length + high - low + 1 > MAX_EXPANSION)
        return { error: `range [${from}:${to}] stands for more than ${MAX_EXPANSION} hosts` };
      // A leading zero pads every number to the width of the first (`[01:10]`).
      const width = numeric && from.startsWith("0") ? from.length : 0;
      for (let i = low; i <= high; i++) {
        const part = numeric ? String(i).padStart(width, "0") : String.fromCharCode(i);
        next.push(name.slice(0, m.index) + part + name.slice(m.index + m[0].length));
      }
    }
    names = next;
  }
  if (names.some((n) => RANGE.test(n))) return { error: "more than 4 ranges in one pattern" };
  return names;
}

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

/** Reads an INI inventory; pure, one pass over the lines. */
export function readIniInventory(text: string): Inventory | { problems: InventoryProblem[] } {
  const b = new InventoryBuilder("ansible-ini");
  let group: InventoryGroup | undefined = b.group("ungrouped", 1);
  let kind: "hosts" | "vars" | "children" = "hosts";
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const line = index + 1;
    const trimmed = lines[index]!.trim();
    if (!trimmed || trimmed.startsWith("#") || trimmed.startsWith(";")) continue;
    if (trimmed.startsWith("[")) {
      const section = SECTION.exec(trimmed);
      if (!section) {
        b.problem(line, "a section header is [group], [group:vars] or [group:children]");
        group = undefined;
        continue;
      }
      group = b.group(section[1]!.trim(), line);
      kind = (section[2] as "vars" | "children" | undefined) ?? "hosts";
      continue;
    }
    // Lines of a refused group were reported with its header.
    if (!group) continue;
    if (kind === "children") {
      b.child(group, trimmed.split(/\s+/)[0]!, line);
      continue;
    }
    if (kind === "vars") {
      const eq = trimmed.indexOf("=");
      if (eq <= 0) {
        b.problem(line, "a [group:vars] line is key=value");
        continue;
      }
      const value = words(trimmed.slice(eq + 1).trim());
      group.vars.set(trimmed.slice(0, eq).trim(), {
        value: Array.isArray(value) ? value.join(" ") : trimmed.slice(eq + 1).trim(),
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
    const names = expandHostPattern(pattern);
    if (!Array.isArray(names)) {
      b.problem(line, `host ${JSON.stringify(pattern.slice(0, 80))}: ${names.error}`);
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
    for (const name of names) {
      const host = b.host(name, line, group.name);
      for (const [key, value] of vars as (readonly [string, string])[])
        host?.vars.set(key, { value, line });
    }
  }
  return b.done();
}
