// Accounts a hostile host holds, over real ssh through the real CLI with `become: sudo`: user names
// and GECOS fields with markup, runner commands, control characters and `__proto__`, sudoers
// comments and rules with the same, and a /etc/passwd of 100,000 login users. Each is bounded and
// escaped in every format, and the node beside them audits clean: one node's problem only. Needs
// root.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
import { stringify } from "yaml";
import { loginShell } from "../../src/domains/accounts/parse.js";
import { OTHER_LOGIN_USERS } from "../../src/domains/accounts/index.js";
import { Report } from "../../src/report/schema.js";
import { auditThroughCli, type CliResult } from "../support/cli.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";
import { runnerCommandLines } from "../support/runner-commands.js";
import { removeTree, writeTree } from "../support/tree.js";

const HOSTS = ["evil-01", "flood-01", "calm-01"];
/** Raw characters no terminal or log should receive from a host. */
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]/u;
const PASSWD = [
  "__proto__:x:3001:3001::/home/__proto__:/bin/bash",
  "<!--evil-->:x:3002:3002:<b>gecos</b> ##[error]g \u001b[2J:/home/evil:/bin/bash",
  "##[error]pwn:x:3003:3003::/tmp:/bin/bash",
  "esc\u001b[2Jname\u202e:x:3004:3004::/tmp:/bin/bash",
  "",
].join("\n");
const GROUP = "__proto__:x:3001:__proto__,<!--evil-->\n";
const SUDOERS = [
  "# <!-- comment --> ##[error]comment \u00a0::error::comment \u001b]0;title\u0007",
  'Defaults:__proto__ lecture_file="/tmp/ ::error::pwned"',
  "__proto__ ALL=(ALL) /bin/echo \\:\\:error\\:\\:pwned",
  "%qmhostile ALL=(ALL) /bin/echo <b>bold</b> <\\!--x",
  "",
].join("\n");

function assertClean(result: CliResult, what: string): void {
  for (const text of [result.stdout, result.stderr]) {
    const raw = RAW.exec(text);
    assert.equal(raw, null, `${what} holds a raw control character:\n${JSON.stringify(text)}`);
  }
  assert.deepEqual(runnerCommandLines(`${result.stdout}\n${result.stderr}`), [], what);
  assert.doesNotMatch(result.stderr, /^\s+at /m, `${what}: a stack trace reached the user`);
}

describe("hostile accounts", () => {
  let fleet: TestFleet;
  let manifests: string;
  let declared: string[];

  before(async () => {
    fleet = await startFleet(HOSTS.map((name) => ({ name, writable: ["/etc"] })));
    const file = (name: string, text: string) => writeFile(path.join(fleet.dir, name), text);
    await file("passwd", PASSWD);
    await file("group", GROUP);
    await file("sudoers", SUDOERS);
    // sudo would refuse every rule, the audit user's too, over a file it cannot parse.
    await execa("visudo", ["-cqf", path.join(fleet.dir, "sudoers")]);
    const sudo = `printf '%s\\n' '${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh' > /etc/sudoers.d/qm-audit && chmod 0440 /etc/sudoers.d/qm-audit`;
    // Each host's passwd and group copied into its own overlay now: the machine's may change later.
    for (const name of HOSTS)
      await fleet.exec(name, `chmod 0644 /etc/passwd /etc/group && ${sudo}`);
    const passwd = await fleet.exec("calm-01", "cat /etc/passwd");
    declared = passwd
      .split("\n")
      .map((line) => line.split(":"))
      .filter((f) => f.length === 7 && loginShell(f[6]!))
      .map((f) => f[0]!);
    await fleet.exec(
      "evil-01",
      [
        `cat ${fleet.dir}/passwd >> /etc/passwd`,
        `cat ${fleet.dir}/group >> /etc/group`,
        `install -m 0440 ${fleet.dir}/sudoers /etc/sudoers.d/50-hostile`,
      ].join(" && "),
    );
    await fleet.exec(
      "flood-01",
      `awk 'BEGIN { for (i = 0; i < 100000; i++) printf "f%d:x:%d:100:<b>##[error]</b>:/home/f%d:/bin/bash\\n", i, 20000 + i, i }' >> /etc/passwd`,
    );
    const spec = stringify({
      ssh: { become: "sudo" },
      accounts: { users: Object.fromEntries(declared.map((n) => [n, {}])) },
    });
    manifests = await writeTree(
      Object.fromEntries(HOSTS.map((name) => [`nodes/${name}.yaml`, spec])),
    );
  });
  after(async () => {
    await fleet?.stop();
    if (manifests) await removeTree(manifests);
  });

  const cli = (format: string, ...more: string[]) =>
    auditThroughCli(manifests, fleet.sshConfig)(format, ...more);

  test("the JSON report: each hostile name an item, a flood one item counting it, the calm node clean", async () => {
    const out = path.join(manifests, "report.json");
    const result = await cli("json", "--out", out);
    assert.equal(result.exitCode, 1, result.stderr);
    const text = await readFile(out, "utf8");
    const report = Report.parse(JSON.parse(text));
    const node = (name: string) => report.nodes.find((n) => n.name === name)!;
    assert.equal(node("calm-01").status, "clean", JSON.stringify(node("calm-01")));
    assert.deepEqual(
      node("evil-01")
        .drift.map((d) => d.key)
        .sort(),
      ["user:##[error]pwn", "user:<!--evil-->", "user:__proto__", "user:esc\u001b[2Jname\u202e"],
    );
    assert.deepEqual(node("evil-01").drift.find((d) => d.key === "user:__proto__")!.live, {
      uid: 3001,
      group: "__proto__",
      shell: "/bin/bash",
      home: "/home/__proto__",
      groups: ["__proto__"],
    });
    assert.doesNotMatch(text, /gecos/, "GECOS never leaves the host");
    const flood = node("flood-01");
    assert.equal(flood.drift.length, 401);
    assert.equal(flood.drift.at(-1)!.key, OTHER_LOGIN_USERS);
    assert.equal(flood.drift.at(-1)!.live, 100_000 - 400);
    assert.ok(text.length < 1_000_000, `${text.length} bytes of report`);
  });

  test("text, Markdown and the sudo rules hold no raw host bytes or runner commands", async () => {
    for (const format of ["text", "markdown"]) {
      const result = await cli(format);
      assert.equal(result.exitCode, 1, result.stderr);
      assertClean(result, `audit --format ${format}`);
      if (format === "markdown") assert.doesNotMatch(result.stdout, /<!--evil|<b>/);
    }
    // Sudo rights declared (none): each hostile rule is an item, the comment none.
    const sudoSpec = stringify({ ssh: { become: "sudo" }, accounts: { sudo: [] } });
    await writeFile(path.join(manifests, "nodes", "evil-01.yaml"), sudoSpec);
    const result = await cli("text", "--nodes", "evil-01");
    assert.equal(result.exitCode, 1, result.stderr);
    assertClean(result, "audit of sudo rights");
    assert.ok(result.stdout.includes("/etc/sudoers.d/50-hostile:2"), result.stdout);
    assert.ok(result.stdout.includes("/etc/sudoers.d/50-hostile:3"), result.stdout);
    assert.ok(result.stdout.includes("/etc/sudoers.d/50-hostile:4"), result.stdout);
    assert.doesNotMatch(result.stdout, /comment/);
  });
});
