import type { Holder } from "../holder.js";

const MAX_PIDS = 5;
const MAX_GROUPS = 3;

/** The holders of a listener's sockets on these addresses, each process once. */
export function holdersOf(
  holders: ReadonlyMap<string, Holder[]> | undefined,
  port: string,
  addresses: readonly string[],
): Holder[] {
  const seen = new Map<string, Holder>();
  for (const address of addresses)
    for (const holder of holders?.get(`${port}@${address}`) ?? [])
      seen.set(`${holder.pid ?? ""} ${holder.uid}`, holder);
  return [...seen.values()].sort((a, b) => (a.pid ?? 0) - (b.pid ?? 0));
}

const who = (holder: Holder) =>
  holder.user !== undefined ? `user ${holder.user}` : `uid ${holder.uid}`;

/**
 * Holders in words, one group per process name and user: "nginx, pids 100, 101, user www-data;
 * process unknown, user root". Host text, raw: each format escapes it where it shows it.
 */
export function holderWords(holders: readonly Holder[]): string {
  const groups = new Map<string, { name: string; pids: number[]; who: string }>();
  for (const holder of holders) {
    const name = holder.pid === undefined ? "process unknown" : (holder.name ?? "name unknown");
    const key = JSON.stringify([name, holder.uid]);
    const group = groups.get(key) ?? { name, pids: [], who: who(holder) };
    if (holder.pid !== undefined) group.pids.push(holder.pid);
    groups.set(key, group);
  }
  const words = [...groups.values()].slice(0, MAX_GROUPS).map(({ name, pids, who }) => {
    const more = pids.length > MAX_PIDS ? ` and ${pids.length - MAX_PIDS} more` : "";
    const listed = pids.slice(0, MAX_PIDS).join(", ");
    return [
      name,
      ...(pids.length ? [`pid${pids.length > 1 ? "s" : ""} ${listed}${more}`] : []),
      who,
    ].join(", ");
  });
  const others = groups.size - MAX_GROUPS;
  return [...words, ...(others > 0 ? [`${others} more`] : [])].join("; ");
}
