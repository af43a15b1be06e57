// What every inventory reader returns: hosts and groups as an inventory names them, with the
// line each came from. Names are data (a group may be called `__proto__`): kept in Maps only.
import { NodeName } from "../../manifest/schema.js";

export const INVENTORY_FORMATS = [
  "ansible-ini",
  "ansible-yaml",
  "ansible-json",
  "ssh-config",
  "host-list",
] as const;
export type InventoryFormat = (typeof INVENTORY_FORMATS)[number];

/** A variable as the inventory wrote it, with its line (and its file, when not the inventory). */
export interface InventoryVar {
  value: string | number | boolean | null | object;
  line: number;
  /** The file it came from: a group_vars or host_vars file, or one file of an inventory folder. */
  file?: string;
  /** Ansible Vault ciphertext (`!vault`): never decrypted, so its value is unknown. */
  vault?: boolean;
}

export interface InventoryHost {
  name: string;
  line: number;
  /** The groups naming this host directly, in the order the inventory names them. */
  groups: string[];
  vars: Map<string, InventoryVar>;
}

export interface InventoryGroup {
  name: string;
  line: number;
  /** Groups whose members are members of this one (Ansible's `children`). */
  children: string[];
  vars: Map<string, InventoryVar>;
}

export interface Inventory {
  format: InventoryFormat;
  hosts: Map<string, InventoryHost>;
  /** Every group but Ansible's implicit `all` and `ungrouped`. */
  groups: Map<string, InventoryGroup>;
  /** Variables of `all`: every host's lowest layer. */
  fleetVars: Map<string, InventoryVar>;
}

export interface InventoryProblem {
  line: number;
  message: string;
  /** The file the line is in, when not the inventory read. */
  file?: string;
}

/** Ansible's implicit groups: `all` holds every host, `ungrouped` those in no other group. */
export const IMPLICIT_GROUPS = new Set(["all", "ungrouped"]);

const shown = (name: string) => JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);

/**
 * Why `name` cannot name a node or group (it becomes a file name and an ssh destination), or
 * undefined.
 */
export function nameProblem(kind: "host" | "group", name: string): string | undefined {
  if (name.startsWith("-"))
    return `${kind} name ${shown(name)} starts with "-": ssh would read it as an option`;
  if (!NodeName.safeParse(name).success)
    return `${kind} name ${shown(name)} must start with a letter, digit or _ and hold only letters, digits and . _ - @ : % [ ]`;
  return undefined;
}

/** Builds an inventory as a reader walks its text: names checked, problems kept with their line. */
export class InventoryBuilder {
  readonly hosts = new Map<string, InventoryHost>();
  readonly groups = new Map<string, InventoryGroup>();
  readonly fleetVars = new Map<string, InventoryVar>();
  readonly problems: InventoryProblem[] = [];

  constructor(readonly format: InventoryFormat) {}

  problem(line: number, message: string): void {
    this.problems.push({ line, message });
  }

  /** The host, added on first mention; undefined (and a problem) when its name is refused. */
  host(name: string, line: number, group?: string): InventoryHost | undefined {
    const problem = nameProblem("host", name);
    if (problem) {
      this.problem(line, problem);
      return undefined;
    }
    let host = this.hosts.get(name);
    if (!host) {
      host = { name, line, groups: [], vars: new Map() };
      this.hosts.set(name, host);
    }
    if (group !== undefined && !IMPLICIT_GROUPS.has(group) && !host.groups.includes(group))
      host.groups.push(group);
    return host;
  }

  /** The group's variables and children; `all`'s variables are the fleet's. */
  group(name: string, line: number): InventoryGroup | undefined {
    if (name === "all") return { name, line, children: [], vars: this.fleetVars };
    if (name === "ungrouped") return { name, line, children: [], vars: new Map() };
    const problem = nameProblem("group", name);
    if (problem) {
      this.problem(line, problem);
      return undefined;
    }
    let group = this.groups.get(name);
    if (!group) {
      group = { name, line, children: [], vars: new Map() };
      this.groups.set(name, group);
    }
    return group;
  }

  child(parent: InventoryGroup, name: string, line: number): void {
    const child = this.group(name, line);
    if (!child || IMPLICIT_GROUPS.has(parent.name) || IMPLICIT_GROUPS.has(name)) return;
    if (!parent.children.includes(name)) parent.children.push(name);
  }

  done(): Inventory | { problems: InventoryProblem[] } {
    // A group that names itself among its descendants would make a group include cycle. Walked
    // with a stack of its own: a hostile inventory may chain a hundred thousand groups.
    const state = new Map<string, "open" | "done">();
    for (const root of this.groups.values()) {
      if (state.has(root.name)) continue;
      const stack: { group: InventoryGroup; next: number }[] = [{ group: root, next: 0 }];
      state.set(root.name, "open");
      while (stack.length) {
        const top = stack.at(-1)!;
        const name = top.group.children[top.next++];
        if (name === undefined) {
          state.set(top.group.name, "done");
          stack.pop();
          continue;
        }
        const child = this.groups.get(name);
        if (!child) continue;
        if (state.get(name) === "open")
          this.problem(child.line, `group ${shown(name)} is its own descendant (a children cycle)`);
        else if (!state.has(name)) {
          state.set(name, "open");
          stack.push({ group: child, next: 0 });
        }
      }
    }
    if (this.problems.length) return { problems: this.problems };
    return {
      format: this.format,
      hosts: this.hosts,
      groups: this.groups,
      fleetVars: this.fleetVars,
    };
  }
}

/** Each variable of `vars` marked as coming from `file`. */
function fromFile(vars: Map<string, InventoryVar>, file: string): Map<string, InventoryVar> {
  for (const [key, v] of vars) vars.set(key, { ...v, file });
  return vars;
}

/**
 * The inventories of a folder's files as one, as Ansible adds each source to the same inventory in
 * turn: hosts and groups by name, their groups and children joined, a later file's variables over
 * an earlier's. Every variable keeps its file.
 */
export function joinInventories(
  parts: readonly { file: string; inventory: Inventory }[],
): Inventory {
  const hosts = new Map<string, InventoryHost>();
  const groups = new Map<string, InventoryGroup>();
  const fleetVars = new Map<string, InventoryVar>();
  for (const { file, inventory } of parts) {
    for (const [key, v] of fromFile(inventory.fleetVars, file)) fleetVars.set(key, v);
    for (const host of inventory.hosts.values()) {
      const known = hosts.get(host.name);
      const vars = fromFile(host.vars, file);
      if (!known) hosts.set(host.name, { ...host, vars });
      else {
        for (const g of host.groups) if (!known.groups.includes(g)) known.groups.push(g);
        for (const [key, v] of vars) known.vars.set(key, v);
      }
    }
    for (const group of inventory.groups.values()) {
      const known = groups.get(group.name);
      const vars = fromFile(group.vars, file);
      if (!known) groups.set(group.name, { ...group, vars });
      else {
        for (const c of group.children) if (!known.children.includes(c)) known.children.push(c);
        for (const [key, v] of vars) known.vars.set(key, v);
      }
    }
  }
  return { format: parts[0]!.inventory.format, hosts, groups, fleetVars };
}
