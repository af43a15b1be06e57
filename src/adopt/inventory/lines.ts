// The two line-per-host inventories: an ssh_config's `Host` entries, and a plain list of hosts.
import { InventoryBuilder, type Inventory, type InventoryProblem } from "./model.js";

/** `Host` names without wildcards or negation: the aliases an ssh_config defines one by one. */
export function readSshConfigInventory(text: string): Inventory | { problems: InventoryProblem[] } {
  const b = new InventoryBuilder("ssh-config");
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const m = /^\s*host(?:\s*=\s*|\s+)(.*)$/i.exec(lines[index]!);
    if (!m) continue;
    for (const word of m[1]!.replace(/#.*$/, "").trim().split(/\s+/)) {
      const name = word.replace(/^"(.*)"$/, "$1");
      if (name && !/[*?!]/.test(name)) b.host(name, index + 1);
    }
  }
  return b.done();
}

/** One host a line; blank lines and `#` comments are skipped. */
export function readHostList(text: string): Inventory | { problems: InventoryProblem[] } {
  const b = new InventoryBuilder("host-list");
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const name = lines[index]!.replace(/#.*$/, "").trim();
    if (!name) continue;
    if (/\s/.test(name)) b.problem(index + 1, "a host list holds one host name a line");
    else b.host(name, index + 1);
  }
  return b.done();
}
