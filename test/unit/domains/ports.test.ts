import assert from "node:assert/strict";
import { test } from "node:test";
import { ports } from "../../../src/domains/ports/index.js";
import { parsePorts, type PortsLive } from "../../../src/domains/ports/parse.js";
import { ProbeParseError } from "../../../src/errors.js";
import { scratchTrees } from "../../support/tree.js";
import { capturedFiles, fixture, liveFrom } from "./fixtures.js";
import { runProbe } from "./live-probe.js";

const trees = scratchTrees();

/** The probe as a host without ss runs it: the TCP listeners come from the /proc tables. */
function withoutSs(script: string): string {
  const edited = script.replace("{ ss -Htne state listening 2>/dev/null;", "{ false;");
  assert.notEqual(edited, script, "the probe asks ss for the listening sockets");
  return edited;
}

test("listeners in LISTEN (tcp) or unconnected (udp), merged across IPv4 and IPv6", () => {
  const live = liveFrom(ports, "many-listeners.txt");
  assert.deepEqual(Object.fromEntries(live.listeners), {
    "tcp/22": ["0.0.0.0", "[::]"],
    "tcp/443": ["0.0.0.0"],
    "tcp/5432": ["127.0.0.1", "[::1]"],
    "tcp/8080": ["0.0.0.0"],
    "udp/53": ["0.0.0.0", "[::]"],
    "udp/123": ["[::]"],
    "udp/323": ["127.0.0.1"],
  });
});

test("an undeclared listener is unauthorized; a declared port not listening is drift too", () => {
  const live = liveFrom(ports, "many-listeners.txt");
  assert.deepEqual(
    ports.compare(
      ["tcp/22", "tcp/443", "tcp/5432", "udp/53", "udp/123", "udp/323", "tcp/25"],
      live,
    ),
    [
      {
        key: "tcp/25",
        declared: "listening",
        live: "closed",
        path: ["networking", "listening_ports", 6],
        detail: "nothing listens on it",
      },
      {
        key: "tcp/8080",
        declared: "closed",
        live: "listening",
        path: ["networking", "listening_ports"],
        // The captured tables give each socket's uid; no process was readable, no user named.
        detail: "listening on 0.0.0.0 (process unknown, uid 0)",
        holders: [{ uid: 0 }],
      },
    ],
  );
  assert.deepEqual(
    ports.compare([], live).map((f) => `${f.key} ${f.detail}`),
    [
      "tcp/22 listening on 0.0.0.0, [::]",
      "tcp/443 listening on 0.0.0.0",
      "tcp/5432 listening on 127.0.0.1, [::1]",
      "tcp/8080 listening on 0.0.0.0",
      "udp/53 listening on 0.0.0.0, [::]",
      "udp/123 listening on [::]",
      "udp/323 listening on 127.0.0.1",
    ].map((line) => `${line} (process unknown, uid 0)`),
  );
});

test("snapshot is the sorted allow-list and compares clean", () => {
  for (const file of ["many-listeners.txt", "one-listener.txt", "no-ipv6.txt"]) {
    const live = liveFrom(ports, file);
    assert.deepEqual(ports.compare(ports.snapshot(live)!, live), [], file);
  }
  assert.deepEqual(ports.snapshot(liveFrom(ports, "many-listeners.txt")), [
    "tcp/22",
    "tcp/443",
    "tcp/5432",
    "tcp/8080",
    "udp/53",
    "udp/123",
    "udp/323",
  ]);
});

test("a host without IPv6 has only the IPv4 tables", () => {
  const live = liveFrom(ports, "no-ipv6.txt");
  assert.deepEqual(
    [...live.listeners.keys()],
    [...liveFrom(ports, "one-listener.txt").listeners.keys()],
  );
  assert.equal(live.listeners.size, 1);
});

