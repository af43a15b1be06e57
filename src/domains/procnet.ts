import { ProbeParseError } from "../errors.js";

// Decoders for the hex addresses of /proc/net files, shared by the routes and ports domains.

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
