import { ProbeParseError } from "../../errors.js";
import type { Holder } from "../holder.js";
import { canonicalIPv6, ipv4FromProcHex, ipv6FromProcHex, isIPv4, isIPv6 } from "../procnet.js";

export interface PortsLive {
  /** `tcp/22` -> the local addresses it listens on (`0.0.0.0`, `[::1]`), sorted. */
  listeners: Map<string, string[]>;
  /**
   * `tcp/22@0.0.0.0` -> who holds its sockets, when the host sent each socket's uid and inode:
   * the socket's user always, its processes where the audit user may read their descriptors.
   */
  holders?: Map<string, Holder[]>;
  /** The kernel's ephemeral port range (`ip_local_port_range`), when the host showed it. */
  ephemeral?: { low: number; high: number };
}

const SECTION = "ports";
const TCP_LISTEN = "0A";
const UDP_UNCONNECTED = "07";
const FILES = /^\/proc\/net\/(tcp|udp)(6?)$/;
export const EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range";
const RANGE = /^ ([1-9]\d{0,4}) ([1-9]\d{0,4})$/;
// The socket's uid and inode follow the state, after the queues, the timer and the retransmits.
const ENTRY =
  /^\s*\d+: ([0-9A-F]{8}|[0-9A-F]{32}):([0-9A-F]{4}) ([0-9A-F]{8}|[0-9A-F]{32}):([0-9A-F]{4}) ([0-9A-F]{2}) (?:\S+ \S+ \S+ +(\d{1,10}) +\d+ (\d{1,20})(?: |$))?/;
/** A TCP listener as ss shows it: local address (an interface after `%`), port, uid and inode. */
const SS_HEADER = "ss: tcp listening";
const SS_ENTRY =
  /^ss: (\*|\[[0-9A-Fa-f:.]+\]|[0-9.]+)(?:%[^\s:]*)?:(\d{1,5}) (\d{1,10}) (\d{1,20})$/;
/** Who holds the sockets, after the tables: `process: PID INODE`, `comm: PID HEX`, `user: UID HEX`. */
const HOLDER_LINE =
  /^(?:process: (\d{1,10}) (\d{1,20})|(comm|user): (\d{1,10}) ((?:[0-9a-f]{2}){1,256}))$/;

/** Orders `tcp/22` before `tcp/443` before `udp/53`. */
export function comparePorts(a: string, b: string): number {
  const [protoA = "", portA = ""] = a.split("/");
  const [protoB = "", portB = ""] = b.split("/");
  return protoA === protoB ? Number(portA) - Number(portB) : protoA < protoB ? -1 : 1;
}

/** Text the probe sent as hex (a process or user name: any bytes but NUL), as UTF-8. */
const fromHex = (hex: string) => Buffer.from(hex, "hex").toString("utf8");

/** An ss address as /proc/net/tcp6 or tcp would give it: `*` is the IPv6 any address. */
function ssAddress(text: string): string | undefined {
  if (text === "*") return "[::]";
  const bare = text.replace(/^\[(.*)\]$/, "$1");
  if (bare !== text) return isIPv6(bare) ? `[${canonicalIPv6(bare)}]` : undefined;
  return isIPv4(text) ? text : undefined;
}

/**
 * `FILE:line` output of /proc/net/{tcp,tcp6,udp,udp6} and of the ephemeral port range
 * (`/proc/sys/net/ipv4/ip_local_port_range: 32768 60999`, optional): each file's header and its socket lines
 * (`/proc/net/tcp:   0: 00000000:0016 00000000:0000 0A ...`), whole, cut after the inode as the
 * probe sends them, or cut after the state (no uid, no inode: no holders). A TCP socket
 * listens in state 0A; a UDP socket receives from anyone when bound and unconnected: state 07,
 * remote address zero. After the tables, the holder lines (optional) say which processes hold
 * which socket inodes, the processes' names and the users' names. TCP listeners may come from
 * ss instead of the /proc tables: `ss: tcp listening`, then `ss: ADDRESS:PORT UID INODE` lines.
 */
