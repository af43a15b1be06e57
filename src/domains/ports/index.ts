import * as z from "zod";
import { pathIn, type Domain, type Finding } from "../domain.js";
import { isIPv4, isIPv6 } from "node:net";
import { canonicalIPv6 } from "../procnet.js";
import { DEFAULT_SNAPSHOT_OPTIONS } from "../snapshot-options.js";
import { holdersOf, holderWords } from "./holders.js";
import { comparePorts, EPHEMERAL_RANGE_FILE, parsePorts, type PortsLive } from "./parse.js";

/**
 * One allow-list item: `tcp/22` (any address), `tcp/9100@127.0.0.1` or `udp/53@::1` (that
 * address only), `tcp/*@loopback` (any port on 127.0.0.0/8 or ::1), `tcp/32768-60999` (a range,
 * such as the kernel's ephemeral ports).
 */
export interface AllowedPort {
  proto: string;
  low: number;
  high: number;
  /** undefined: any address; "loopback"; or an address as the probe shows it (0.0.0.0, [::1]). */
  address?: string;
}

const ITEM = /^(tcp|udp)\/(\*|[1-9]\d{0,4}(?:-[1-9]\d{0,4})?)(?:@(.+))?$/;

/** The allow-list item `text` states, or why it states none. */
export function allowedPort(text: string): AllowedPort | { error: string } {
  const m = ITEM.exec(text);
  if (!m)
    return {
      error: 'a port like "tcp/22", "udp/53@127.0.0.1", "tcp/32768-60999" or "tcp/*@loopback"',
    };
  const [low, high] =
    m[2] === "*"
      ? [1, 65535]
      : m[2]!
          .split("-")
          .map(Number)
          .concat(m[2]!.includes("-") ? [] : [Number(m[2])]);
  if (low! < 1 || high! > 65535 || low! > high!)
    return { error: `${m[2]}: ports run from 1 to 65535, the low one first` };
  const address = m[3] === undefined || m[3] === "loopback" ? m[3] : liveAddress(m[3]);
  if (address === undefined && m[3] !== undefined)
    return { error: `${m[3]}: an IPv4 or IPv6 address, or loopback` };
  return { proto: m[1]!, low: low!, high: high!, ...(address !== undefined && { address }) };
}

/**
 * An address as the probe shows it: IPv4 dotted, IPv6 canonical in brackets; undefined if it is
 * neither.
 */
function liveAddress(text: string): string | undefined {
  if (isIPv4(text)) return text;
  const bare = text.replace(/^\[(.*)\]$/, "$1");
  return isIPv6(bare) ? `[${canonicalIPv6(bare)}]` : undefined;
}

const isLoopback = (address: string) => address.startsWith("127.") || address === "[::1]";

function allows(item: AllowedPort, proto: string, port: number, address: string): boolean {
  if (item.proto !== proto || port < item.low || port > item.high) return false;
  return (
    item.address === undefined ||
    (item.address === "loopback" ? isLoopback(address) : item.address === address)
  );
}

/**
 * Unauthorized listeners past this many are one item counting them: one user opening thousands of
 * ports adds one item to the report and the run history, not thousands.
 */
export const MAX_UNAUTHORIZED_ITEMS = 50;
/** Holders an item lists at most. */
const MAX_ITEM_HOLDERS = 20;
/** The key of that item: no allow-list entry looks like it. */
export const OTHER_LISTENERS = "other listeners";

const Port = z
  .string()
  .superRefine((text, ctx) => {
    const item = allowedPort(text);
    if ("error" in item) ctx.addIssue({ code: "custom", message: item.error });
  })
  .describe(
    'proto/port: "tcp/22" (any address; must listen), "tcp/9100@127.0.0.1" or "udp/53@::1" (that address only; must listen there), "tcp/*@loopback" (any port on 127.0.0.0/8 or ::1), "tcp/32768-60999" (a range, any address), "tcp/32768-60999@loopback" (a range on loopback); ranges and * only allow',
  );
export const PortsDeclared = z.array(Port);
export type PortsDeclared = z.infer<typeof PortsDeclared>;

