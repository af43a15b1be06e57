import assert from "node:assert/strict";
import { test } from "node:test";
import { routes } from "../../../src/domains/routes/index.js";
import { parseRoutes, type RoutesLive } from "../../../src/domains/routes/parse.js";
import { ProbeParseError } from "../../../src/errors.js";
import { scratchTrees } from "../../support/tree.js";
import { capturedFiles, fixture, liveFrom } from "./fixtures.js";
import { runProbe } from "./live-probe.js";

const trees = scratchTrees();

test("a dual-stack VM: both defaults are compared, kernel-made routes are not", () => {
  const live = liveFrom(routes, "dual-stack-vm.txt");
  assert.deepEqual(routes.snapshot(live), [
    { dst: "default", via: "192.0.2.1", dev: "eth0" },
    { dst: "default", via: "fd00::1", dev: "eth0" },
  ]);
  // Addresses in any spelling; dev compared only when declared.
  assert.deepEqual(
    routes.compare(
      [
        { dst: "0.0.0.0/0", via: "192.0.2.1", dev: "eth0" },
        { dst: "default", via: "fd00:0:0::1" },
      ],
      live,
    ),
    [],
  );
});

test("the whole set: a declared route missing and a stray live route are both drift", () => {
  const live = liveFrom(routes, "dual-stack-vm.txt");
  assert.deepEqual(
    routes.compare(
      [
        { dst: "default", via: "192.0.2.254", dev: "eth0" },
        { dst: "default", via: "fd00::1", dev: "eth0" },
      ],
      live,
    ),
    [
      {
        key: "default via 192.0.2.254 dev eth0",
        declared: { dst: "default", via: "192.0.2.254", dev: "eth0" },
        live: null,
        path: ["networking", "routes", 0],
        detail: "live route to default: default via 192.0.2.1 dev eth0",
      },
      {
        key: "default via 192.0.2.1 dev eth0",
        declared: null,
        live: { dst: "default", via: "192.0.2.1", dev: "eth0" },
        path: ["networking", "routes"],
      },
    ],
  );
});

test("two links, static routes, metrics, IPv6: what ip route shows without proto kernel", () => {
  const live = liveFrom(routes, "two-links-dual-stack.txt");
  assert.deepEqual(routes.snapshot(live), [
    { dst: "default", via: "10.0.0.1", dev: "eth0" },
    { dst: "172.16.0.0/12", via: "10.20.0.1", dev: "eth1", metric: 50 },
    { dst: "192.168.77.7", dev: "eth1" },
    // A route in IPv6 table 100: ipv6_route does not say which table a route is in.
    { dst: "2001:db8:100::/48", via: "2001:db8:1::1", dev: "eth0" },
    { dst: "2001:db8:99::/48", via: "2001:db8:1::fe", dev: "eth0", metric: 200 },
    { dst: "default", via: "2001:db8:1::1", dev: "eth0" },
  ]);
});

test("metric is compared when declared, and the differing live route is named", () => {
  const live = liveFrom(routes, "two-links-dual-stack.txt");
  const declared = routes.snapshot(live)!;
  declared[1] = { dst: "172.16.0.0/12", via: "10.20.0.1", metric: 60 };
  declared.push({ dst: "10.99.0.0/16", via: "10.0.0.254" });
  assert.deepEqual(routes.compare(declared, live), [
    {
      key: "172.16.0.0/12 via 10.20.0.1 metric 60",
      declared: { dst: "172.16.0.0/12", via: "10.20.0.1", metric: 60 },
      live: null,
      path: ["networking", "routes", 1],
      detail: "live route to 172.16.0.0/12: 172.16.0.0/12 via 10.20.0.1 dev eth1 metric 50",
    },
    {
      key: "10.99.0.0/16 via 10.0.0.254",
      declared: { dst: "10.99.0.0/16", via: "10.0.0.254" },
      live: null,
      path: ["networking", "routes", 6],
    },
    {
      key: "172.16.0.0/12 via 10.20.0.1 dev eth1 metric 50",
      declared: null,
      live: { dst: "172.16.0.0/12", via: "10.20.0.1", dev: "eth1", metric: 50 },
      path: ["networking", "routes"],
    },
  ]);
});

test("a loose declaration does not take the route a specific one needs", () => {
  const live = liveFrom(routes, "two-links-dual-stack.txt");
  const declared = routes.snapshot(live)!.filter((r) => r.dst !== "default");
  declared.unshift(
    { dst: "default", via: "10.0.0.1" },
    { dst: "default", via: "2001:db8:1::1", dev: "eth0", metric: 1024 },
  );
  assert.deepEqual(routes.compare(declared, live), []);
});

