// Version order checked against the package managers themselves, on real versions from this
// machine's dpkg database: `dpkg --compare-versions` for dpkg, rpm's own `rpm.vercmp` for rpm.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import fc from "fast-check";
import { parseConstraint, satisfies } from "../../../src/domains/packages/constraint.js";
import { compareApk, compareDpkg, compareRpm } from "../../../src/domains/packages/version.js";

const TRICKY: [string, string][] = [
  ["1.0~rc1", "1.0"],
  ["1.0~~", "1.0~"],
  ["1.0", "1.0-0"],
  ["1.0-1", "1.0-1ubuntu1"],
  ["1:0.9", "2.0"],
  ["0:1.2-3", "1.2-3"],
  ["1.0a", "1.0.1"],
  ["1.0+b1", "1.0"],
  ["2.36-9+deb12u7", "2.36-9+deb12u10"],
  ["3.0.15-1~deb12u1", "3.0.15-1"],
  ["1.01", "1.1"],
  ["1.0^git1", "1.0"],
  ["10", "9"],
  ["a", "b"],
];

/**
 * The machine's installed versions, and pairs of them: sorted neighbours plus a fixed pseudo-random
 * sample.
 */
function realPairs(): [string, string][] {
  const versions = [
    ...new Set(
      readFileSync("/var/lib/dpkg/status", "utf8")
        .match(/^Version: .+$/gm)!
        .map((l) => l.slice(9)),
    ),
  ].sort();
  const pairs: [string, string][] = versions.slice(1).map((v, i) => [versions[i]!, v]);
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  for (let k = 0; k < 200; k++)
    pairs.push([versions[next() % versions.length]!, versions[next() % versions.length]!]);
  return [...pairs, ...TRICKY];
}

function dpkgOrder(pairs: readonly [string, string][]): number[] {
  const script =
    'while IFS="	" read -r a b; do if dpkg --compare-versions "$a" lt "$b"; then echo -1; elif dpkg --compare-versions "$a" eq "$b"; then echo 0; else echo 1; fi; done';
  const out = execFileSync("sh", ["-c", script], {
    input: pairs.map((p) => p.join("\t")).join("\n") + "\n",
    encoding: "utf8",
  });
  return out.trim().split("\n").map(Number);
}

function rpmOrder(pairs: readonly [string, string][]): number[] {
  const lua = pairs
    .map(([a, b]) => `io.write(rpm.vercmp(${JSON.stringify(a)}, ${JSON.stringify(b)}), "\\n")`)
    .join(" ");
  const out = execFileSync("rpm", ["--eval", `%{lua: ${lua}}`], { encoding: "utf8" });
  return out.trim().split("\n").map(Number);
}

describe("package version order", () => {
  const pairs = realPairs();

  it(`matches dpkg --compare-versions on ${pairs.length} version pairs`, () => {
    assert.ok(pairs.length > 300, `only ${pairs.length} pairs`);
    // dpkg warns about versions outside its syntax (`^`, no leading digit): those are rpm's cases.
    const valid = pairs.filter((pair) => pair.every((v) => /^\d[\w.+~:-]*$/.test(v)));
    const expected = dpkgOrder(valid);
    const mismatches = valid.filter(([a, b], i) => compareDpkg(a, b) !== expected[i]);
    assert.deepEqual(mismatches, []);
  });

  it("matches rpm's own comparison where both sides have a release, or neither", () => {
    const comparable = pairs.filter(([a, b]) => a.includes("-") === b.includes("-"));
    assert.ok(comparable.length > 300, `only ${comparable.length} pairs`);
    const expected = rpmOrder(comparable);
    const mismatches = comparable.filter(([a, b], i) => compareRpm(a, b) !== expected[i]);
    assert.deepEqual(mismatches, []);
  });

  it("matches rpm's own comparison on generated versions with malformed or huge epochs", () => {
    const part = fc.string({ unit: fc.constantFrom(..."0123456789ab.~^_:"), maxLength: 6 });
    const epoch = fc.oneof(
      fc.constantFrom("", "0:", "1:", "01:", ":", "a:", "1a:", " 1:", "1:2:"),
      fc.constantFrom("99999999999999999999:", "99999999999999999998:"),
      part.map((text) => `${text}:`),
    );
    // Every side has a release: a side without one matches any release (above), unlike rpm.vercmp.
    const evr = fc.tuple(epoch, part, part).map(([e, v, r]) => `${e}${v}-${r}`);
    const pairs = fc.sample(fc.tuple(evr, evr), { numRuns: 1000, seed: 24 });
    const expected = rpmOrder(pairs);
    const mismatches = pairs.filter(([a, b], i) => compareRpm(a, b) !== expected[i]);
    assert.deepEqual(mismatches, []);
    assert.equal(compareRpm("1a:2-1", "1-1"), 1, "1a:2 is all version, newer than 1");
    assert.equal(compareRpm("99999999999999999999:1-1", "99999999999999999998:2-1"), 1);
  });

  it("rpm: a version without a release matches any release of it, as rpm's dependency ranges do", () => {
    assert.equal(compareRpm("1.2", "1.2-7.el9"), 0);
    assert.equal(compareRpm("1.2", "1.3-1"), -1);
    assert.equal(compareRpm("1:1.0", "2.0-1"), 1);
  });

  it("apk: suffixes, letters, revisions and fractional components in apk's order", () => {
    const ascending = [
      "1.0_alpha1",
      "1.0_beta",
      "1.0_rc2",
      "1.0",
      "1.0-r1",
      "1.0_p1",
      "1.0a",
      "1.0.1",
      "1.01",
      "1.1",
      "1.10",
    ];
    for (let i = 1; i < ascending.length; i++)
      assert.equal(
        compareApk(ascending[i - 1]!, ascending[i]!),
        -1,
        `${ascending[i - 1]} < ${ascending[i]}`,
      );
    assert.equal(compareApk("3.6.5-r0", "3.6.5"), 0);
  });
});

