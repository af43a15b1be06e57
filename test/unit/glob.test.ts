import assert from "node:assert/strict";
import { test } from "node:test";
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