test("output it cannot trust is refused; connected and established sockets are not listeners", () => {
  assert.throws(() => parsePorts(""), /no \/proc\/net\/tcp/);
  const header = fixture("ports", "one-listener.txt")
    .split("\n")
    .find((l) => l.startsWith("/proc/net/tcp:  sl"))!;
  assert.throws(() => parsePorts(`${header}\n/proc/net/tcp:   0: 00000000:07`), ProbeParseError);
  assert.throws(
    () => parsePorts(`${header}\n/proc/net/tcp6:   0: 00000000:0016 00000000:0000 0A 0`),
    ProbeParseError,
  );
  assert.throws(() => parsePorts(`${header}\n/etc/shadow:root:*:19000`), ProbeParseError);
  const established = `${header}\n/proc/net/udp:6168: 0100007F:9C40 0100007F:0035 07 00000000:00000000 00:00000000 00000000 0 0 1 2 0 0`;
  assert.equal(parsePorts(established).listeners.size, 0);
});

test("the schema wants tcp/<port> or udp/<port>, optionally a range or *, and @address or @loopback", () => {
  const good = [
    "tcp/22",
    "udp/53",
    "tcp/65535",
    "tcp/9100@127.0.0.1",
    "tcp/443@::",
    "udp/53@[::1]",
    "tcp/32768-60999",
    "tcp/*@loopback",
  ];
  assert.equal(ports.schema.safeParse(good).success, true);
  for (const bad of [
    "22",
    "tcp:22",
    "TCP/22",
    "tcp/0",
    "tcp/65536",
    "tcp/022",
    "sctp/9",
    "tcp/22@localhost",
    "tcp/9-1",
    "tcp/22@999.1.1.1",
  ]) {
    const r = ports.schema.safeParse([bad]);
    assert.equal(r.success, false, bad);
    assert.match(
      r.error.issues[0]!.message,
      /a port like "tcp\/22"|ports run from 1 to 65535|an IPv4 or IPv6 address, or loopback/,
      bad,
    );
  }
});

test("scoped items allow a port on one address only, loopback wildcards and ranges allow without requiring", () => {
  const live = liveFrom(ports, "many-listeners.txt");
  const findings = ports.compare(
    [
      "tcp/22@0.0.0.0",
      "tcp/443",
      "tcp/5432@127.0.0.1",
      "tcp/*@loopback",
      "udp/1-1024",
      "tcp/8080@10.0.0.5",
    ],
    live,
  );
  assert.deepEqual(
    findings.map((f) => [f.key, f.live, f.detail]),
    [
      ["tcp/8080@10.0.0.5", "closed", "listening only on 0.0.0.0"],
      ["tcp/22@::", "listening", "listening on :: (process unknown, uid 0)"],
      ["tcp/8080@0.0.0.0", "listening", "listening on 0.0.0.0 (process unknown, uid 0)"],
    ],
  );
  // Accepting a scoped listener adds exactly that address, so the next audit is clean for it.
  const accepted = ports.accept!(["tcp/22@0.0.0.0"], findings[1]!) as string[];
  assert.deepEqual(accepted, ["tcp/22@0.0.0.0", "tcp/22@::"]);
  assert.deepEqual(
    ports.compare(accepted, { listeners: new Map([["tcp/22", ["0.0.0.0", "[::]"]]]) }),
    [],
  );
});

test("the host sends each listener's address, port, state, uid and inode only, and every captured host reads the same", async () => {
  for (const name of ["many-listeners.txt", "no-ipv6.txt", "one-listener.txt"]) {
    const captured = fixture("ports", name);
    // A connection and a closed TCP socket beside the listeners: never sent.
    const files = capturedFiles(captured);
    files["proc/net/tcp"] +=
      "   9: 0100007F:0016 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0 20 4 30 10 -1\n" +
      "  10: 00000000:1F91 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1\n";
    const run = await runProbe<PortsLive>(ports, ["tcp/22"], {
      root: { dir: await trees(files), paths: ["/proc/net"] },
      edit: withoutSs,
    });
    assert.deepEqual(run.live?.listeners, liveFrom(ports, name).listeners, name);
    // The range comes from this machine's own /proc/sys, which the tree does not replace.
    const range = run.live?.ephemeral;
    assert.ok(range && range.low <= range.high, name);
    const sent = run.stdout.split("\n").filter((line) => line.startsWith("/proc/net/"));
    assert.deepEqual(
      sent.filter(
        (line) =>
          !/^\/proc\/net\/(tcp|udp)6?: (sl |\d+: \S+ \S+ (0A|07) \S+ \S+ \S+ \d+ \d+ \d+)$/.test(
            line,
          ),
      ),
      [],
    );
    assert.ok(!sent.some((line) => /:0016 0100007F:D431|:1F91 /.test(line)), sent.join("\n"));
  }
});

