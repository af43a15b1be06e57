// Benchmark: every domain's parse + compare, the probe framing, and a manifest file's read and
// accept-edit parse, on the shapes that cost most per line (what a hostile host or contributor
// would send), at n and 8n entries. A linear parser takes about 8x as long for 8x the input, a
// quadratic one about 64x; a ratio over 24 is flagged. Time ratios on a shared machine are noisy
// (GC, caches), which is why this is a benchmark and not a test.
// Run: npx tsx bench/parse-linearity.ts [n]
import { unifiedDiff } from "../src/domains/file-text.js";
import { declaredIn } from "../src/manifest/edit/changes.js";
import { toLayer } from "../src/manifest/layer.js";
import { SPEC_LIST_SHAPES } from "../src/manifest/lists.js";
import { ManifestReader } from "../src/manifest/read.js";
import { NodeSpec } from "../src/manifest/schema.js";
import { parseContext, parseProbeOutput } from "../src/probe/script.js";
import { allSamples } from "../test/support/samples.js";

const SAMPLES = await allSamples();
const N = Number(process.argv[2] ?? 4000);
const NONCE = "QMbench";
const mark = (label: string) => `${NONCE} mark ${label}`;
const lines = (n: number, line: (i: number) => string) =>
  Array.from({ length: n }, (_, i) => `${line(i)}\n`).join("");

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
// Each domain's costliest shape and a declaration to compare it with, from its sample.
for (const { domain, sample } of SAMPLES) {
  const declared = domain.schema.parse(sample.bench.declared);
  row(domain.name, (n) => {
    const text = sample.bench.output(n, { mark, lines });
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
