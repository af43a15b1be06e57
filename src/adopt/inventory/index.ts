// Reading an inventory for `adopt`: the format told from the content, then the hosts as nodes to
// adopt, each with the manifest keys its inventory variables become and the variables ignored.
import { InventoryErrors } from "../../errors.js";
import type { SshSettings } from "../../manifest/schema.js";
import { readIniInventory } from "./ini.js";
import { readHostList } from "./lines.js";
import {
  joinInventories,
  nameProblem,
  type Inventory,
  type InventoryFormat,
  type InventoryProblem,
  type InventoryVar,
} from "./model.js";
import { readSshArgs } from "./ssh-args.js";
import { localSshConfigSource } from "./ssh-config-files.js";
import { readSshConfigInventory, type SshConfigSource } from "./ssh-config.js";
import type { InventoryTree } from "./sources.js";
import { readVarsFile, readYamlInventory } from "./yaml.js";

export type { Inventory, InventoryFormat } from "./model.js";

const significant = (line: string) => {
  const t = line.trim();
  return t !== "" && !t.startsWith("#") && !t.startsWith(";");
};

/** Which reader an inventory's text is for, from its first significant lines. */
export function detectFormat(text: string): InventoryFormat {
  const lines = text.split("\n", 2000).filter(significant);
  const first = lines[0]?.trim() ?? "";
  if (first.startsWith("{")) return "ansible-json";
  if (lines.some((l) => /^\s*\[[^\]]*\]\s*$/.test(l) || /^\S+\s+[A-Za-z_]\w*=/.test(l)))
    return "ansible-ini";
  if (lines.some((l) => /^\s*(host|match)(\s*=\s*|\s+)\S/i.test(l))) return "ssh-config";
  if (first === "---" || /^[^\s:]+:(\s|$)/.test(first)) return "ansible-yaml";
  return "host-list";
}

/**
 * An inventory's text read as the format it is in; an ssh_config's Includes come from `source`.
 * Throws InventoryErrors naming each line.
 */
export function readInventory(
  file: string,
  text: string,
  source: SshConfigSource = localSshConfigSource(),
): Inventory {
  const format = detectFormat(text);
  const read =
    format === "ansible-ini"
      ? readIniInventory(text)
      : format === "ansible-yaml" || format === "ansible-json"
        ? readYamlInventory(text, format)
        : format === "ssh-config"
          ? readSshConfigInventory(file, text, source)
          : readHostList(text);
  if ("problems" in read) throw new InventoryErrors(file, read.problems);
  return read;
}

/**
 * The inventory files of a tree read and joined as Ansible joins a folder's sources (one file: that
 * file's inventory). Throws InventoryErrors naming each file and line.
 */
export function readInventorySources(
  tree: Pick<InventoryTree, "sources">,
  source: SshConfigSource = localSshConfigSource(),
): Inventory {
  const parts = tree.sources.map(({ file, text }) => ({
    file,
    inventory: readInventory(file, text, source),
  }));
  return parts.length === 1 ? parts[0]!.inventory : joinInventories(parts);
}

/** The variables of group_vars/ and host_vars/, each file's merged over the one before. */
export interface AdjacentVars {
  /** By group name, `all` and `ungrouped` included. */
  groups: Map<string, Map<string, InventoryVar>>;
  hosts: Map<string, Map<string, InventoryVar>>;
  /** Files Ansible Vault encrypted whole: never decrypted, so none of their variables is read. */
  vaultFiles: string[];
}

export const NO_ADJACENT_VARS: AdjacentVars = {
  groups: new Map(),
  hosts: new Map(),
  vaultFiles: [],
};

/** Reads the group_vars and host_vars files; throws InventoryErrors naming each file and line. */
export function readAdjacentVars(
  tree: Pick<InventoryTree, "groupVars" | "hostVars">,
  file: string,
): AdjacentVars {
  const problems: InventoryProblem[] = [];
  const vaultFiles: string[] = [];
  const read = (byName: Map<string, { file: string; text: string }[]>) => {
    const out = new Map<string, Map<string, InventoryVar>>();
    for (const [name, files] of byName) {
      const vars = new Map<string, InventoryVar>();
      for (const one of files) {
        const found = readVarsFile(one.text);
        if ("vault" in found) vaultFiles.push(one.file);
        else if ("problems" in found)
          problems.push(...found.problems.map((p) => ({ ...p, file: one.file })));
        else for (const [key, v] of found.vars) vars.set(key, { ...v, file: one.file });
      }
      out.set(name, vars);
    }
    return out;
  };
  const adjacent = { groups: read(tree.groupVars), hosts: read(tree.hostVars), vaultFiles };
  if (problems.length) throw new InventoryErrors(file, problems);
  return adjacent;
}

/** A host to adopt: its node name, the manifest keys from its variables, its groups. */
export interface HostToAdopt {
  name: string;
  line: number;
  /** `ansible_host`, when it differs from the name. */
  host?: string;
  ssh: SshSettings;
  /** Its inventory groups, most specific only (a group's parents come through the group file). */
  groups: string[];
}

