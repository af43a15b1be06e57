// Benchmark: every domain's parse + compare, the probe framing, and a manifest file's read and
// accept-edit parse, on the shapes that cost most per line (what a hostile host or contributor
// would send), at n and 8n entries. A linear parser takes about 8x as long for 8x the input, a
// quadratic one about 64x; a ratio over 24 is flagged. Time ratios on a shared machine are noisy
// (GC, caches), which is why this is a benchmark and not a test.
// Run: npx tsx bench/parse-linearity.ts [n]
import type { AnyDomain } from "../src/domains/domain.js";
import { DOMAINS } from "../src/domains/registry.js";
import { unifiedDiff } from "../src/domains/file-text.js";
import { declaredIn } from "../src/manifest/edit/changes.js";
import { toLayer } from "../src/manifest/layer.js";
import { SPEC_LIST_SHAPES } from "../src/manifest/lists.js";
import { ManifestReader } from "../src/manifest/read.js";
import { NodeSpec } from "../src/manifest/schema.js";
import { parseContext, parseProbeOutput } from "../src/probe/script.js";

const N = Number(process.argv[2] ?? 4000);
const NONCE = "QMbench";
const mark = (label: string) => `${NONCE} mark ${label}`;
const lines = (n: number, line: (i: number) => string) =>
  Array.from({ length: n }, (_, i) => `${line(i)}\n`).join("");
// A /24 per i, in /proc/net/route's little-endian hex.
const net24 = (i: number) =>
  [0, i & 255, (i >> 8) & 255, 10]
    .map((b) => b.toString(16).padStart(2, "0").toUpperCase())
    .join("");

const DECLARED: Record<string, unknown> = {
  kernel: "6.1.0-28-amd64",
  sysctl: { "net.ipv4.ip_forward": "1" },
  io_scheduler: { vda: "mq-deadline", "sd*": "bfq" },
  routes: [{ dst: "default", via: "10.0.0.1", dev: "eth0" }],
  packages: { bash: "*" },
  ports: ["tcp/22"],
  files: [
    { path: "/etc/a", contents: "x\n" },
    { path: "/etc/b", sha256: "a".repeat(64) },
  ],
  systemd: [{ name: "a.service", dropins: { "a.conf": "x" } }],
  kernel_modules: { loaded: ["br_netfilter"] },
};

const ADVERSARIAL: Record<string, (n: number) => string> = {
  kernel: (n) =>
    `${mark("running")}\n6.1.0-28-amd64\n${mark("installed")}\n${lines(n, (i) => `6.1.${i}-${n - i}-amd64`)}`,
  sysctl: (n) =>
    `${mark("runtime")}\n${lines(n, (i) => `/proc/sys/net/x${i}:${i}`)}` +
    `${mark("persisted")}\n${lines(n, (i) => `/etc/sysctl.d/${i}.conf:net.x${i} = 1`)}`,
  io_scheduler: (n) => lines(n, (i) => `/sys/block/sd${i}/queue/scheduler:none [mq-deadline] bfq`),
  // Every route and every local address in a network of its own: quadratic if each route scans the
  // addresses.
  routes: (n) =>
    "/proc/net/route:Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
    lines(
      n,
      (i) => `/proc/net/route:eth0\t${net24(i)}\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0`,
    ) +
    lines(n, (i) => `local:${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}.200`),
  // One package once per architecture: quadratic if each architecture is checked against a list.
  packages: (n) =>
    `${mark("dpkg")}\n${lines(n, (i) => `Package: bash\nStatus: install ok installed\nVersion: 5.2\nArchitecture: arch${i}`)}`,
  ports: (n) => {
    const port = (i: number) => ((i % 65535) + 1).toString(16).toUpperCase().padStart(4, "0");
    return `/proc/net/tcp:  sl  local_address\n${lines(n, (i) => `/proc/net/tcp:   ${i}: 00000000:${port(i)} 00000000:0000 0A `)}`;
  },
  files: (n) =>
    `${mark("cap 1024")}\n${mark("paths")}\n/etc/a\n/etc/b\n${mark("stat")}\n` +
    lines(n, (i) => `stat: cannot statx '/etc/x${i}': No such file or directory`) +
    `${mark("sha256")}\n${lines(n, (i) => `sha256sum: /etc/x${i}: Permission denied`)}`,
  systemd: (n) =>
    `${mark("cap 1024")}\n${mark("unit a.service")}\nfile /etc/systemd/system/a.service\n` +
    lines(n, (i) => `${mark("dropin a.service")}\nd${i}.conf\nx`),
  kernel_modules: (n) => lines(n, (i) => `/proc/modules:m${i} 16384 0 - Live 0x0000000000000000`),
};

function best(fn: () => void, runs = 5): number {
  let fastest = Infinity;
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    fn();
    fastest = Math.min(fastest, performance.now() - start);
  }
  return fastest;
}

function row(name: string, run: (n: number) => () => void): void {
  const [small, large] = [run(N), run(8 * N)];
  small(); // warm up
  const [a, b] = [best(small), best(large)];
  const ratio = b / a;
  const flag = ratio > 24 ? "  <- superlinear?" : "";
  console.log(
    `${name.padEnd(16)} ${a.toFixed(1).padStart(9)} ms ${b.toFixed(1).padStart(9)} ms ${ratio.toFixed(1).padStart(6)}x${flag}`,
  );
}

console.log(`${"".padEnd(16)} ${`n=${N}`.padStart(12)} ${`n=${8 * N}`.padStart(12)}  ratio`);
for (const domain of DOMAINS as AnyDomain[]) {
  const declared = domain.schema.parse(DECLARED[domain.name]);
  row(domain.name, (n) => {
    const text = ADVERSARIAL[domain.name]!(n);
    return () => domain.compare(declared, domain.parse(text, parseContext(NONCE)));
  });
}
row("probe framing", (n) => {
  const output = `${lines(n, (i) => `\n${NONCE} begin s${i}\nx\n${NONCE} unknown r\n${NONCE} end s${i}`)}\n${NONCE} done\n`;
  return () => parseProbeOutput(output, NONCE);
});

// A file changed on every line: Myers' diff costs (lines x edits) without its bound.
row("file diff", (n) => {
  const [want, got] = [lines(n, (i) => `declared ${i}`), lines(n, (i) => `live ${i}`)];
  return () => unifiedDiff(want, got);
});

// One map holding n keys: the `yaml` library's own duplicate-key check was quadratic in them.
const manifest = (n: number) =>
  `packages:\n  installed_manifest:\n${lines(n, (i) => `    p${i}: "*"`)}`;
row("manifest read", (n) => {
  const text = manifest(n);
  return () => {
    const reader = new ManifestReader(".", ".");
    const parsed = reader.parse({ file: "nodes/n.yaml", text, errors: [] });
    if (!parsed || !toLayer(reader, parsed, NodeSpec).layer) throw new Error("not read");
  };
});
row("manifest edit", (n) => {
  const text = manifest(n);
  return () => declaredIn(text, SPEC_LIST_SHAPES);
});
