import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { globMatch, globProblem } from "../../src/glob.js";

test("globs: *, ?, classes and negated classes, everything else literal", () => {
  assert.ok(globMatch("vd*", "vdb"));
  assert.ok(!globMatch("vd*", "xvda"));
  assert.ok(globMatch("sd?", "sda") && !globMatch("sd?", "sdaa"));
  assert.ok(globMatch("nvme[0-3]n1", "nvme2n1") && !globMatch("nvme[0-3]n1", "nvme4n1"));
  assert.ok(globMatch("sd[!a]", "sdb") && !globMatch("sd[!a]", "sda"));
  assert.ok(globMatch("md.0", "md.0") && !globMatch("md.0", "md10"));
  assert.ok(
    globMatch("web-{a,b}", "web-{a,b}") && !globMatch("web-{a,b}", "web-a"),
    "no brace expansion",
  );
  assert.ok(globMatch("!web", "!web") && !globMatch("!web", "db"), "no negation");
});

test("* crosses / and matches dot names, as a waiver key like /etc/app/* needs", () => {
  assert.ok(globMatch("/etc/app/*", "/etc/app/conf.d/x.conf"));
  assert.ok(globMatch("*", ".hidden"));
  assert.ok(globMatch("tcp/*", "tcp/8080"));
});

test("a bad glob is named with the character where it goes wrong", () => {
  assert.equal(globProblem("web-["), "the [ at character 5 is never closed");
  assert.equal(globProblem("[z-a]*"), "the range z-a at character 2 is backwards");
  assert.equal(globProblem("db-[!0-9]*"), undefined);
  assert.equal(globProblem("[]a]"), undefined, "a leading ] is a member");
  assert.equal(globProblem("[[:alpha:]]*"), undefined);
  assert.equal(globProblem("a\\[b"), undefined, "an escaped [ is literal");
  assert.throws(() => globMatch("web-[", "web-["), /never closed/);
});

// Each token: its glob text and the regular expression a shell would read it as.
const TOKENS: [string, string][] = [
  ["a", "a"],
  ["b", "b"],
  ["/", "/"],
  [".", "\\."],
  ["*", "[^]*"],
  ["?", "[^]"],
  ["\\*", "\\*"],
  ["[ab]", "[ab]"],
  ["[!a]", "[^a]"],
  ["[a-c]", "[a-c]"],
  ["[]a]", "[\\]a]"],
  ["[[:digit:]]", "[0-9]"],
];

test("matches as a regular expression reading the same glob would, for any glob and text", () => {
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom(...TOKENS), { maxLength: 8 }),
      fc.string({ unit: fc.constantFrom(..."ab/.c1*]"), maxLength: 12 }),
      (tokens, text) => {
        const glob = tokens.map(([g]) => g).join("");
        const regex = new RegExp(`^${tokens.map(([, r]) => r).join("")}$`, "u");
        assert.equal(globMatch(glob, text), regex.test(text), `${glob} against ${text}`);
      },
    ),
    { numRuns: 5000 },
  );
});

test("a glob with many * against a long name that almost matches finishes (no backtracking blow-up)", () => {
  // A regular expression engine tries every way to split 64 a's among eight *: it never finishes.
  assert.equal(globMatch("*a*a*a*a*a*a*a*b", "a".repeat(64)), false);
  assert.equal(globMatch(`${"*a".repeat(40)}*b`, "a".repeat(4096)), false);
  assert.equal(globMatch(`${"*a".repeat(40)}*`, "a".repeat(4096)), true);
});

test("? and a class take one character, an astral one included; a lone trailing \\ is literal", () => {
  assert.ok(globMatch("x?y", "x😀y"));
  assert.ok(globMatch("[!a]", "/"));
  assert.ok(globMatch("a\\", "a\\"));
  assert.ok(globMatch("[\\]]", "]"));
  assert.equal(
    globProblem("[[:nope:]]"),
    "[:nope:] at character 2 is no character class (alnum, alpha, ascii, blank, cntrl, digit, graph, lower, print, punct, space, upper, word, xdigit)",
  );
  assert.equal(globProblem("[a-\\]]"), "the range a-\\] at character 2 is backwards");
});