/** What inventory variables become; every other variable is ignored and named. */
const VARIABLES: Record<string, "host" | "user" | "port" | "identity_file" | "ssh_args"> = {
  ansible_host: "host",
  ansible_ssh_host: "host",
  ansible_user: "user",
  ansible_ssh_user: "user",
  ansible_port: "port",
  ansible_ssh_port: "port",
  ansible_ssh_private_key_file: "identity_file",
  ansible_private_key_file: "identity_file",
  ansible_ssh_common_args: "ssh_args",
  ansible_ssh_extra_args: "ssh_args",
};
export const MAPPED_VARIABLES: ReadonlyMap<string, string> = new Map(Object.entries(VARIABLES));

export interface AdoptionPlan {
  hosts: HostToAdopt[];
  /** Hosts adopted without root because their `ansible_become_method` is not sudo: host -> why. */
  becomeUnsupported: Map<string, string>;
  /** Hosts not adopted because a variable needed to reach them cannot be read: host -> why. */
  unreadable: Map<string, string>;
  /** Variables left out because they are vault-encrypted: "name (file)" -> how many hosts. */
  vaulted: Map<string, number>;
  /** Inventory groups: name -> the groups it builds on (its parents), for `groups:` in its file. */
  groups: Map<string, string[]>;
  /** Variables that became no manifest key: name -> how many hosts had it. */
  ignored: Map<string, number>;
  /** Variables left out because their value is a template (`{{ … }}`): name -> how many hosts. */
  templated: Map<string, number>;
}

