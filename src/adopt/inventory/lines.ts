// A plain list of hosts, one a line.
import { InventoryBuilder, type Inventory, type InventoryProblem } from "./model.js";

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
