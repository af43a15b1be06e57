import { ProbeParseError } from "../../errors.js";
import { canonicalIPv6, ipv4FromProcHex, ipv6FromProcHex, isIPv4, isIPv6 } from "../procnet.js";

export interface LiveRoute {
  family: 4 | 6;
  /** `default`, `10.1.0.0/16`, or a bare address for a host route, as `ip route` prints them. */
  dst: string;
  via?: string;
  dev: string;
  metric: number;
}

export interface RoutesLive {
  /** Routes of the main table, without those the kernel makes for local addresses. */
  routes: LiveRoute[];
}

const SECTION = "routes";
const RTF_GATEWAY = 0x2;
const RTF_REJECT = 0x200;
const RTF_ANYCAST = 0x100000;
const RTF_CACHE = 0x1000000;
const RTF_LOCAL = 0x80000000;

/** The metric `ip route add` uses when none is given; snapshots and keys leave it out. */
export function defaultMetric(family: 4 | 6): number {
  return family === 4 ? 0 : 1024;
}

/** `10.0.0.0` + 8 -> `10.0.0.0/8`; /0 is `default`, a host route is the bare address. */
export function formatDst(address: string, prefix: number, family: 4 | 6): string {
  if (prefix === 0) return "default";
  return prefix === (family === 4 ? 32 : 128) ? address : `${address}/${prefix}`;
}

/**
 * A declared destination in the form live routes use; throws with a message an operator can act on.
 */
export function canonicalDst(dst: string): { family?: 4 | 6; dst: string } {
  if (dst === "default") return { dst };
  const [address = "", len, ...rest] = dst.split("/");
  const family = isIPv4(address) ? 4 : isIPv6(address) ? 6 : undefined;
  const bits = family === 4 ? 32 : 128;
  const prefix = len === undefined ? bits : /^\d{1,3}$/.test(len) ? Number(len) : NaN;
  if (!family || rest.length || !(prefix >= 0 && prefix <= bits))
    throw new Error(`"${dst}" is not "default" or a CIDR like 10.1.0.0/16`);
  const value = addressValue(family === 4 ? address : canonicalIPv6(address), family);
  if ((value & ~maskValue(prefix, family) & allOnes(family)) !== 0n)
    throw new Error(
      `"${dst}" has host bits set; the network is ${formatDst(addressText(value & maskValue(prefix, family), family), prefix, family)}`,
    );
  return {
    family,
    dst: formatDst(family === 4 ? address : canonicalIPv6(address), prefix, family),
  };
}

/**
 * `FILE:line` output of /proc/net/route, ipv6_route and if_inet6, plus `local:ADDR` for each
 * IPv4 address fib_trie marks `/32 host LOCAL`.
 *
 * Kernel-made routes (`proto kernel` in `ip route`) are left out, since /proc does not print the
 * protocol: an IPv4 route without gateway whose network holds a local address; IPv6 routes on lo,
 * fe80::/64, ff00::/8, local, anycast and cached routes, and the route to the prefix of each
 * address in if_inet6 (whose flags column cannot show noprefixroute). /proc/net/route shows only
 * the main table, but ipv6_route shows every table, so IPv6 policy-routing tables read as main.
 * Routes without a device (unreachable, blackhole, prohibit) are left out: a declaration cannot
 * express them.
 */
export function parseRoutes(text: string): RoutesLive {
  const tables = readTables(text);
  // Without the header, /proc/net/route was not read: an empty table would be a false report.
  if (!tables.sawRouteHeader)
    throw new ProbeParseError(SECTION, "no /proc/net/route in the output");
  return { routes: [...userRoutes4(tables), ...userRoutes6(tables)] };
}

interface Route4 {
  dst: bigint;
  prefix: number;
  via?: string;
  dev: string;
  metric: number;
}

interface Route6 extends Route4 {
  flags: number;
}

/** What the probe output holds, each line read by its file. */
interface Tables {
  v4: Route4[];
  v6: Route6[];
  local4: Set<bigint>;
  /**
   * `dev prefix network` of each address's own prefix route: looked up, never scanned, so parsing
   * stays linear.
   */
  prefixes6: Set<string>;
  sawRouteHeader: boolean;
}

function readTables(text: string): Tables {
  const tables: Tables = {
    v4: [],
    v6: [],
    local4: new Set(),
    prefixes6: new Set(),
    sawRouteHeader: false,
  };
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const colon = line.indexOf(":");
    const file = line.slice(0, colon);
    const fields = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/);
    if (file === "/proc/net/route") readRoute4(fields, line, tables);
    else if (file === "/proc/net/ipv6_route") readRoute6(fields, line, tables);
    else if (file === "/proc/net/if_inet6") readAddress6(fields, line, tables);
    else if (file === "local") {
      if (!isIPv4(fields[0]!)) bad(line);
      tables.local4.add(addressValue(fields[0]!, 4));
    } else bad(line);
  }
  return tables;
}

/** A line of /proc/net/route: its header, or a route (reject routes and those without a device left out). */
function readRoute4(fields: string[], line: string, tables: Tables): void {
  if (fields[0] === "Iface") {
    tables.sawRouteHeader = true;
    return;
  }
  if (
    fields.length !== 11 ||
    !fields.slice(1, 4).every(isHex) ||
    !isHex(fields[7]!) ||
    !/^\d+$/.test(fields[6]!)
  )
    bad(line);
  const [dev, dstHex, gwHex, flagsHex, , , metric, maskHex] = fields as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const flags = parseInt(flagsHex, 16);
  if (flags & RTF_REJECT || dev === "*") return;
  const mask = addressValue(ipv4FromProcHex(maskHex, SECTION), 4);
  const prefix = prefixOfMask(mask, line);
  const route = {
    dst: addressValue(ipv4FromProcHex(dstHex, SECTION), 4),
    prefix,
    dev,
    metric: Number(metric),
  };
  tables.v4.push(flags & RTF_GATEWAY ? { ...route, via: ipv4FromProcHex(gwHex, SECTION) } : route);
}