test("snapshot compares clean against the same live state", () => {
  for (const file of ["dual-stack-vm.txt", "two-links-dual-stack.txt", "connected-only-ipv4.txt"]) {
    const live = liveFrom(routes, file);
    assert.deepEqual(routes.compare(routes.snapshot(live)!, live), [], file);
  }
  const connected = liveFrom(routes, "connected-only-ipv4.txt");
  assert.deepEqual(
    routes.snapshot(connected),
    [],
    "only kernel-made routes: the declared set is empty",
  );
  assert.deepEqual(routes.compare([], connected), []);
});

test("output it cannot trust is refused", () => {
  assert.throws(() => parseRoutes(""), /no \/proc\/net\/route/);
  const lines = fixture("routes", "two-links-dual-stack.txt").split("\n");
  const header = lines.find((l) => l.startsWith("/proc/net/route:Iface"))!;
  assert.throws(
    () => parseRoutes(`${header}\n/proc/net/route:eth0\t00000000\t0100`),
    ProbeParseError,
  );
  assert.throws(
    () => parseRoutes(`${header}\n/proc/net/ipv6_route:20010db8 30 0000`),
    ProbeParseError,
  );
  assert.throws(
    () =>
      parseRoutes(
        `${header}\n/proc/net/route:eth0\t0000000A\t00000000\t0001\t0\t0\t0\t00FF00FF\t0\t0\t0`,
      ),
    ProbeParseError,
  );
  assert.throws(() => parseRoutes(`${header}\nlocal:not-an-address`), ProbeParseError);
});

test("the schema explains bad routes", () => {
  const issues = (value: unknown) => {
    const r = routes.schema.safeParse(value);
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  };
  assert.deepEqual(
    issues([
      { dst: "default", via: "10.0.0.1", dev: "eth0" },
      { dst: "2001:db8::/32", dev: "eth1", metric: 5 },
    ]),
    [],
  );
  assert.deepEqual(issues([{ dst: "10.1.0.1/16", via: "10.0.0.1" }]), [
    '0.dst: "10.1.0.1/16" has host bits set; the network is 10.1.0.0/16',
  ]);
  assert.deepEqual(issues([{ dst: "10.0.0.0/8", via: "fd00::1" }]), [
    "0.via: via fd00::1 is not in the address family of 10.0.0.0/8",
  ]);
  assert.deepEqual(issues([{ dst: "everywhere" }]), [
    '0.dst: "everywhere" is not "default" or a CIDR like 10.1.0.0/16',
  ]);
  assert.equal(issues([{ dst: "default", gateway: "10.0.0.1" }]).length, 1);
  assert.equal(issues([{ dst: "10.0.0.0/33" }]).length, 1);
});

test("a route declared with dev or metric picks its live route before a looser one", () => {
  const live = {
    routes: [
      { family: 4 as const, dst: "10.50.0.0/16", via: "10.0.0.1", dev: "eth0", metric: 0 },
      { family: 4 as const, dst: "10.50.0.0/16", via: "10.0.0.1", dev: "eth0", metric: 100 },
    ],
  };
  assert.deepEqual(
    routes.compare(
      [
        { dst: "10.50.0.0/16", via: "10.0.0.1" },
        { dst: "10.50.0.0/16", via: "10.0.0.1", metric: 0 },
      ],
      live,
    ),
    [],
  );
});

test("0.0.0.0/0 and ::/0 pin the address family of a gateway-less default", () => {
  const live = { routes: [{ family: 6 as const, dst: "default", dev: "wg0", metric: 1024 }] };
  assert.deepEqual(routes.compare([{ dst: "default", dev: "wg0" }], live), []);
  assert.deepEqual(routes.compare([{ dst: "::/0", dev: "wg0" }], live), []);
  assert.deepEqual(
    routes
      .compare([{ dst: "0.0.0.0/0", dev: "wg0" }], live)
      .map((f) => [f.key, f.live === null ? "missing" : "extra"]),
    [
      ["default dev wg0", "missing"],
      ["default dev wg0", "extra"],
    ],
  );
});

test("the host leaves out only what the parser leaves out: each captured host reads the same", async () => {
  for (const name of ["connected-only-ipv4.txt", "dual-stack-vm.txt", "two-links-dual-stack.txt"]) {
    const captured = fixture("routes", name);
    // fib_trie as the kernel prints a local address: its key line, then its /32 host LOCAL leaf.
    const locals = [...captured.matchAll(/^local:(.+)$/gm)].map(
      ([, address]) => `     |-- ${address}\n        /32 host LOCAL\n`,
    );
    const files = { ...capturedFiles(captured), "proc/net/fib_trie": locals.join("") };
    const run = await runProbe<RoutesLive>(routes, undefined, {
      root: { dir: await trees(files), paths: ["/proc/net"] },
    });
    assert.deepEqual(run.live, liveFrom(routes, name), name);
    const sent = run.stdout.split("\n");
    assert.deepEqual(
      sent.filter((line) => / lo$|^\/proc\/net\/ipv6_route:f[ef]|[ \t]$/.test(line)),
      [],
      `${name}: routes on lo, fe80::/64, ff00::/8 or padding sent`,
    );
  }
});
