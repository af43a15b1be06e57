// The sysctl.conf-style list form of a map: `- net.ipv4.tcp_syncookies = 1`. Shared by the domains
// that accept it and by the manifest editor, which must read and write items exactly as the loader
// reads them.

/** `name = value` -> [name, value]; undefined when the item is not of that form. */
export function parseNameValue(item: string): [string, string] | undefined {
  const m = /^\s*([^=\s]+)\s*=\s*(.*?)\s*$/.exec(item);
  return m ? [m[1]!, m[2]!] : undefined;
}
