import { ProbeParseError } from "../../errors.js";
import { ipv4FromProcHex, ipv6FromProcHex } from "../procnet.js";

/** `tcp/22` -> the local addresses it listens on (`0.0.0.0`, `[::1]`), sorted. */
export type PortsLive = Map<string, string[]>;

const SECTION = "ports";
const TCP_LISTEN = "0A";
const UDP_UNCONNECTED = "07";
const FILES = /^\/proc\/net\/(tcp|udp)(6?)$/;
const ENTRY =
  /^\s*\d+: ([0-9A-F]{8}|[0-9A-F]{32}):([0-9A-F]{4}) ([0-9A-F]{8}|[0-9A-F]{32}):([0-9A-F]{4}) ([0-9A-F]{2}) /;

/** Orders `tcp/22` before `tcp/443` before `udp/53`. */
export function comparePorts(a: string, b: string): number {
  const [protoA = "", portA = ""] = a.split("/");
  const [protoB = "", portB = ""] = b.split("/");
  return protoA === protoB ? Number(portA) - Number(portB) : protoA < protoB ? -1 : 1;
}

/**
 * `FILE:line` output of /proc/net/{tcp,tcp6,udp,udp6}: each file's header and its socket lines
 * (`/proc/net/tcp:   0: 00000000:0016 00000000:0000 0A ...`), whole or, as the probe sends
 * them, cut after the state (`/proc/net/tcp: 0: 00000000:0016 00000000:0000 0A `). A TCP socket
 * listens in state 0A; a UDP socket receives from anyone when bound and unconnected: state 07,
 * remote address zero.
 */
export function parsePorts(text: string): PortsLive {
  const listening = new Map<string, Set<string>>();
  let sawTcpHeader = false;
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const colon = line.indexOf(":");
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
    const [, localHex, portHex, remoteHex, remotePortHex, state] = m as unknown as [
      string,
      string,
      string,
      string,
      string,
      string,
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
    const key = `${proto}/${parseInt(portHex, 16)}`;
    listening.set(key, (listening.get(key) ?? new Set()).add(address));
  }
  // Without the header, /proc/net/tcp was not read: no listeners would be a false report.
  if (!sawTcpHeader) throw new ProbeParseError(SECTION, "no /proc/net/tcp in the output");
  return new Map(
    [...listening.keys()].sort(comparePorts).map((key) => [key, [...listening.get(key)!].sort()]),
  );
}