const TEMPLATE = /\{\{|\{%/;
/** What Ansible's `boolean` filter reads as true (a string lowercased first). */
const ANSIBLE_TRUE = new Set(["y", "yes", "on", "1", "true", "t"]);
/** How Ansible gets root; of its methods, the manifest's `ssh.become` has sudo only. */
const BECOME = "ansible_become";
const BECOME_METHOD = "ansible_become_method";
const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);

/**
 * Each group's depth as Ansible counts it (`all` 0, a group under no other 1, else one more
 * than its deepest parent), computed once per group with a stack of its own.
 */
function groupDepths(parents: ReadonlyMap<string, readonly string[]>, names: Iterable<string>) {
  const depth = new Map<string, number>();
  for (const name of names) {
    const stack = [name];
    while (stack.length) {
      const top = stack.at(-1)!;
      const pending = (parents.get(top) ?? []).filter((p) => !depth.has(p) && !stack.includes(p));
      if (pending.length) {
        stack.push(...pending);
        continue;
      }
      stack.pop();
      const known = (parents.get(top) ?? []).map((p) => depth.get(p) ?? 0);
      depth.set(top, known.length ? Math.max(...known) + 1 : 1);
    }
  }
  return depth;
}

/**
 * The variable a manifest key is read from: of `ansible_ssh_user` and `ansible_user` (and the
 * like), the `ansible_ssh_` one wins wherever each was set, as Ansible's ssh plugin reads them.
 */
function winners(vars: ReadonlyMap<string, InventoryVar>): Map<string, InventoryVar> {
  const out = new Map(vars);
  for (const key of vars.keys()) {
    const plain = key.replace(/^ansible_ssh_/, "ansible_");
    if (plain !== key && MAPPED_VARIABLES.get(plain) === MAPPED_VARIABLES.get(key))
      out.delete(plain);
  }
  return out;
}

/**
 * Each host's variables resolved as Ansible layers them (`all`, then every group it is in,
 * directly or through a child, by depth, `ansible_group_priority` and name, then the host's own)
 * and turned into manifest keys. A templated value is left out and counted. Throws
 * InventoryErrors for a value no manifest can hold (a user that is an ssh option, a bad port).
 */
export function planAdoption(
  file: string,
  inventory: Inventory,
  adjacent: AdjacentVars = NO_ADJACENT_VARS,
): AdoptionPlan {
  const parents = new Map<string, string[]>();
  for (const group of inventory.groups.values())
    for (const child of group.children)
      parents.set(child, [...(parents.get(child) ?? []), group.name]);
  const depth = groupDepths(parents, inventory.groups.keys());
  const priority = (name: string) => {
    const value = Number(inventory.groups.get(name)!.vars.get("ansible_group_priority")?.value);
    return Number.isFinite(value) ? value : 1;
  };
  const order = (a: string, b: string) =>
    depth.get(a)! - depth.get(b)! || priority(a) - priority(b) || (a < b ? -1 : a > b ? 1 : 0);
  // A group's ancestors and itself; computed once per group.
  const lineage = new Map<string, string[]>();
  const lineageOf = (name: string): string[] => {
    const known = lineage.get(name);
    if (known) return known;
    const seen = new Set<string>();
    const stack = [name];
    while (stack.length) {
      const top = stack.pop()!;
      if (seen.has(top)) continue;
      seen.add(top);
      stack.push(...(parents.get(top) ?? []));
    }
    const found = [...seen];
    lineage.set(name, found);
    return found;
  };

  const problems: InventoryProblem[] = [];
  const ignored = new Map<string, number>();
  const templated = new Map<string, number>();
  const vaulted = new Map<string, number>();
  const unreadable = new Map<string, string>();
  const becomeUnsupported = new Map<string, string>();
  const hosts: HostToAdopt[] = [];
  const none = new Map<string, InventoryVar>();
  for (const host of inventory.hosts.values()) {
    // A host in no group is in `ungrouped`, whose group_vars file applies to it.
    const groups = host.groups.length
      ? [...new Set(host.groups.flatMap(lineageOf))].sort(order)
      : ["ungrouped"];
    // Ansible's order: the inventory's variables of all, then of each group; group_vars/all, then
    // each group's; the host's own in the inventory, then host_vars.
    const layers = [
      inventory.fleetVars,
      ...groups.map((g) => inventory.groups.get(g)?.vars ?? none),
      adjacent.groups.get("all") ?? none,
      ...groups.map((g) => adjacent.groups.get(g) ?? none),
      host.vars,
      adjacent.hosts.get(host.name) ?? none,
    ];
    const merged = new Map<string, InventoryVar>();
    for (const layer of layers) for (const [key, v] of layer) merged.set(key, v);
    const vars = winners(merged);
    const adopted: HostToAdopt = { name: host.name, line: host.line, ssh: {}, groups: [] };
    const refuse = (v: InventoryVar, message: string) =>
      problems.push({ line: v.line, message: `host ${host.name}: ${message}`, file: v.file });
    const where = (v: InventoryVar) => `${v.file ?? file}:${v.line}`;
    for (const [key, v] of vars) {
      const target = MAPPED_VARIABLES.get(key);
      // Read below, as a pair.
      if ((key === BECOME || key === BECOME_METHOD) && !v.vault && !TEMPLATE.test(String(v.value)))
        continue;
      if (v.vault) {
        if (target)
          unreadable.set(
            host.name,
            `${key} (${where(v)}) is vault-encrypted: Quartermaster never decrypts a value, and this one is needed to connect${target === "ssh_args" ? " (it may name the jump host)" : ""}`,
          );
        else count(vaulted, `${key} (${v.file ?? file})`);
        continue;
      }
      const text = typeof v.value === "object" ? undefined : String(v.value ?? "");
      if (!target || text === undefined) {
        count(ignored, key);
        continue;
      }
      if (TEMPLATE.test(text)) {
        // A jump host set by a template: the host cannot be reached without it.
        if (target === "ssh_args" && /ProxyJump|ProxyCommand|(^|\s)-J/i.test(text))
          unreadable.set(
            host.name,
            `its jump host is set by ${key} (${where(v)}), a template ({{ … }}) Quartermaster does not evaluate`,
          );
        else count(templated, key);
        continue;
      }
      if (target === "port") {
        const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
        if (!(port >= 1 && port <= 65535)) refuse(v, `${key} ${JSON.stringify(text)} is no port`);
        else adopted.ssh.port = port;
      } else if (target === "identity_file") {
        if (!text || /\p{Cc}/u.test(text))
          refuse(v, `${key} is empty or holds a control character`);
        else adopted.ssh.identity_file = text;
      } else if (target === "ssh_args") {
        const { jump, problem, rest } = readSshArgs(text);
        if (problem) refuse(v, `${key} ${problem}`);
        else if (jump !== undefined) adopted.ssh.proxy_jump = jump;
        if (rest && !problem) count(ignored, `${key} (beyond ProxyJump)`);
      } else {
        const problem = nameProblem("host", text);
        if (problem) refuse(v, `${key}: ${problem.replace(/^host name/, "value")}`);
        else if (target === "user") adopted.ssh.user = text;
        else if (text !== host.name) adopted.host = text;
      }
    }
    // ansible_become true, by sudo unless another method is named: root through sudo.
    const become = vars.get(BECOME);
    const method = vars.get(BECOME_METHOD);
    const usable = (v: InventoryVar | undefined) =>
      v && !v.vault && !TEMPLATE.test(String(v.value));
    if (
      usable(become) &&
      ANSIBLE_TRUE.has(String(become!.value).toLowerCase()) &&
      (!method || usable(method))
    ) {
      const how = method === undefined ? "sudo" : String(method.value);
      if (how === "sudo") adopted.ssh.become = "sudo";
      else
        becomeUnsupported.set(
          host.name,
          `${BECOME_METHOD} ${JSON.stringify(how.slice(0, 80))} (${where(method!)}) is not supported: Quartermaster becomes root through sudo only; adopted without root`,
        );
    }
    // A group that is a parent of another of the host's groups comes in through that group.
    const inherited = new Set(host.groups.flatMap((g) => lineageOf(g).filter((p) => p !== g)));
    adopted.groups = host.groups.filter((g) => !inherited.has(g));
    if (!unreadable.has(host.name)) hosts.push(adopted);
  }
  if (problems.length) throw new InventoryErrors(file, problems);
  const groups = new Map(
    [...inventory.groups.keys()].map((name) => [name, parents.get(name) ?? []] as const),
  );
  return { hosts, becomeUnsupported, unreadable, vaulted, groups, ignored, templated };
}