export function parsePorts(text: string): PortsLive {
  const listening = new Map<string, Set<string>>();
  let sawTcpHeader = false;
  let ephemeral: PortsLive["ephemeral"];
  // Socket inode -> its listener and uid; then inode -> pids, pid -> name, uid -> user name.
  const sockets = new Map<string, { listener: string; uid: number }>();
  const pids = new Map<string, number[]>();
  const names = new Map<number, string>();
  const users = new Map<number, string>();
  const add = (key: string, address: string, uid?: string, inode?: string) => {
    listening.set(key, (listening.get(key) ?? new Set()).add(address));
    if (uid !== undefined && inode !== undefined && inode !== "0")
      sockets.set(inode, { listener: `${key}@${address}`, uid: Number(uid) });
  };
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const holder = HOLDER_LINE.exec(line);
    if (holder) {
      const [, pid, inode, kind, id, hex] = holder;
      const held = pid === undefined ? undefined : pids.get(inode!);
      if (held) held.push(Number(pid));
      else if (pid !== undefined) pids.set(inode!, [Number(pid)]);
      else (kind === "comm" ? names : users).set(Number(id), fromHex(hex!));
      continue;
    }
    if (line === SS_HEADER) {
      sawTcpHeader = true;
      continue;
    }
    const ss = SS_ENTRY.exec(line);
    if (ss) {
      const [, local, port, uid, inode] = ss as unknown as [string, string, string, string, string];
      const address = ssAddress(local);
      if (!address || Number(port) > 65535)
        throw new ProbeParseError(SECTION, `unexpected line "${line.slice(0, 100)}"`);
      add(`tcp/${Number(port)}`, address, uid, inode);
      continue;
    }
    const colon = line.indexOf(":");
    if (line.slice(0, colon) === EPHEMERAL_RANGE_FILE) {
      const range = RANGE.exec(line.slice(colon + 1));
      const [low, high] = range ? [Number(range[1]), Number(range[2])] : [0, 0];
      if (ephemeral || !range || low > high || high > 65535)
        throw new ProbeParseError(SECTION, `unexpected line "${line.slice(0, 100)}"`);
      ephemeral = { low, high };
      continue;
    }
    const file = FILES.exec(line.slice(0, colon));
    if (!file) throw new ProbeParseError(SECTION, `unexpected line "${line.slice(0, 100)}"`);
    const rest = line.slice(colon + 1);
    if (/^\s*sl\s/.test(rest)) {
      if (file[0] === "/proc/net/tcp") sawTcpHeader = true;
      continue;
    }
    const m = ENTRY.exec(rest);
    const ipv6 = file[2] === "6";
    if (!m || m[1]!.length !== (ipv6 ? 32 : 8))
      throw new ProbeParseError(SECTION, `unexpected line "${line.slice(0, 100)}"`);
    const [, localHex, portHex, remoteHex, remotePortHex, state, uid, inode] = m as unknown as [
      string,
      string,
      string,
      string,
      string,
      string,
      string | undefined,
      string | undefined,
    ];
    const proto = file[1]!;
    const listens =
      proto === "tcp"
        ? state === TCP_LISTEN
        : state === UDP_UNCONNECTED && /^0+$/.test(remoteHex + remotePortHex);
    if (!listens) continue;
    const address = ipv6
      ? `[${ipv6FromProcHex(localHex, SECTION, true)}]`
      : ipv4FromProcHex(localHex, SECTION);
    add(`${proto}/${parseInt(portHex, 16)}`, address, uid, inode);
  }
  // Without the header, neither ss nor /proc/net/tcp was read: no listeners would be a false report.
  if (!sawTcpHeader) throw new ProbeParseError(SECTION, "no /proc/net/tcp in the output");
  const listeners = new Map(
    [...listening.keys()].sort(comparePorts).map((key) => [key, [...listening.get(key)!].sort()]),
  );
  return {
    listeners,
    ...(sockets.size > 0 && { holders: socketHolders(sockets, pids, names, users) }),
    ...(ephemeral && { ephemeral }),
  };
}

/**
 * Each listener's holders: one per process that holds one of its sockets, or, for a socket no
 * readable process holds, its user alone (the process is not known).
 */
function socketHolders(
  sockets: Map<string, { listener: string; uid: number }>,
  pids: Map<string, number[]>,
  names: Map<number, string>,
  users: Map<number, string>,
): Map<string, Holder[]> {
  const holders = new Map<string, Holder[]>();
  for (const [inode, { listener, uid }] of sockets) {
    const user = users.get(uid);
    const owner = { uid, ...(user !== undefined && { user }) };
    const held: Holder[] = (pids.get(inode) ?? []).map((pid) => {
      const name = names.get(pid);
      return { pid, ...(name !== undefined && { name }), ...owner };
    });
    const known = holders.get(listener);
    if (known) known.push(...(held.length ? held : [owner]));
    else holders.set(listener, held.length ? held : [owner]);
  }
  return holders;
}
