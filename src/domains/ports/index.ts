import * as z from "zod";
import { pathIn, type Domain, type Finding } from "../domain.js";
import { canonicalIPv6, isIPv4, isIPv6 } from "../procnet.js";
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

// The shared awk reads the socket tables and the ephemeral range. TCP listeners come from
// /proc/net/tcp and tcp6 where reading them costs less than `ss` (sock_diag asked for listening
// sockets only), else from ss, and from the tables when ss fails. Every read of a table walks the
// kernel's whole TCP hash, each bucket and the connections of every network namespace: on a busy
// host most of the probe's CPU, and on a quiet one with a large hash still more than ss
// (`SS_IF_CHEAPER`). Of each listening socket it sends the fields up to its uid and inode (of an ss
// line: the local address, uid and inode), not the queues and timers after them. Only when some
// listener is not allowed by an any-address item of the allow-list is it worth knowing who holds
// it: then `find` says which process holds which socket inode (for every process whose descriptors
// the audit user may read), and the holders of listening sockets are sent with the processes' and
// users' names. Those walk every process and start two more processes: a clean host pays for
// neither. Names are any bytes but NUL (a newline too): sent as hex.

// Run by awk through sh: double quotes only, the awk program being inside single quotes.
const HOLDERS_FIND = String.raw`find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 -lname \"socket:\\[*\\]\" -printf \"%h %l\\n\" 2>/dev/null`;
// ss's exit status follows its lines: a failed or missing ss sends the /proc tables instead, as
// when the shell did not run it.
const SS_LISTENERS = `{ ss -Htne state listening 2>/dev/null; echo "qm-ss $?"; }`;
// The shared awk's function: ss's lines are its input; its values are the allow-list's `proto low
// high` triples, the TCP tables (read unless ss ran and succeeded) and the other files, each read
// with getline in that order.
const LISTENER_LINES = [
  "function ports_listeners(  i, n, a, st, ss, ns, files, nf) {",
  'for (i = 1; i < 256; i++) ports_ord[sprintf("%c", i)] = i; n = split(qm_v[1], a, " "); for (i = 1; i + 2 <= n; i += 3) { ports_ap[++ports_na] = a[i]; ports_al[ports_na] = a[i + 1] + 0; ports_ah[ports_na] = a[i + 2] + 0 }',
  "for (i = 1; i <= qm_in; i++) { if (qm_i[i] ~ /^qm-ss /) st = qm_i[i]; else ss[++ns] = qm_i[i] }",
  "for (i = 3; i <= qm_vn; i++) files[++nf] = qm_v[i]",
  'if (st != "qm-ss 0") { n = split(qm_v[2], a, " "); for (i = 1; i <= n; i++) files[++nf] = a[i]; ns = 0 } else { print "ss: tcp listening" }; for (i = 1; i <= ns; i++) ports_listener(ss[i])',
  "for (i = 1; i <= nf; i++) ports_table(files[i])",
  "ports_holders() }",
  // An ss line: queues, local and peer address, then uid (left out when 0), inode and the rest.
  'function ports_listener(line,   f, n, i, u, ino) { n = split(line, f, " "); u = 0; ino = 0; for (i = n; i > 4; i--) { if (f[i] ~ /^uid:[0-9]+$/) u = substr(f[i], 5); if (f[i] ~ /^ino:[0-9]+$/) ino = substr(f[i], 5) } print "ss: " f[3] " " u " " ino; ports_want[ino]; ports_uids[u]; if (!ports_need && !ports_allowed("tcp", substr(f[3], match(f[3], /:[0-9]+$/) + 1) + 0)) ports_need = 1 }',
  // A socket table's header and its listening sockets (TCP in LISTEN, UDP unconnected), or the ephemeral range.
  'function ports_table(file,   l, f) { while ((getline l < file) > 0) { split(l, f, " ")',
  `  if (file == "${EPHEMERAL_RANGE_FILE}") { print file ": " f[1] " " f[2]; continue }`,
  '  if (f[1] == "sl") { print file ": sl "; continue }',
  '  if (f[4] == "0A" && file ~ /tcp/ || f[4] == "07" && file ~ /udp/) { print file ": " f[1] " " f[2] " " f[3] " " f[4] " " f[5] " " f[6] " " f[7] " " f[8] " " f[9] " " f[10]; if (f[10] ~ /^[0-9]+$/) ports_want[f[10]]; if (f[8] ~ /^[0-9]+$/) ports_uids[f[8]]; if (!ports_need && !ports_allowed(file ~ /tcp/ ? "tcp" : "udp", ports_number(substr(f[2], index(f[2], ":") + 1)))) ports_need = 1 } }',
  "  close(file) }",
  'function ports_hex(s,   i, h) { h = ""; for (i = 1; i <= length(s); i++) h = h sprintf("%02x", ports_ord[substr(s, i, 1)]); return h }',
  'function ports_user(line,   a) { split(line, a, ":"); if ((a[3] in ports_uids) && !(a[3] in ports_named) && a[1] != "" && length(a[1]) <= 256) { ports_named[a[3]]; print "user: " a[3] " " ports_hex(a[1]) } }',
  'function ports_number(h,   i, v) { for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789ABCDEF", substr(h, i, 1)) - 1; return v }',
  "function ports_allowed(proto, port,   i) { for (i = 1; i <= ports_na; i++) if (ports_ap[i] == proto && port >= ports_al[i] && port <= ports_ah[i]) return 1; return 0 }",
  'function ports_held(line,   f, ino, pid) { if (split(line, f, " ") == 2 && f[1] ~ /^\\/proc\\/[0-9]+\\/fd$/ && f[2] ~ /^socket:\\[[0-9]+\\]$/) { ino = substr(f[2], 9, length(f[2]) - 9); pid = substr(f[1], 7, length(f[1]) - 9); if ((ino in ports_want) && !((pid " " ino) in ports_seen)) { ports_seen[pid " " ino]; print "process: " pid " " ino; ports_pids[pid] } } }',
  // The holders and their names (users: getent, else /etc/passwd), when some listener needs them.
  `function ports_holders(  cmd, line, p, f, n, name, u, list) { if (!ports_need) return; cmd = "${HOLDERS_FIND}"; while ((cmd | getline line) > 0) ports_held(line); close(cmd)`,
  'for (p in ports_pids) { f = "/proc/" p "/comm"; n = 0; name = ""; while ((getline line < f) > 0) name = n++ ? name "\\n" line : line; close(f); if (name != "") print "comm: " p " " ports_hex(name) }',
  'for (u in ports_uids) list = list " " u; if (list == "") return; cmd = "getent passwd" list " 2>/dev/null"; while ((cmd | getline line) > 0) ports_user(line); close(cmd); while ((getline line < "/etc/passwd") > 0) ports_user(line); close("/etc/passwd") }',
].join("\n");