test("a snapshot allows loopback-only listeners in the ephemeral range by one rule per protocol", () => {
  const header = fixture("ports", "one-listener.txt")
    .split("\n")
    .find((l) => l.startsWith("/proc/net/tcp:  sl"))!;
  const live = parsePorts(
    [
      header,
      "/proc/sys/net/ipv4/ip_local_port_range: 32768 60999",
      // 127.0.0.1:40000 (in the range, loopback), 0.0.0.0:40001 (in the range, reachable),
      // 127.0.0.1:5432 (loopback, below the range).
      "/proc/net/tcp:   0: 0100007F:9C40 00000000:0000 0A ",
      "/proc/net/tcp:   1: 00000000:9C41 00000000:0000 0A ",
      "/proc/net/tcp:   2: 0100007F:1538 00000000:0000 0A ",
    ].join("\n"),
  );
  assert.deepEqual(live.ephemeral, { low: 32768, high: 60999 });
  const declared = ports.snapshot(live)!;
  assert.deepEqual(declared, [
    "tcp/5432",
    "tcp/40001",
    "tcp/32768-60999@loopback",
    "udp/32768-60999@loopback",
  ]);
  assert.deepEqual(ports.compare(declared, live), []);
  // Later: another short-lived loopback listener is allowed, one reachable from the network is not.
  const later = new Map(live.listeners)
    .set("tcp/45000", ["127.0.0.1"])
    .set("tcp/45001", ["10.0.0.5"]);
  assert.deepEqual(
    ports.compare(declared, { listeners: later }).map((f) => f.key),
    ["tcp/45001"],
  );
  // Turned off, every listener is declared by its port.
  assert.deepEqual(ports.snapshot(live, { packages: "names", ephemeralAsRange: false }), [
    "tcp/5432",
    "tcp/40000",
    "tcp/40001",
  ]);
  for (const bad of ["1 0", "x y", "32768 60999 1", "32768 70000"])
    assert.throws(
      () => parsePorts(`${header}\n/proc/sys/net/ipv4/ip_local_port_range: ${bad}`),
      ProbeParseError,
      bad,
    );
});

test("a listener names the processes holding its socket and the socket's user; names are host bytes, sent as hex", () => {
  const hex = (text: string) => Buffer.from(text, "utf8").toString("hex");
  const hostile = "<!--@a::\u001b[31m\nx";
  const live = parsePorts(
    [
      "/proc/net/tcp:  sl  local_address",
      // tcp/9999 (uid 33, two processes), tcp/8080 (uid 0, no readable process), tcp/22 (uid 7).
      "/proc/net/tcp: 0: 00000000:270F 00000000:0000 0A 00000000:00000000 00:00000000 00000000 33 0 501",
      "/proc/net/tcp: 1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 502",
      "/proc/net/tcp: 2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000 7 0 503",
      "process: 123 501",
      "process: 124 501",
      "process: 77 503",
      `comm: 123 ${hex(hostile)}`,
      `comm: 124 ${hex("nginx")}`,
      `user: 33 ${hex("www-data")}`,
      `user: 0 ${hex("root")}`,
    ].join("\n"),
  );
  assert.deepEqual(
    ports.compare([], live).map((f) => [f.key, f.detail, f.holders]),
    [
      // pid 77's name did not come (it exited): its pid is known, its name is not.
      ["tcp/22", "listening on 0.0.0.0 (name unknown, pid 77, uid 7)", [{ pid: 77, uid: 7 }]],
      ["tcp/8080", "listening on 0.0.0.0 (process unknown, user root)", [{ uid: 0, user: "root" }]],
      [
        "tcp/9999",
        `listening on 0.0.0.0 (${hostile}, pid 123, user www-data; nginx, pid 124, user www-data)`,
        [
          { pid: 123, name: hostile, uid: 33, user: "www-data" },
          { pid: 124, name: "nginx", uid: 33, user: "www-data" },
        ],
      ],
    ],
  );
  for (const bad of ["comm: 1 zz", "comm: 1 abc", "process: x 501", "user: 0 "])
    assert.throws(
      () => parsePorts(`/proc/net/tcp:  sl  local_address\n${bad}`),
      /unexpected line/,
      bad,
    );
});

