// Random and adversarial probe output for every domain's parse and compare: whatever a host sends,
// the only error is ProbeParseError (the node's error), and findings are JSON a report can hold.
// Linearity is measured in bench/parse-linearity.ts: time ratios are too noisy for a test here.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import fc from "fast-check";
import { Json, type AnyDomain } from "../../../src/domains/domain.js";
import { DOMAINS } from "../../../src/domains/registry.js";
import { ProbeParseError } from "../../../src/errors.js";
import { parseContext, parseProbeOutput } from "../../../src/probe/script.js";

const NONCE = "QMfuzz";
const PROTO = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "prototype"];
const HASH = "a".repeat(64);

/** A valid declaration per domain, with a prototype name where the manifest may hold one. */
const DECLARED: Record<string, unknown> = {
  kernel: "6.1.0-28-amd64",
  sysctl: { "net.ipv4.ip_forward": "1", constructor: "1" },
  io_scheduler: { vda: "mq-deadline", "sd*": "bfq", toString: "none" },
  routes: [
    { dst: "default", via: "10.0.0.1", dev: "eth0" },
    { dst: "10.1.0.0/16", dev: "eth1" },
  ],
  packages: { bash: "*", toString: "1.0", openssl: "absent" },
  ports: ["tcp/22", "udp/53"],
  files: [
    { path: "/etc/a", contents: "x\n", mode: "0644", owner: "root" },
    { path: "/etc/constructor", sha256: HASH },
    { path: "/etc/l", link: "/etc/a" },
    { path: "/etc/gone", absent: true },
  ],
  systemd: [
    {
      name: "a.service",
      enabled: true,
      active: true,
      contents: "x",
      dropins: { "toString.conf": "y" },
    },
  ],
  kernel_modules: { loaded: ["br_netfilter"], absent: ["constructor"] },
};

// Each domain's captured fixtures, line by line, plus lines of sections no fixture covers (sysctl,
// files, systemd).
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
const CRAFTED: Record<string, string[]> = {
  sysctl: [
    ...["runtime", "persisted"].map(mark),
    "/proc/sys/net/ipv4/ip_forward:1",
    "/proc/sys/net/ipv4/ip_local_port_range:32768\t60999",
    "/proc/sys/constructor:1",
    "/etc/sysctl.d/99-local.conf:net.ipv4.ip_forward = 0",
    "/usr/lib/sysctl.d/50-default.conf:constructor = 2",
    "/etc/sysctl.conf:# a comment",
  ],
  files: [
    ...["cap 1024", "paths", "stat", "sha256"].map(mark),
    ...["contents", "unreadable", "missing", "link"].flatMap((kind) =>
      ["/etc/a", "/etc/constructor", "/etc/l"].map((p) => mark(`${kind} ${p}`)),
    ),
    "/etc/a",
    "/etc/l",
    "/etc/constructor",
    "12\t644\troot\t0\troot\t0\tregular file\t/etc/a",
    "12\t777\troot\t0\troot\t0\tsymbolic link\t/etc/l",
    "5\t644\troot\t0\troot\t0\tregular file\t/etc/constructor",
    "5\t755\troot\t0\troot\t0\tdirectory\t/etc/gone",
    `${HASH}  /etc/constructor`,
    "stat: cannot statx '/etc/gone': No such file or directory",
  ],
  systemd: [
    mark("cap 1024"),
    ...["unit", "unit-file", "dropin", "unreadable", "active"].map((kind) =>
      mark(`${kind} a.service`),
    ),
    mark("active-unknown"),
    "file /etc/systemd/system/a.service",
    "wanted-by /etc/systemd/system/multi-user.target.wants/a.service",
    "masked",
    "toString.conf",
    "__proto__.conf",
    "LoadState=loaded",
    "ActiveState=active",
    "SubState=running",
    "",
  ],
};
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
function sectionText(domain: string) {
  const own = [...new Set([...fixtureLines(domain), ...(CRAFTED[domain] ?? [])])];
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

function checkFindings(domain: AnyDomain, live: unknown): void {
  const findings = domain.compare(domain.schema.parse(DECLARED[domain.name]), live);
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
  for (const domain of DOMAINS) {
    it(`${domain.name}: parse throws only ProbeParseError, compare never throws and finds JSON`, () => {
      fc.assert(
        fc.property(sectionText(domain.name), (text) => {
          const live = onlyProbeErrors(() => domain.parse(text, parseContext(NONCE)));
          if (live !== undefined) checkFindings(domain, live);
        }),
        { numRuns: 500 },
      );
    });
  }

  it("whole outputs: framing throws only ProbeParseError", () => {
    const section = fc.tuple(
      fc.constantFrom(...DOMAINS.map((d) => d.name), "maintenance", ...PROTO),
      sectionText("ports"),
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