// One awk reads the socket tables and the ephemeral range. TCP listeners come from `ss` when it
// runs (sock_diag asked for listening sockets only), else from /proc/net/tcp and tcp6, whose every
// read walks the kernel's whole TCP table, connections of every network namespace included: on a
// busy host most of the probe's CPU. Of each listening socket it sends the fields up to its uid and
// inode (of an ss line: the local address, uid and inode), not the queues and timers after them.
// Only when some listener is not allowed by an any-address item of the allow-list (`qm_allow`:
// `proto low high` triples) is it worth knowing who holds it: then `find` says which process holds
// which socket inode (for every process whose descriptors the audit user may read), and the holders
// of listening sockets are sent with the processes' and users' names. Those walk every process and
// start two more processes: a clean host pays for neither. Names are any bytes but NUL (a newline
// too): sent as hex.

// Run by awk through sh: double quotes only, the awk program being inside single quotes.
const HOLDERS_FIND = String.raw`find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 -lname \"socket:\\[*\\]\" -printf \"%h %l\\n\" 2>/dev/null`;
// ss's exit status follows its lines: a failed or missing ss sends the /proc tables (`qm_tcp`) instead.
// The probe's shell pipes it into awk, which reads it from /dev/stdin in BEGIN (no shell of awk's
// own started for it) and never closes it: mawk 1.3.4 crashes closing /dev/stdin.
const SS_LISTENERS = `{ ss -Htne state listening 2>/dev/null; echo "qm-ss $?"; }`;
const LISTENER_LINES = [
  'BEGIN { for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i; n = split(qm_allow, a, " "); for (i = 1; i + 2 <= n; i += 3) { ap[++na] = a[i]; al[na] = a[i + 1] + 0; ah[na] = a[i + 2] + 0 };',
  'while ((getline line < "/dev/stdin") > 0) { if (line ~ /^qm-ss /) st = line; else ss[++ns] = line }',
  'if (st != "qm-ss 0") { n = split(qm_tcp, a, " "); for (i = 1; i <= n; i++) ARGV[ARGC++] = a[i]; ns = 0 } else { print "ss: tcp listening" }; for (i = 1; i <= ns; i++) listener(ss[i]) }',
  // An ss line: queues, local and peer address, then uid (left out when 0), inode and the rest.
  'function listener(line,   f, n, i, u, ino) { n = split(line, f, " "); u = 0; ino = 0; for (i = n; i > 4; i--) { if (f[i] ~ /^uid:[0-9]+$/) u = substr(f[i], 5); if (f[i] ~ /^ino:[0-9]+$/) ino = substr(f[i], 5) } print "ss: " f[3] " " u " " ino; want[ino]; uids[u]; if (!need && !allowed("tcp", substr(f[3], match(f[3], /:[0-9]+$/) + 1) + 0)) need = 1 }',
  'function hex(s,   i, h) { h = ""; for (i = 1; i <= length(s); i++) h = h sprintf("%02x", ord[substr(s, i, 1)]); return h }',
  'function user(line,   a) { split(line, a, ":"); if ((a[3] in uids) && !(a[3] in named) && a[1] != "" && length(a[1]) <= 256) { named[a[3]]; print "user: " a[3] " " hex(a[1]) } }',
  'function number(h,   i, v) { for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789ABCDEF", substr(h, i, 1)) - 1; return v }',
  "function allowed(proto, port,   i) { for (i = 1; i <= na; i++) if (ap[i] == proto && port >= al[i] && port <= ah[i]) return 1; return 0 }",
  'function held(line,   f, ino, pid) { if (split(line, f, " ") == 2 && f[1] ~ /^\\/proc\\/[0-9]+\\/fd$/ && f[2] ~ /^socket:\\[[0-9]+\\]$/) { ino = substr(f[2], 9, length(f[2]) - 9); pid = substr(f[1], 7, length(f[1]) - 9); if ((ino in want) && !((pid " " ino) in seen)) { seen[pid " " ino]; print "process: " pid " " ino; pids[pid] } } }',
  `FILENAME == "${EPHEMERAL_RANGE_FILE}" { print FILENAME ": " $1 " " $2; next }`,
  '$1 == "sl" { print FILENAME ": sl "; next }',
  '$4 == "0A" && FILENAME ~ /tcp/ || $4 == "07" && FILENAME ~ /udp/ { print FILENAME ": " $1 " " $2 " " $3 " " $4 " " $5 " " $6 " " $7 " " $8 " " $9 " " $10; if ($10 ~ /^[0-9]+$/) want[$10]; if ($8 ~ /^[0-9]+$/) uids[$8]; if (!need && !allowed(FILENAME ~ /tcp/ ? "tcp" : "udp", number(substr($2, index($2, ":") + 1)))) need = 1 }',
  // The holders and their names (users: getent, else /etc/passwd), when some listener needs them.
  `END { if (!need) exit; cmd = "${HOLDERS_FIND}"; while ((cmd | getline line) > 0) held(line); close(cmd);`,
  'for (p in pids) { f = "/proc/" p "/comm"; n = 0; name = ""; while ((getline line < f) > 0) name = n++ ? name "\\n" line : line; close(f); if (name != "") print "comm: " p " " hex(name) }',
  'for (u in uids) list = list " " u; if (list == "") exit; cmd = "getent passwd" list " 2>/dev/null"; while ((cmd | getline line) > 0) user(line); close(cmd); while ((getline line < "/etc/passwd") > 0) user(line) }',
].join(" ");