test("who holds a listener is looked up only when some listener is not allowed on every address", async () => {
  const root = {
    dir: await trees(capturedFiles(fixture("ports", "many-listeners.txt"))),
    paths: ["/proc/net"],
  };
  const holderLines = (stdout: string) =>
    stdout.split("\n").filter((line) => /^(process|comm|user): /.test(line));
  // Every listener allowed by an any-address item: no process walk, no user names.
  const allowed = await runProbe<PortsLive>(ports, ["tcp/1-65535", "udp/53", "udp/100-400"], {
    root,
    edit: withoutSs,
  });
  assert.deepEqual(holderLines(allowed.stdout), []);
  assert.deepEqual(ports.compare(["tcp/1-65535", "udp/53", "udp/100-400"], allowed.live!), []);
  // One listener allowed only on loopback, one not at all: the holders are sent, and named.
  for (const declared of [["tcp/1-65535", "udp/53", "udp/123@loopback", "udp/323"], ["tcp/22"]]) {
    const run = await runProbe<PortsLive>(ports, declared, { root, edit: withoutSs });
    assert.ok(
      holderLines(run.stdout).some((line) => line.startsWith("user: 0 ")),
      run.stdout,
    );
    assert.ok(ports.compare(declared, run.live!).some((finding) => finding.holders?.length));
  }
});

test("ss's listeners read as the /proc tables' do: addresses, interface, dual stack, uid and inode", () => {
  const proc = parsePorts(
    [
      "/proc/net/tcp:  sl  local_address",
      "/proc/net/tcp: 0: 00000000:1F96 00000000:0000 0A 00000000:00000000 00:00000000 00000000 65534 0 3708935",
      "/proc/net/tcp: 1: 0302D50A:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 3296047",
      "/proc/net/tcp: 2: 0100007F:1F94 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 3708934",
      "/proc/net/tcp6: 0: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 3708931",
      "/proc/net/tcp6: 1: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 3708930",
      "/proc/net/tcp6: 2: 00000000000000000000000001000000:1F92 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 3708932",
      "/proc/net/tcp6: 3: 0000000000000000FFFF00000100007F:1F93 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 3708933",
    ].join("\n"),
  );
  // The same sockets as `ss -Htne state listening` showed them, as the probe sends them.
  const ss = parsePorts(
    [
      "ss: tcp listening",
      "ss: 0.0.0.0:8086 65534 3708935",
      "ss: 10.213.2.3:22 0 3296047",
      "ss: 127.0.0.1%lo:8084 0 3708934",
      "ss: [::]:8081 0 3708931",
      "ss: *:8080 0 3708930",
      "ss: [::1]:8082 0 3708932",
      "ss: [::ffff:127.0.0.1]:8083 0 3708933",
    ].join("\n"),
  );
  assert.deepEqual(ss, proc);
  assert.equal(ss.listeners.size, 7);
  // ss's lines without its header prove nothing was read; a malformed one is refused.
  assert.throws(() => parsePorts("ss: 0.0.0.0:22 0 1"), /no \/proc\/net\/tcp/);
  for (const bad of ["ss: 0.0.0.0:70000 0 1", "ss: [::g]:22 0 1", "ss: 1.2.3:22 0 1", "ss: *:22 0"])
    assert.throws(() => parsePorts(`ss: tcp listening\n${bad}`), /unexpected line/, bad);
});

/**
 * A host of its own network namespace, its listeners (TCP on IPv4, IPv6 only, dual stack,
 * loopback, an IPv4-mapped address, one bound to lo; UDP on each family; no IPv6 TCP socket unless
 * `tcp6`) bound by a process that also holds `connections` TCP connections to itself, then runs the
 * probe's `shell`.
 */
