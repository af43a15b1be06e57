import { ProbeParseError } from "../errors.js";

// Addresses as the routes and ports domains read them: the hex of /proc/net files decoded, IPv6
// text made canonical, and text checked for an IP address.

/** `0100007F` -> 127.0.0.1: /proc/net prints an IPv4 address as one little-endian 32-bit word. */
export function ipv4FromProcHex(hex: string, section: string): string {
  if (!/^[0-9A-Fa-f]{8}$/.test(hex))
    throw new ProbeParseError(section, `"${hex}" is not an IPv4 address in hex`);
  const bytes = [0, 2, 4, 6].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return bytes.reverse().join(".");
}

/**
 * 32 hex digits -> canonical IPv6 text. `littleEndianWords`: /proc/net/tcp6 and udp6 print four
 * 32-bit words in host order, while ipv6_route and if_inet6 print the bytes in network order.
 */
export function ipv6FromProcHex(hex: string, section: string, littleEndianWords = false): string {
  if (!/^[0-9A-Fa-f]{32}$/.test(hex))
    throw new ProbeParseError(section, `"${hex}" is not an IPv6 address in hex`);
  const ordered = littleEndianWords
    ? [0, 8, 16, 24]
        .map((i) =>
          hex
            .slice(i, i + 8)
            .match(/../g)!
            .reverse()
            .join(""),
        )
        .join("")
    : hex;
  return canonicalIPv6(ordered.match(/.{4}/g)!.join(":"));
}

/** RFC 5952 text (lower case, longest zero run compressed): the form `ip -6` prints. */
export function canonicalIPv6(address: string): string {
  return new URL(`http://[${address}]/`).hostname.slice(1, -1);
}

// The same addresses node:net's isIPv4 and isIPv6 take (a test compares them), checked part by part:
// node:net's IPv6 expression is compiled on its first use, about 3 ms of a manifest's validation.
const IPV4_PART = /^(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])$/;
const IPV6_GROUP = /^[0-9a-fA-F]{1,4}$/;
const ZONE = /^[0-9a-zA-Z.:-]+$/;

/** Whether `text` is an IPv4 address: four decimal parts of 0 to 255, none with a leading zero. */
export function isIPv4(text: string): boolean {
  const parts = text.split(".");
  return parts.length === 4 && parts.every((part) => IPV4_PART.test(part));
}

/**
 * Whether `text` is an IPv6 address: eight groups of 1 to 4 hex digits, a run of them written `::`
 * at most once, the last two as an IPv4 address if need be, then a zone (`%eth0`) if any.
 */
export function isIPv6(text: string): boolean {
  const percent = text.indexOf("%");
  if (percent !== -1 && !ZONE.test(text.slice(percent + 1))) return false;
  const halves = (percent === -1 ? text : text.slice(0, percent)).split("::");
  if (halves.length > 2) return false;
  const [head, tail] = halves.map((half) => (half === "" ? [] : half.split(":")));
  // Only the last group written may be an IPv4 address.
  const written = tail ?? head!;
  const last = written.at(-1);
  const ipv4 = last !== undefined && last.includes(".");
  if (ipv4 && !isIPv4(written.pop()!)) return false;
  const groups = [...head!, ...(tail ?? [])];
  if (!groups.every((group) => IPV6_GROUP.test(group))) return false;
  const count = groups.length + (ipv4 ? 2 : 0);
  return tail ? count <= 7 : count === 8;
}

/** 4 or 6 for an IPv4 or IPv6 address, 0 for anything else: node:net's isIP. */
export const isIP = (text: string): 0 | 4 | 6 => (isIPv4(text) ? 4 : isIPv6(text) ? 6 : 0);