/** A line of /proc/net/ipv6_route. */
function readRoute6(fields: string[], line: string, tables: Tables): void {
  if (fields.length !== 10 || !fields.slice(0, 9).every(isHex)) bad(line);
  const [dstHex, lenHex, , , hopHex, metricHex, , , flagsHex, dev] = fields as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const route = {
    dst: BigInt(`0x${dstHex}`),
    prefix: parseInt(lenHex, 16),
    dev,
    metric: parseInt(metricHex, 16),
    flags: parseInt(flagsHex, 16),
  };
  if (route.prefix > 128) bad(line);
  tables.v6.push(
    route.flags & RTF_GATEWAY ? { ...route, via: ipv6FromProcHex(hopHex, SECTION) } : route,
  );
}

/** A line of /proc/net/if_inet6: the address's own prefix route, as the kernel makes it. */
function readAddress6(fields: string[], line: string, tables: Tables): void {
  if (fields.length !== 6 || !fields.slice(0, 5).every(isHex)) bad(line);
  const prefix = parseInt(fields[2]!, 16);
  if (prefix > 128) bad(line);
  tables.prefixes6.add(`${fields[5]} ${prefix} ${BigInt(`0x${fields[0]}`) & maskValue(prefix, 6)}`);
}

/** The IPv4 routes but those the kernel made: without gateway, to a network holding a local address. */
function userRoutes4({ v4, local4 }: Tables): LiveRoute[] {
  // Each local address masked to every prefix length a route uses (at most 33): a set lookup per
  // route instead of comparing every route with every address.
  const localNetworks = new Set<string>();
  for (const prefix of new Set(v4.map((r) => r.prefix))) {
    for (const a of local4) localNetworks.add(`${prefix} ${a & maskValue(prefix, 4)}`);
  }
  const routes: LiveRoute[] = [];
  for (const r of v4) {
    const kernelMade = !r.via && localNetworks.has(`${r.prefix} ${r.dst}`);
    if (!kernelMade) routes.push(liveRoute(4, r));
  }
  return routes;
}

/** The IPv6 routes but those the kernel made (see parseRoutes). */
function userRoutes6({ v6, prefixes6 }: Tables): LiveRoute[] {
  const routes: LiveRoute[] = [];
  for (const r of v6) {
    const kernelMade =
      r.dev === "lo" ||
      r.flags & (RTF_LOCAL | RTF_ANYCAST | RTF_CACHE | RTF_REJECT) ||
      (r.prefix === 64 && r.dst === 0xfe80n << 112n) ||
      (r.prefix === 8 && r.dst === 0xffn << 120n) ||
      (!r.via && prefixes6.has(`${r.dev} ${r.prefix} ${r.dst}`));
    if (!kernelMade) routes.push(liveRoute(6, r));
  }
  return routes;
}

function liveRoute(family: 4 | 6, r: Route4): LiveRoute {
  const route: LiveRoute = {
    family,
    dst: formatDst(addressText(r.dst, family), r.prefix, family),
    dev: r.dev,
    metric: r.metric,
  };
  if (r.via) route.via = r.via;
  return route;
}

function bad(line: string): never {
  throw new ProbeParseError(SECTION, `unexpected line "${line.slice(0, 100)}"`);
}

function isHex(s: string): boolean {
  return /^[0-9A-Fa-f]+$/.test(s);
}

function allOnes(family: 4 | 6): bigint {
  return (1n << BigInt(family === 4 ? 32 : 128)) - 1n;
}

function maskValue(prefix: number, family: 4 | 6): bigint {
  const bits = family === 4 ? 32 : 128;
  return allOnes(family) ^ ((1n << BigInt(bits - prefix)) - 1n);
}

// The 33 IPv4 netmasks, looked up rather than rebuilt for every route.
const PREFIX_OF_MASK = new Map(
  Array.from({ length: 33 }, (_, prefix) => [maskValue(prefix, 4), prefix]),
);

function prefixOfMask(mask: bigint, line: string): number {
  return PREFIX_OF_MASK.get(mask) ?? bad(line);
}

function addressValue(address: string, family: 4 | 6): bigint {
  if (family === 4) return address.split(".").reduce((v, octet) => (v << 8n) | BigInt(octet), 0n);
  return BigInt(`0x${expandIPv6(address)}`);
}

function addressText(value: bigint, family: 4 | 6): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((shift) => (value >> shift) & 0xffn).join(".");
  return canonicalIPv6(value.toString(16).padStart(32, "0").match(/.{4}/g)!.join(":"));
}

/** Canonical IPv6 text -> 32 hex digits. */
function expandIPv6(address: string): string {
  const [head = "", tail] = address.split("::");
  const groups = (s: string) => (s ? s.split(":") : []);
  const missing = 8 - groups(head).length - groups(tail ?? "").length;
  const all = [
    ...groups(head),
    ...(tail === undefined ? [] : Array(missing).fill("0")),
    ...groups(tail ?? ""),
  ];
  return all.map((g) => g.padStart(4, "0")).join("");
}
