// Random and adversarial probe output for every domain's parse and compare: whatever a host sends,
// the only error is ProbeParseError (the node's error), and findings are JSON a report can hold.
// Linearity is measured in bench/parse-linearity.ts: time ratios are too noisy for a test here.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import fc from "fast-check";
import { Json } from "../../../src/domains/domain.js";
import { DOMAINS } from "../../../src/domains/registry.js";
import { ProbeParseError } from "../../../src/errors.js";
import { parseContext, parseProbeOutput } from "../../../src/probe/script.js";
import { allSamples, type Sampled } from "../../support/samples.js";

const SAMPLES = await allSamples();
const NONCE = "QMfuzz";
const PROTO = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "prototype"];

// Each domain's captured fixtures, line by line, plus the lines its sample adds (sections no
// fixture covers: sysctl, files, systemd).
const fixtureDir = new URL("../../fixtures/", import.meta.url);
const fixtureLines = (domain: string) =>
  (existsSync(new URL(`${domain}/`, fixtureDir))
    ? readdirSync(new URL(`${domain}/`, fixtureDir), { encoding: "utf8" })
    : []
  )
    .filter((f) => f.endsWith(".txt"))
    .flatMap((f) =>
      readFileSync(new URL(`${domain}/${f}`, fixtureDir), "latin1")
        .split("\n")
        .slice(0, 200),
    )
    .map((line) => line.replaceAll("QMfixture", NONCE));
const mark = (label: string) => `${NONCE} mark ${label}`;
const FRAMING = [
  `${NONCE} unknown no such thing`,
  `${NONCE} end x`,
  `${NONCE} done`,
  `${NONCE} mark running`,
  `${NONCE} mark dpkg`,
];

const latin1 = fc.string({
  unit: fc.integer({ min: 0, max: 255 }).map((c) => String.fromCharCode(c)),
  maxLength: 80,
});
/**
 * A section's text for `domain`: its own kind of lines, some mutated, some junk, sometimes cut or
 * repeated.
 */
function sectionText({ domain, sample }: Sampled) {
  const own = [...new Set([...fixtureLines(domain.name), ...(sample.fuzzLines?.(mark) ?? [])])];
  // A realistic line with one word swapped for a prototype name, a random string or nothing.
  const mutated = fc
    .tuple(
      fc.constantFrom(...own),
      fc.nat(),
      fc.oneof(fc.constantFrom(...PROTO), latin1, fc.constant("")),
    )
    .map(([line, at, word]) => {
      const words = line.split(/(\s+|[:/=])/);
      words[(at % Math.max(1, words.length)) & ~1] = word;
      return words.join("");
    });
  const line = fc.oneof(
    { weight: 12, arbitrary: fc.constantFrom(...own) },
    { weight: 6, arbitrary: mutated },
    { weight: 1, arbitrary: latin1 },
    { weight: 1, arbitrary: fc.constantFrom(...PROTO, ...FRAMING) },
    { weight: 1, arbitrary: fc.nat({ max: 1 << 16 }).map((n) => "9".repeat(n)) },
  );
  return fc
    .tuple(fc.array(line, { maxLength: 24 }), fc.option(fc.nat()), fc.nat({ max: 2 }))
    .map(([lines, cut, repeat]) => {
      const text = `${lines.join("\n")}\n`.repeat(repeat + 1);
      return cut === null ? text : text.slice(0, cut % (text.length + 1));
    });
}

/** Runs `fn`; the only error it may throw is ProbeParseError. */
function onlyProbeErrors<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch (error) {
    if (error instanceof ProbeParseError) return undefined;
    throw error;
  }
}

function checkFindings({ domain, sample }: Sampled, live: unknown): void {
  const findings = domain.compare(domain.schema.parse(sample.declared), live);
  for (const f of findings) {
    assert.equal(typeof f.key, "string");
    assert.ok(
      Json.safeParse(f.declared).success && Json.safeParse(f.live).success,
      `${domain.name}: not JSON: ${JSON.stringify(f)}`,
    );
    assert.deepEqual(JSON.parse(JSON.stringify([f.declared, f.live])), [f.declared, f.live]);
    assert.ok(f.path.every((p) => typeof p === "string" || typeof p === "number"));
  }
}

describe("fuzzed probe output", () => {
  for (const sampled of SAMPLES) {
    const { domain } = sampled;
    it(`${domain.name}: parse throws only ProbeParseError, compare never throws and finds JSON`, () => {
      fc.assert(
        fc.property(sectionText(sampled), (text) => {
          const live = onlyProbeErrors(() => domain.parse(text, parseContext(NONCE)));
          if (live !== undefined) checkFindings(sampled, live);
        }),
        { numRuns: 500 },
      );
    });
  }

  it("whole outputs: framing throws only ProbeParseError", () => {
    const section = fc.tuple(
      fc.constantFrom(...DOMAINS.map((d) => d.name), "maintenance", ...PROTO),
      sectionText(SAMPLES.find((s) => s.domain.name === "ports")!),
    );
    fc.assert(
      fc.property(fc.array(section, { maxLength: 6 }), fc.boolean(), (sections, done) => {
        const body = sections
          .map(([name, text]) => `\n${NONCE} begin ${name}\n${text}\n${NONCE} end ${name}\n`)
          .join("");
        onlyProbeErrors(() => parseProbeOutput(done ? `${body}\n${NONCE} done\n` : body, NONCE));
      }),
      { numRuns: 500 },
    );
  });
});