function listenerHost({ connections = 0, shell = ["sh"], tcp6 = true } = {}): string[] {
  const listeners = [
    "import os, resource, socket",
    "def bound(family, kind, address, v6only=None, device=None):",
    "    s = socket.socket(family, kind)",
    "    if v6only is not None: s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, v6only)",
    "    if device: s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, device)",
    "    s.bind(address); s.set_inheritable(True); return s",
    "def listen(*args, **kw):",
    "    s = bound(args[0], socket.SOCK_STREAM, *args[1:], **kw); s.listen(4096); return s",
    "held = [listen(socket.AF_INET, ('0.0.0.0', 8086)), listen(socket.AF_INET, ('127.0.0.1', 8084), device=b'lo'),",
    "    bound(socket.AF_INET, socket.SOCK_DGRAM, ('0.0.0.0', 5353)), bound(socket.AF_INET6, socket.SOCK_DGRAM, ('::', 5354), 1),",
    "    bound(socket.AF_INET6, socket.SOCK_DGRAM, ('::1', 5355))]",
    ...(tcp6
      ? [
          "held += [listen(socket.AF_INET6, ('::', 8081), 1), listen(socket.AF_INET6, ('::', 8080), 0),",
          "    listen(socket.AF_INET6, ('::1', 8082)), listen(socket.AF_INET6, ('::ffff:127.0.0.1', 8083))]",
        ]
      : []),
    "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]; resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))",
    `for i in range(${connections}):`,
    "    c = socket.create_connection(('127.0.0.1', 8086)); a, _ = held[0].accept(); held += [c, a]",
    `os.execvp('${shell[0]}', [${[...shell, "-s"].map((word) => `'${word}'`).join(", ")}])`,
  ].join("\n");
  return [
    "unshare",
    "--net",
    "sh",
    "-c",
    `/sbin/ip link set lo up && exec python3 -c "${listeners}"`,
  ];
}

/** The probe reads `/proc/meminfo`, `/proc/net/sockstat` and `sockstat6` as `proc` gives them. */
async function procAs(proc: { meminfo?: string; sockstat?: string; sockstat6?: string }) {
  const where = {
    meminfo: "proc/meminfo",
    sockstat: "proc/net/sockstat",
    sockstat6: "proc/net/sockstat6",
  };
  const files = Object.entries(proc).map(([name, text]) => [
    where[name as keyof typeof proc],
    text,
  ]);
  return { dir: await trees(Object.fromEntries(files)), paths: files.map(([file]) => `/${file}`) };
}

const LISTENERS = {
  "tcp/8080": ["[::]"],
  "tcp/8081": ["[::]"],
  "tcp/8082": ["[::1]"],
  "tcp/8083": ["[::ffff:7f00:1]"],
  "tcp/8084": ["127.0.0.1"],
  "tcp/8086": ["0.0.0.0"],
  "udp/5353": ["0.0.0.0"],
  "udp/5354": ["[::]"],
  "udp/5355": ["[::1]"],
};
/** Memory for a TCP hash of 2 Ki buckets, and of 512 Ki, the most the kernel makes. */
const SMALL_HOST = "MemTotal:  262144 kB\nMemFree:  131072 kB\n";
const LARGE_HOST = "MemTotal:  268435456 kB\nMemFree:  131072 kB\n";
const QUIET = "sockets: used 12\nTCP: inuse 7 orphan 0 tw 0 alloc 9 mem 1\nUDP: inuse 3 mem 0\n";

test("a host's listeners read the same from the /proc tables (a small TCP hash) as from ss (a large one)", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root (a network namespace of its own)");
  const command = listenerHost();
  const small = await procAs({ meminfo: SMALL_HOST, sockstat: QUIET });
  const viaProc = await runProbe<PortsLive>(ports, [], { command, root: small });
  const large = await procAs({ meminfo: LARGE_HOST, sockstat: QUIET });
  const viaSs = await runProbe<PortsLive>(ports, [], { command, root: large });
  assert.doesNotMatch(viaProc.stdout, /^ss: /m);
  assert.match(viaSs.stdout, /^ss: tcp listening$/m);
  assert.deepEqual(Object.fromEntries(viaProc.live!.listeners), LISTENERS);
  // Each run is its own processes: the holders compare by name and user, in the order of their
  // listeners (ss and the tables list sockets in other orders).
  const seen = ({ holders, ...live }: PortsLive) => ({
    ...live,
    holders: [...holders!]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([key, held]) => [key, held.map(({ pid: _, ...holder }) => holder)]),
  });
  assert.deepEqual(seen(viaSs.live!), seen(viaProc.live!));
});