describe("package constraints", () => {
  const parsed = (text: string) => {
    const c = parseConstraint(text);
    assert.ok(!("error" in c), `${text}: ${"error" in c ? c.error : ""}`);
    return c;
  };
  const meets = (text: string, live: string[], format: "dpkg" | "rpm" | "apk" = "dpkg") =>
    satisfies(parsed(text), live, live.join(", "), format);

  it("comparisons in the host package manager's order, joined by commas", () => {
    assert.equal(meets(">= 3.0.15-1~deb12u1", ["3.0.15-1~deb12u1"]), true);
    assert.equal(meets(">= 3.0.15-1~deb12u1", ["3.0.14-1~deb12u2"]), false);
    assert.equal(
      meets(">= 3.0.15-1", ["3.0.15-1~deb12u1"]),
      false,
      "~ sorts before the end in dpkg",
    );
    assert.equal(meets(">= 1.2, < 2", ["1.9"]), true);
    assert.equal(meets(">= 1.2, < 2", ["2.0"]), false);
    assert.equal(meets("!= 1.4-2", ["1.4-3"]), true);
    assert.equal(meets("!= 1.4-2", ["1.4-2"]), false);
    assert.equal(meets("> 1.0", ["1:0.5"]), true, "an epoch outranks the version");
    assert.equal(meets(">= 1.2", ["1.2-7.el9"], "rpm"), true);
  });

  it("every installed instance must meet a range or a pattern; none installed meets nothing but absent", () => {
    assert.equal(meets(">= 2", ["2.1", "1.9"]), false);
    assert.equal(meets("9.*", ["9.2p1-2"]), true);
    assert.equal(meets("9.*", ["10.0"]), false);
    assert.equal(meets("*", []), false);
    assert.equal(meets(">= 0", []), false);
    assert.equal(satisfies(parsed("absent"), [], "absent", "dpkg"), true);
  });

  it("exact versions keep today's meaning: a zero epoch is no epoch, a snapshot may list instances", () => {
    assert.equal(meets("0:1.2-3", ["1.2-3"]), true);
    assert.deepEqual(parsed("3.0.14-1~deb12u2 (i386), 3.0.15-1~deb12u1 (amd64)"), {
      kind: "exact",
      version: "3.0.14-1~deb12u2 (i386), 3.0.15-1~deb12u1 (amd64)",
    });
  });

  it("refuses what is not a constraint, saying why", () => {
    for (const bad of [">=", "=> 1.2", ">= 1.2,", "~> 1.2", ">= 1 2", "9.* or 10", "^1.2 || 2"]) {
      assert.ok("error" in parseConstraint(bad), bad);
    }
    assert.match(
      (parseConstraint("=> 1.2") as { error: string }).error,
      /not a comparison like ">= 1.2"/,
    );
  });

  it("refuses the state words of other tools, naming what to declare instead", () => {
    const error = (text: string) => (parseConstraint(text) as { error?: string }).error;
    assert.equal(
      error("latest"),
      '"latest" is a package state, not a version: declare "*" for any installed version (an audit never upgrades)',
    );
    assert.match(error("Present")!, /declare "\*"/);
    assert.match(error("installed")!, /declare "\*"/);
    assert.equal(error("purged"), '"purged" is a package state, not a version: declare "absent"');
    assert.match(error("removed")!, /declare "absent"/);
  });
});
