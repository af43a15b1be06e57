// A host entry as Ansible reads it in INI and YAML alike: ranges (`web[01:20]`, `www[01:50:2]`,
// `db-[a:c]`) expanded, and `host:port` or `[v6]:port` split into the name and its port.

/** A range, `[01:20]`, `[01:50:2]` or `[a:c]`. */
const RANGE = /\[([0-9]+|[a-z]):([0-9]+|[a-z])(?::([0-9]+))?\]/;
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
      const [from, to, step = "1"] = [m[1]!, m[2]!, m[3]];
      const numeric = /^\d/.test(from);
      if (numeric !== /^\d/.test(to))
        return { error: `range [${from}:${to}] mixes digits and letters` };
      const [low, high] = numeric
        ? [Number(from), Number(to)]
        : [from.charCodeAt(0), to.charCodeAt(0)];
      const stride = Number(step);
      if (low > high) return { error: `range [${from}:${to}] runs backwards` };
      if (!(stride >= 1)) return { error: `range [${m[0].slice(1, -1)}] has a step below 1` };
      if (next.length + (high - low) / stride + 1 > MAX_EXPANSION)
        return { error: `range [${from}:${to}] stands for more than ${MAX_EXPANSION} hosts` };
      // A leading zero pads every number to the width of the first (`[01:10]`).
      const width = numeric && from.startsWith("0") ? from.length : 0;
      for (let i = low; i <= high; i += stride) {
        const part = numeric ? String(i).padStart(width, "0") : String.fromCharCode(i);
        next.push(name.slice(0, m.index) + part + name.slice(m.index + m[0].length));
      }
    }
    names = next;
  }
  if (names.some((n) => RANGE.test(n))) return { error: "more than 4 ranges in one pattern" };
  return names;
}

/**
 * A host entry's name and port, as Ansible's parse_address splits it: `[2001:db8::1]:2222` and
 * `host:2222` carry a port; a bare IPv6 address (more than one colon) does not.
 */
export function splitHostPort(entry: string): { name: string; port?: string } {
  const v6 = /^\[([0-9A-Fa-f:.]+)\](?::(\d+))?$/.exec(entry);
  if (v6) return { name: v6[1]!, ...(v6[2] !== undefined && { port: v6[2] }) };
  const m = /^([^:]+):(\d+)$/.exec(entry);
  return m ? { name: m[1]!, port: m[2]! } : { name: entry };
}

/** The hosts an inventory entry names, each with the port it gives them. */
export function hostEntry(entry: string): { names: string[]; port?: string } | { error: string } {
  const { name, port } = splitHostPort(entry);
  const names = expandHostPattern(name);
  if (!Array.isArray(names)) return names;
  return { names, ...(port !== undefined && { port }) };
}