test("a host with thousands of TCP sockets asks ss, however small its TCP hash", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root (a network namespace of its own)");
  // The sockets are real: sockstat counts them (and every other namespace's on this machine).
  const run = await runProbe<PortsLive>(ports, [], {
    command: listenerHost({ connections: 1500 }),
    root: await procAs({ meminfo: SMALL_HOST }),
  });
  assert.match(run.stdout, /^ss: tcp listening$/m);
  assert.doesNotMatch(run.stdout, /^\/proc\/net\/tcp6?:/m);
  assert.deepEqual(Object.fromEntries(run.live!.listeners), LISTENERS);
});

test("a host without an IPv6 TCP socket reads /proc/net/tcp alone, and does so with a hash twice as large", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root (a network namespace of its own)");
  // 24 GiB: a hash of 256 Ki buckets, walked once but not twice within what ss costs.
  const memory = "MemTotal:  25165824 kB\n";
  const v4 = await runProbe<PortsLive>(ports, [], {
    command: listenerHost({ tcp6: false }),
    root: await procAs({ meminfo: memory, sockstat: QUIET, sockstat6: "TCP6: inuse 0\n" }),
  });
  assert.match(v4.stdout, /^\/proc\/net\/tcp: sl $/m);
  assert.doesNotMatch(v4.stdout, /^(ss|\/proc\/net\/tcp6):/m);
  const withoutTcp6 = Object.entries(LISTENERS).filter(
    ([port, [address]]) => port.startsWith("udp/") || !address!.startsWith("["),
  );
  assert.deepEqual(Object.fromEntries(v4.live!.listeners), Object.fromEntries(withoutTcp6));
  // With an IPv6 TCP socket both tables would be walked: ss.
  const dual = await runProbe<PortsLive>(ports, [], {
    command: listenerHost(),
    root: await procAs({ meminfo: memory, sockstat: QUIET, sockstat6: "TCP6: inuse 4\n" }),
  });
  assert.match(dual.stdout, /^ss: tcp listening$/m);
  // sockstat6 text that is not a count: tcp6 is read.
  const unsure = await runProbe<PortsLive>(ports, [], {
    command: listenerHost({ tcp6: false }),
    root: await procAs({ meminfo: SMALL_HOST, sockstat: QUIET, sockstat6: "TCP6: inuse 00\n" }),
  });
  assert.match(unsure.stdout, /^\/proc\/net\/tcp6: sl $/m);
  assert.deepEqual(unsure.live!.listeners, v4.live!.listeners);
});

test("sockstat or meminfo text that is not a count asks ss, under every shell", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root (a network namespace of its own)");
  const hostile = [
    { meminfo: "MemTotal: 1e3 kB\n", sockstat: QUIET },
    { meminfo: `MemTotal: ${"9".repeat(40)} kB\n`, sockstat: QUIET },
    {
      meminfo: SMALL_HOST,
      sockstat: "sockets: used 1\nTCP: inuse 1 orphan 0 tw -5 alloc 1 mem 1\n",
    },
    {
      meminfo: SMALL_HOST,
      sockstat: "sockets: used 1\nTCP: inuse 1 orphan 0 tw 0 alloc $(reboot)\n",
    },
    {
      meminfo: SMALL_HOST,
      sockstat: "sockets: used 1\nTCP: inuse 1 orphan 0 tw 08 alloc 1 mem 1\n",
    },
    { meminfo: SMALL_HOST, sockstat: "" },
    { meminfo: "\n", sockstat: QUIET },
  ];
  const shells = [["sh"], ["bash", "--posix"], ["busybox", "sh"]];
  for (const proc of hostile)
    for (const shell of shells) {
      const run = await runProbe<PortsLive>(ports, [], {
        command: listenerHost({ shell }),
        root: await procAs(proc),
      });
      assert.match(
        run.stdout,
        /^ss: tcp listening$/m,
        `${shell.join(" ")} ${JSON.stringify(proc)}`,
      );
      assert.deepEqual(Object.fromEntries(run.live!.listeners), LISTENERS);
    }
});