// Measured (CPU of each way, in a network namespace): the tables cost about 0.3 ms, 4.3 ns per
// bucket of the TCP hash per table, and 1.5 us per socket for both; ss about 2 ms (a process of the
// shell), the price of some 400 Ki bucket walks. The hash has a bucket per 128 KiB of memory, a
// power of two, at most 512 Ki (the kernel's sizing of `tcp_ehash_entries`, a sysctl the shell
// cannot read: dash reads byte by byte, and /proc/sys answers a read past its start with end of
// file). Sockets are `alloc` (every TCP socket, IPv6 too, of every namespace, as the walk sees them)
// and `tw` of /proc/net/sockstat, counted as 200 buckets each per table. tcp6 is left out where
// sockstat6 counts no IPv6 TCP socket (a listener is one), so a host without one walks the hash
// once: never worth it above 32 GiB, where the shell stops after one line. A value that is not a
// number of 1 to 12 digits (no leading zero: shell arithmetic reads it as octal) means ss, the cost
// it had before, or tcp6 read; a wrong guess costs CPU, never a finding.
const BUCKET_WALKS_BUDGET = 409600;
const BUCKETS_PER_SOCKET = 200;
/** The largest hash one table may walk within the budget, and the memory (KiB) it comes with. */
const MAX_TABLE_BUCKETS = 262144;
const MAX_TABLE_MEMORY = MAX_TABLE_BUCKETS * 128;
const NOT_A_COUNT = "''|*[!0-9]*|0?*|?????????????*";
// Sets q=ss where ss costs less than the tables, and takes tcp6 out of $t where it holds nothing.
const SS_IF_CHEAPER = [
  "q=; m=; w=; a=; n=",
  "{ read -r x m x; } 2>/dev/null < /proc/meminfo",
  `case $m in ${NOT_A_COUNT}) q=ss ;; *) [ "$m" -le ${MAX_TABLE_MEMORY} ] || q=ss ;; esac`,
  'if [ -z "$q" ]; then',
  "  { read -r x; read -r x x x x x x w x a x; } 2>/dev/null < /proc/net/sockstat",
  `  for x in "$w" "$a"; do case $x in ${NOT_A_COUNT}) q=ss ;; esac; done`,
  "  { read -r x x n x; } 2>/dev/null < /proc/net/sockstat6",
  '  [ "$n" = 0 ] && t=${t% /proc/net/tcp6}',
  "fi",
  'case $t in *" "*" "*) k=2 ;; " "*) k=1 ;; *) q=ss ;; esac',
  'if [ -z "$q" ]; then',
  `  b=${MAX_TABLE_BUCKETS}; while [ $b -gt 1 ] && [ $((b * 64)) -ge "$m" ]; do b=$((b / 2)); done`,
  `  [ $((k * (b + ${BUCKETS_PER_SOCKET} * (w + a)))) -lt ${BUCKET_WALKS_BUDGET} ] || q=ss`,
  "fi",
].join("\n");

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
  awk: LISTENER_LINES,
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
      `[ -r ${EPHEMERAL_RANGE_FILE} ] && set -- "$@" ${EPHEMERAL_RANGE_FILE}`,
      SS_IF_CHEAPER,
      ctx.awk("ports_listeners", {
        values: [ctx.quote(anyAddressRanges(declared)), '"$t"', '"$@"'],
        input: `[ -z "$q" ] || ${SS_LISTENERS}`,
      }),
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