/** The any-address items of an allow-list as `proto low high` triples: what needs no holders. */
function anyAddressRanges(declared: PortsDeclared | undefined): string {
  return (declared ?? [])
    .map((text) => allowedPort(text))
    .flatMap((item) =>
      "error" in item || item.address !== undefined
        ? []
        : [`${item.proto} ${item.low} ${item.high}`],
    )
    .join(" ");
}

export const ports: Domain<PortsDeclared, PortsLive, "ports"> = {
  name: "ports",
  specPath: ["networking", "listening_ports"],
  schema: PortsDeclared,
  severity: "high",
  onDrift: "ticket",
  itemsAreASet: true,
  keyPrefixes: ["tcp/", "udp/"],
  remediation:
    "Stop an unauthorized listener, or start the service of a declared port that is closed; or accept the live state into networking.listening_ports.",
  driftSentence(item, key, hosts) {
    return item.live === "listening"
      ? `${key} listens on ${hosts}, and networking.listening_ports (the allow-list) does not allow it.`
      : `${key} is in networking.listening_ports, which expects it to listen, but nothing listens on it on ${hosts}.`;
  },
  declaredWords(item) {
    return item.live === "listening" ? "not in the allow-list" : undefined;
  },
  probe(declared, ctx) {
    // Every listener is sent, declared or not: the declared list is an allow-list, and anything
    // else listening is drift. One awk over the four socket tables (the IPv6 ones are absent
    // without IPv6) keeps each table's header, to prove it was read, and only listening sockets
    // (TCP in LISTEN, UDP unconnected), since a busy host has many thousands of connections.
    return [
      "set --; t=",
      'for f in /proc/net/tcp /proc/net/tcp6; do [ -r "$f" ] && t="$t $f"; done',
      'for f in /proc/net/udp /proc/net/udp6; do [ -r "$f" ] && set -- "$@" "$f"; done',
      // The ephemeral range, read by the same awk, lets a snapshot allow short-lived loopback ones.
      // With no file left to read, awk reads the drained pipe from ss, never the probe's own stdin.
      `[ -r ${EPHEMERAL_RANGE_FILE} ] && set -- "$@" ${EPHEMERAL_RANGE_FILE}`,
      `${SS_LISTENERS} | awk -v qm_allow=${ctx.quote(anyAddressRanges(declared))} -v qm_tcp="$t" '${LISTENER_LINES}' "$@"`,
      "true",
    ].join("\n");
  },
  parse(output) {
    return parsePorts(output);
  },
  compare(declared, live) {
    const findings: Finding[] = [];
    const unauthorizedFindings: Finding[] = [];
    const parsed = declared.map((text) => allowedPort(text));
    const items = parsed.filter((item): item is AllowedPort => !("error" in item));
    parsed.forEach((item, i) => {
      // One port must listen (on its address, if it names one); ranges and wildcards only allow.
      if ("error" in item || item.low !== item.high || item.address === "loopback") return;
      const addresses = live.listeners.get(`${item.proto}/${item.low}`);
      if (addresses?.some((a) => item.address === undefined || a === item.address)) return;
      findings.push({
        key: declared[i]!,
        declared: "listening",
        live: "closed",
        path: pathIn(this, i),
        detail: addresses ? `listening only on ${addresses.join(", ")}` : "nothing listens on it",
      });
    });
    for (const [port, addresses] of live.listeners) {
      const [proto, number] = port.split("/") as [string, string];
      const unauthorized = addresses.filter(
        (address) => !items.some((item) => allows(item, proto, Number(number), address)),
      );
      if (!unauthorized.length) continue;
      // Scoped items for this port say which addresses are allowed: the finding names the other
      // ones.
      const scoped = items.some(
        (item) => item.proto === proto && item.low === Number(number) && item.address !== undefined,
      );
      for (const [key, addresses] of scoped
        ? unauthorized.map((a) => [`${port}@${a.replace(/^\[(.*)\]$/, "$1")}`, [a]] as const)
        : [[port, unauthorized] as const]) {
        // Who listens, as far as the audit user may see: the holders say it in the detail too.
        const holders = holdersOf(live.holders, port, addresses);
        const shown = scoped ? [key.split("@")[1]] : addresses;
        unauthorizedFindings.push({
          key,
          declared: "closed",
          live: "listening",
          path: this.specPath,
          detail: `listening on ${shown.join(", ")}${holders.length ? ` (${holderWords(holders)})` : ""}`,
          // The words count every holder; the item lists the first ones (a forking server has thousands).
          ...(holders.length > 0 && { holders: holders.slice(0, MAX_ITEM_HOLDERS) }),
        });
      }
    }
    const rest = unauthorizedFindings.splice(MAX_UNAUTHORIZED_ITEMS - 1);
    if (rest.length === 1) unauthorizedFindings.push(rest[0]!);
    else if (rest.length > 1)
      unauthorizedFindings.push({
        key: OTHER_LISTENERS,
        declared: "closed",
        live: "listening",
        path: this.specPath,
        detail: `${rest.length} more listeners outside the allow-list: ${rest
          .slice(0, 10)
          .map((f) => f.key)
          .join(", ")}${rest.length > 10 ? ", …" : ""}`,
      });
    return [...findings, ...unauthorizedFindings];
  },
  // The allow-list with the auditor's own listener: it is never an unauthorized port.
  allowingOwnListener(declared, own) {
    return [...declared, `tcp/${own.port}@${own.address}`];
  },
  accept(declared, finding) {
    // A flood of listeners is allowed one by one, by name, or not at all.
    if (finding.key === OTHER_LISTENERS) return declared;
    // A declared port found closed leaves the allow-list; an unauthorized listener joins it.
    if (finding.live === "closed") return declared.filter((port) => port !== finding.key);
    return declared.includes(finding.key) ? declared : [...declared, finding.key];
  },
  snapshot(live, options = DEFAULT_SNAPSHOT_OPTIONS) {
    const range = options.ephemeralAsRange ? live.ephemeral : undefined;
    // Inside the range, a listener only loopback can reach comes and goes (a test server, a
    // client's callback port): one rule per protocol allows them; anything reachable from the
    // network stays declared by its port.
    const transient = (port: string, addresses: string[]) => {
      const number = Number(port.split("/")[1]);
      return !!range && number >= range.low && number <= range.high && addresses.every(isLoopback);
    };
    const exact = [...live.listeners]
      .filter(([port, addresses]) => !transient(port, addresses))
      .map(([port]) => port)
      .sort(comparePorts);
    const rules = range
      ? ["tcp", "udp"].map((p) => `${p}/${range.low}-${range.high}@loopback`)
      : [];
    return [...exact, ...rules];
  },
};
