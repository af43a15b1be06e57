import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { execa } from "execa";
import { accounts, AccountsDeclared } from "../../../src/domains/accounts/index.js";
import { ADDED_LAST } from "../../../src/domains/accounts/cause.js";
import type { AccountsLive } from "../../../src/domains/accounts/parse.js";
import { emptyHostRecord, type HostRecord } from "../../../src/domains/host-record.js";
import { ProbeParseError } from "../../../src/errors.js";
import { parseContext } from "../../../src/probe/script.js";
import { scratchTrees } from "../../support/tree.js";
import { FIXTURE_NONCE, liveFrom } from "./fixtures.js";
import { NOBODY, runProbe } from "./live-probe.js";

const trees = scratchTrees();
const keyDir = mkdtempSync(path.join(tmpdir(), "qm-accounts-keys-"));
after(() => rmSync(keyDir, { recursive: true, force: true }));

/** A new key pair's public line and its fingerprint as `ssh-keygen -lf` prints it (the oracle). */
async function newKey(type: string, comment: string): Promise<{ line: string; print: string }> {
  const file = path.join(keyDir, `${type}-${comment}`);
  await execa("ssh-keygen", ["-q", "-t", type, "-N", "", "-C", comment, "-f", file]);
  const { stdout } = await execa("ssh-keygen", ["-lf", `${file}.pub`]);
  return { line: readFileSync(`${file}.pub`, "utf8"), print: stdout.split(" ")[1]! };
}

/**
 * The programs `script` starts under `sh -s` (each exec that succeeded), sorted, and the read()
 * calls of all its processes. strace writes a file per process (`-ff`): one file for all, under
 * load, splits an exec's line from its result.
 */
async function traced(script: string): Promise<{ programs: string[]; reads: number }> {
  const dir = mkdtempSync(path.join(keyDir, "trace-"));
  await execa("strace", ["-ff", "-qq", "-e", "trace=execve", "-o", `${dir}/x`, "sh", "-s"], {
    input: script,
  });
  const programs = readdirSync(dir).flatMap((file) =>
    [...readFileSync(path.join(dir, file), "utf8").matchAll(/^execve\("([^"]*)".* = 0$/gm)].map(
      (m) => path.basename(m[1]!),
    ),
  );
  const summary = path.join(dir, "summary");
  await execa("strace", ["-f", "-c", "-e", "trace=read", "-o", summary, "sh", "-s"], {
    input: script,
  });
  const reads = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?read$/m.exec(
    readFileSync(summary, "utf8"),
  )?.[1];
  return { programs: programs.sort(), reads: Number(reads) };
}

const PASSWD = [
  "root:x:0:0:root:/root:/bin/bash",
  "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
  "sync:x:4:65534:sync:/bin:/bin/sync",
  "alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash",
  "svc:x:999:999::/var/lib/svc:/usr/sbin/nologin",
  "",
].join("\n");
const GROUP = [
  "root:x:0:",
  "sudo:x:27:alice",
  "docker:x:998:alice,svc",
  "alice:x:1000:",
  "svc:x:999:",
  "",
].join("\n");
const SUDOERS = [
  "# comment <b>markup</b>",
  "Defaults\tenv_reset",
  "root\tALL=(ALL:ALL) ALL",
  "%sudo   ALL=(ALL:ALL) ALL",
  "#1000 ALL=(ALL) /usr/bin/true # a trailing comment",
  "@include sudoers.local",
  "#includedir /etc/sudoers.d",
  "",
].join("\n");

/** A host's tree: passwd, group, sudoers with its includes, alice's authorized keys. */
async function hostTree(extra: Record<string, string | Buffer> = {}) {
  return trees({
    "etc/passwd": PASSWD,
    "etc/group": GROUP,
    "etc/sudoers": SUDOERS,
    "etc/sudoers.local": "alice ALL=(root) \\\n  NOPASSWD: /usr/bin/apt\n",
    "etc/sudoers.d/10-ops": "%docker ALL=(ALL) /usr/bin/docker\n",
    "etc/sudoers.d/README.txt": "nobody ALL=(ALL) ALL\n",
    "etc/sudoers.d/20-old~": "nobody ALL=(ALL) ALL\n",
    ...extra,
  });
}

const DECLARED: AccountsDeclared = {
  users: {
    root: { uid: 0, group: "root", shell: "/bin/bash", home: "/root", groups: [] },
    alice: {
      uid: 1000,
      group: "alice",
      shell: "/bin/bash",
      home: "/home/alice",
      groups: ["docker", "sudo"],
    },
  },
  groups: { sudo: ["alice"] },
  sudo: [
    "Defaults env_reset",
    "root ALL=(ALL:ALL) ALL",
    "%sudo ALL=(ALL:ALL) ALL",
    "#1000 ALL=(ALL) /usr/bin/true",
    "alice ALL=(root) NOPASSWD: /usr/bin/apt",
    "%docker ALL=(ALL) /usr/bin/docker",
  ],
};

test("the probe reads passwd, group and sudoers as sudo does: includes, a folder's files but those with `.` or `~`, continuations, comments", async () => {
  const dir = await hostTree();
  const { live } = await runProbe<AccountsLive>(accounts, DECLARED, { root: { dir } });
  assert.deepEqual(
    [...live!.users!].map(([name, u]) => [name, u.uid, u.shell]),
    [
      ["root", 0, "/bin/bash"],
      ["alice", 1000, "/bin/bash"],
      // sync's shell runs no session; daemon and svc have nologin: not sent.
    ],
  );
  assert.deepEqual(
    live!.sudo!.map((e) => `${e.file}:${e.line} ${e.rule}`),
    [
      "/etc/sudoers:2 Defaults env_reset",
      "/etc/sudoers:3 root ALL=(ALL:ALL) ALL",
      "/etc/sudoers:4 %sudo ALL=(ALL:ALL) ALL",
      "/etc/sudoers:5 #1000 ALL=(ALL) /usr/bin/true",
      "/etc/sudoers.local:1 alice ALL=(root) NOPASSWD: /usr/bin/apt",
      "/etc/sudoers.d/10-ops:1 %docker ALL=(ALL) /usr/bin/docker",
    ],
  );
  assert.deepEqual(accounts.compare(DECLARED, live!), []);
});

test("an undeclared login user, a user put in the sudo group and a sudoers.d line are drift, with the file and line", async () => {
  const dir = await hostTree({
    "etc/passwd": `${PASSWD}intruder:x:1001:1001:<b>x</b> ##[warning]hi:/home/intruder:/bin/bash\n`,
    // The copy useradd kept before adding intruder.
    "etc/passwd-": PASSWD,
    "etc/group": GROUP.replace("sudo:x:27:alice", "sudo:x:27:alice,svc").concat(
      "intruder:x:1001:\n",
    ),
    "etc/sudoers.d/90-x": "# ::error::hi\nintruder ALL=(ALL) NOPASSWD: ALL\n",
  });
  const { live } = await runProbe<AccountsLive>(accounts, DECLARED, { root: { dir } });
  assert.deepEqual(accounts.compare(DECLARED, live!), [
    {
      key: "user:intruder",
      declared: null,
      live: {
        uid: 1001,
        group: "intruder",
        shell: "/bin/bash",
        home: "/home/intruder",
        groups: [],
      },
      path: ["accounts", "users", "intruder"],
      detail:
        "login shell /bin/bash, uid 1001; not in /etc/passwd-: added by the latest change of /etc/passwd",
    },
    {
      key: "group:sudo",
      declared: ["alice"],
      live: ["alice", "svc"],
      path: ["accounts", "groups", "sudo"],
      detail: "added svc",
    },
    {
      key: "sudo:intruder ALL=(ALL) NOPASSWD: ALL",
      declared: null,
      live: "intruder ALL=(ALL) NOPASSWD: ALL",
      path: ["accounts", "sudo"],
      detail: "at /etc/sudoers.d/90-x:2",
    },
  ]);
});

test("authorized keys are read as fingerprints, equal to ssh-keygen's; an appended key is drift showing its fingerprint", async () => {
  const ed = await newKey("ed25519", "alice@laptop");
  const rsa = await newKey("rsa", "alice@old");
  const added = await newKey("ecdsa", "intruder");
  const dir = await hostTree({
    "home/alice/.ssh/authorized_keys": `# keys\n${ed.line}command="echo hi",no-pty ${rsa.line}`,
  });
  const declared: AccountsDeclared = {
    users: { alice: { authorized_keys: [ed.print, rsa.print] } },
  };
  const clean = await runProbe<AccountsLive>(accounts, declared, { root: { dir } });
  assert.deepEqual(clean.live!.keys.get("alice"), [ed.print, rsa.print].sort());
  // Only key blobs leave the host: never a comment or an option.
  assert.doesNotMatch(clean.stdout, /laptop|echo hi/);
  assert.deepEqual(
    accounts.compare(declared, clean.live!).filter((f) => f.key !== "user:root"),
    [],
  );

  const appended = await hostTree({
    "home/alice/.ssh/authorized_keys": `${ed.line}${rsa.line}${added.line}`,
  });
  const { live } = await runProbe<AccountsLive>(accounts, declared, { root: { dir: appended } });
  const [finding] = accounts.compare(declared, live!).filter((f) => f.key.startsWith("user:alice"));
  assert.deepEqual(finding, {
    key: "user:alice:authorized_keys",
    declared: [ed.print, rsa.print],
    live: [ed.print, rsa.print, added.print].sort(),
    path: ["accounts", "users", "alice", "authorized_keys"],
    detail: `added ${added.print} (/home/alice/.ssh/authorized_keys)`,
  });
});

test("as a user who may not read them, sudoers and another user's keys are unknown with the reason, never drift", async () => {
  const dir = await hostTree({ "home/alice/.ssh/authorized_keys": "" });
  await execa("chmod", ["0440", path.join(dir, "etc/sudoers")]);
  await execa("chmod", ["0700", path.join(dir, "home/alice")]);
  await execa("chmod", ["a+rx", dir, path.join(dir, "etc"), path.join(dir, "home")]);
  const declared: AccountsDeclared = { ...DECLARED, users: { alice: { authorized_keys: [] } } };
  const { live } = await runProbe<AccountsLive>(accounts, declared, {
    root: { dir },
    command: NOBODY,
  });
  assert.deepEqual(live!.unknown, [
    "sudo rights: /etc/sudoers is not readable by the audit user (audit with ssh.become: sudo)",
    "authorized keys of alice: /home/alice/.ssh/authorized_keys is not readable by the audit user (audit with ssh.become: sudo)",
  ]);
  // root, undeclared, can log in: the allow-list still holds where passwd is read.
  assert.deepEqual(
    accounts.compare(declared, live!).map((f) => f.key),
    ["user:root"],
  );
});

test("the captured fixtures: root reads sudoers; another user is told it may not", () => {
  const root = liveFrom(accounts, "debian12-root.txt") as AccountsLive;
  assert.ok(root.users!.has("root"));
  assert.deepEqual(root.unknown, []);
  assert.ok(
    root.sudo!.some((e) => e.rule === "%sudo ALL=(ALL:ALL) ALL" && e.file === "/etc/sudoers"),
  );
  const snapshot = accounts.snapshot(root)!;
  assert.equal(snapshot.users!.root!.shell, "/bin/bash");
  assert.deepEqual(Object.keys(snapshot.groups ?? {}), ["sudo"]);
  assert.deepEqual(accounts.compare(snapshot, root), []);
  const nonroot = liveFrom(accounts, "debian12-nonroot.txt") as AccountsLive;
  assert.equal(nonroot.sudo, undefined);
  assert.match(nonroot.unknown[0]!, /^sudo rights: \/etc\/sudoers is not readable/);
  assert.match(nonroot.unknown[1]!, /^authorized keys of root: /);
});

test("accept round-trips: the accepted declaration compares clean", async () => {
  const dir = await hostTree({
    "etc/passwd": `${PASSWD}intruder:x:1001:1001::/home/intruder:/bin/bash\n`,
    "etc/sudoers.d/90-x": "intruder ALL=(ALL) NOPASSWD: ALL\n",
  });
  const declared: AccountsDeclared = {
    ...DECLARED,
    sudo: [...DECLARED.sudo!, "gone ALL=(ALL) ALL"],
  };
  const { live } = await runProbe<AccountsLive>(accounts, declared, { root: { dir } });
  const findings = accounts.compare(declared, live!);
  assert.equal(findings.length, 3);
  const accepted = findings.reduce((d, f) => accounts.accept!(d, f)!, declared);
  assert.deepEqual(accounts.compare(AccountsDeclared.parse(accepted), live!), []);
});

test("the schema refuses what no host holds, with words", () => {
  const issues = AccountsDeclared.safeParse({
    users: { "bad name": {}, bob: { authorized_keys: ["ssh-ed25519 AAAA"], shell: "bash" } },
    sudo: ["a\nb"],
  }).error!.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  assert.deepEqual(issues.sort(), [
    "sudo.0: one sudoers entry on one line",
    "users.bad name: bad name: a user or group name (letters, digits, _ . -, at most 32)",
    'users.bob.authorized_keys.0: a key fingerprint like "SHA256:" and 43 base64 characters',
    "users.bob.shell: an absolute path without : or a newline",
  ]);
});

test("broken output is a ProbeParseError", () => {
  const ctx = parseContext(FIXTURE_NONCE);
  for (const text of [
    `\n${FIXTURE_NONCE} mark passwd\nP broken\n`,
    `\n${FIXTURE_NONCE} mark sudoers\nL 1 rule before any file\n`,
    `\n${FIXTURE_NONCE} mark keys\nk ssh-ed25519 AAAA /not/asked\n`,
    `\n${FIXTURE_NONCE} mark other\n`,
  ])
    assert.throws(() => accounts.parse(text, ctx), ProbeParseError, text);
});

test("includes as sudo resolves them: quoted and escaped paths, a file including itself, more than 128 levels", async () => {
  const deep = Object.fromEntries(
    Array.from({ length: 130 }, (_, i) => [`etc/deep/${i}`, `@include ${i + 1}\n`]),
  );
  const dir = await hostTree({
    "etc/sudoers": [
      "Defaults env_reset",
      '@include "/etc/with space"',
      "#include /etc/escaped\\ name",
      "@include loop",
      "",
    ].join("\n"),
    "etc/with space": "a ALL=(ALL) ALL\n",
    "etc/escaped name": "b ALL=(ALL) ALL\n",
    "etc/loop": "@include loop\n",
  });
  const { live } = await runProbe<AccountsLive>(accounts, { sudo: [] }, { root: { dir } });
  assert.deepEqual(live!.unknown, ["sudo rights: /etc/loop includes itself"]);
  assert.equal(live!.sudo, undefined, "a sudoers sudo itself refuses is never compared");

  const nested = await hostTree({ "etc/sudoers": "@include deep/0\n", ...deep });
  const deeper = await runProbe<AccountsLive>(accounts, { sudo: [] }, { root: { dir: nested } });
  assert.deepEqual(deeper.live!.unknown, [
    "sudo rights: more than 128 nested includes at /etc/deep/127",
  ]);

  const fine = await hostTree({
    "etc/sudoers": 'Defaults env_reset\n@include "/etc/with space"\n#include /etc/escaped\\ name\n',
    "etc/with space": "a ALL=(ALL) ALL\n",
    "etc/escaped name": "b ALL=(ALL) ALL\n",
  });
  const read = await runProbe<AccountsLive>(accounts, { sudo: [] }, { root: { dir: fine } });
  assert.deepEqual(
    read.live!.sudo!.map((e) => `${e.file}:${e.line} ${e.rule}`),
    [
      "/etc/sudoers:1 Defaults env_reset",
      "/etc/with space:1 a ALL=(ALL) ALL",
      "/etc/escaped name:1 b ALL=(ALL) ALL",
    ],
  );
});

test("the homes are found by the shell itself, no process: every name exact (hex on the way), a name's first line, a last line without its newline, a name too long said; the same under dash, bash --posix, busybox sh, mawk and busybox awk", async () => {
  const key = await newKey("ed25519", "k");
  // A name's bytes as the host holds them: latin1 strings, so "\xff" is the byte 0xff.
  const utf8 = (text: string) => Buffer.from(text).toString("latin1");
  const users: [string, string, string][] = [
    ["root", "/root", "/bin/bash"],
    ["daemon", "/usr/sbin", "/usr/sbin/nologin"],
    ["alice", "/home/alice", "/bin/bash"],
    ["alice", "/home/alice2", "/bin/bash"],
    ["sp ace", "/home/space", "/bin/sh"],
    [utf8("\u00e9t\u00e9"), "/home/ete", "/bin/zsh"],
    ["\xff", "/home/ff", "/bin/sh"],
    ["back\\slash", "/home/back\\slash", "/bin/sh"],
    ["$(id)", "/home/$(id)", "/bin/sh"],
    ["*", "/home/star", ""],
    ["'q\"uo`te", "/home/q", "/bin/sh"],
    ["rel", "home/rel", "/bin/sh"],
    ["eight", "/home/eight", "/bin/sh:x"],
    ["L".repeat(1500), "/home/long", "/bin/sh"],
    ["last", "/home/last", "/bin/sh"],
  ];
  const passwd = users.map(([name, home, shell], i) => `${name}:x:${i}:${i}::${home}:${shell}`);
  const dir = await hostTree({
    "etc/passwd": Buffer.from(passwd.join("\n"), "latin1"),
    ...Object.fromEntries(
      users.map(([, home]) => [`${home.replace(/^\//, "")}/.ssh/authorized_keys`, key.line]),
    ),
  });
  const asked = [
    "root",
    "alice",
    "sp ace",
    "\u00e9t\u00e9",
    "\ufffd",
    "back\\slash",
    "$(id)",
    "*",
    "'q\"uo`te",
    "last",
  ];
  for (const shell of [["dash"], ["bash", "--posix"], ["busybox", "sh"]])
    for (const awk of ["", 'awk() { busybox awk "$@"; }\n']) {
      const what = `${shell.join(" ")}${awk && ", busybox awk"}`;
      const { live } = await runProbe<AccountsLive>(accounts, undefined, {
        root: { dir },
        command: [...shell, "-s"],
        edit: (script) => awk + script,
      });
      assert.deepEqual(
        [...live!.keys].sort(),
        asked.map((name) => [name, [key.print]]).sort(),
        what,
      );
      assert.equal(live!.keyFiles.get("alice"), "/home/alice/.ssh/authorized_keys", what);
      assert.deepEqual(
        live!.unknown,
        ["authorized keys of a user whose name is over 1024 bytes: not read"],
        what,
      );
    }
  // The shared awk is the section's one process where sudo rights are not asked (their folder is
  // listed by `ls`).
  const declared: AccountsDeclared = { users: { alice: { authorized_keys: [key.print] } } };
  const { script, live } = await runProbe<AccountsLive>(accounts, declared, { root: { dir } });
  assert.deepEqual(live!.keys, new Map([["alice", [key.print]]]));
  assert.deepEqual((await traced(script)).programs, ["awk", "sh"]);
});

test("a passwd of 100,000 login users: 400 are sent, the rest counted in one item; the homes of a snapshot's first 400, and of a user asked for on its last line", async () => {
  const many = Array.from(
    { length: 100_000 },
    (_, i) => `u${i}:x:${10_000 + i}:100:<script>##[error]x</script>:/home/u${i}:/bin/bash`,
  ).join("\n");
  const dir = await hostTree({ "etc/passwd": `${PASSWD}${many}\n` });
  const { live, stdout } = await runProbe<AccountsLive>(
    accounts,
    { users: { alice: {} } },
    { root: { dir } },
  );
  assert.ok(stdout.length < 100_000, `${stdout.length} bytes sent`);
  assert.doesNotMatch(stdout, /script/, "GECOS never leaves the host");
  const findings = accounts.compare({ users: { alice: {} } }, live!);
  assert.equal(findings.length, 400 + 1);
  assert.deepEqual(findings.at(-1), {
    key: "other login users",
    declared: null,
    live: 99_601,
    path: ["accounts", "users"],
    detail: "99601 more users with a login shell than the probe sends",
  });
  // The homes, read by the shell: a snapshot's first 400 login users; a user asked for who is not
  // there reads the whole file.
  const snapshot = await runProbe<AccountsLive>(accounts, undefined, { root: { dir } });
  assert.equal(snapshot.live!.keys.size, 400);
  assert.ok(snapshot.live!.keys.has("u397") && !snapshot.live!.keys.has("u398"));
  const asked: AccountsDeclared = {
    users: { ghost: { authorized_keys: [] }, u99999: { authorized_keys: [] } },
  };
  const keys = await runProbe<AccountsLive>(accounts, asked, { root: { dir } });
  assert.deepEqual([...keys.live!.keys], [["u99999", []]]);
});

test("past its first 100 lines, passwd reaches the homes loop through grep: the same homes and keys as the shell's own read, a byte per system call no longer; under dash, bash --posix, busybox sh, mawk and busybox awk", async () => {
  const [first, second] = [await newKey("ed25519", "first"), await newKey("ed25519", "second")];
  const filler = (from: number, count: number) =>
    Array.from(
      { length: count },
      (_, i) => `f${from + i}:x:${5000 + from + i}:100::/home/f${from + i}:/usr/sbin/nologin`,
    );
  // Everything past line 100 the loop must decide as before: a name's first line wins, a name's
  // `.` is no wildcard, six fields (read as seven, the shell empty) and eight, a home not absolute, login shells in a snapshot
  // among lines of no-session shells, a last line without its newline.
  const lines = [
    ...filler(0, 3),
    "alice:x:1000:1000::/home/alice:/bin/bash",
    ...filler(3, 120),
    "alice:x:1001:1001::/home/alice2:/bin/bash",
    "dotxted:x:1002:1002::/home/dotx:/bin/bash",
    "six:x:1003:1003::/home/six",
    "eight:x:1004:1004::/home/eight:/bin/sh:x",
    "rel:x:1005:1005::home/rel:/bin/sh",
    "bob:x:1006:1006::/home/bob:/usr/bin/zsh",
    "nolog:x:1007:1007::/home/nolog:/sbin/nologin",
    ...filler(123, 100),
    "last:x:1008:1008::/home/last:/bin/sh",
  ];
  const homes = ["alice", "alice2", "dotx", "six", "eight", "rel", "bob", "nolog", "last"];
  const dir = await hostTree({
    "etc/passwd": lines.join("\n"),
    ...Object.fromEntries(
      homes.map((home) => [
        `home/${home}/.ssh/authorized_keys`,
        home === "alice2" ? second.line : first.line,
      ]),
    ),
  });
  const asked = ["alice", "dot.ted", "six", "eight", "rel", "bob", "nolog", "last", "ghost"];
  const declared: AccountsDeclared = {
    users: Object.fromEntries(asked.map((name) => [name, { authorized_keys: [] }])),
  };
  for (const shell of [["dash"], ["bash", "--posix"], ["busybox", "sh"]])
    for (const awk of ["", 'awk() { busybox awk "$@"; }\n']) {
      const what = `${shell.join(" ")}${awk && ", busybox awk"}`;
      const run = (wanted: AccountsDeclared | undefined) =>
        runProbe<AccountsLive>(accounts, wanted, {
          root: { dir },
          command: [...shell, "-s"],
          edit: (script) => awk + script,
        });
      const { live } = await run(declared);
      assert.deepEqual(
        [...live!.keys].sort(),
        ["alice", "bob", "last", "nolog", "six"].map((name) => [name, [first.print]]),
        what,
      );
      assert.equal(live!.keyFiles.get("alice"), "/home/alice/.ssh/authorized_keys", what);
      // A snapshot: the login users' keys, those of no-session shells never.
      const snapshot = await run(undefined);
      assert.deepEqual(
        [...snapshot.live!.keys.keys()]
          .filter((name) => !["root", "daemon", "sync", "svc"].includes(name))
          .sort(),
        ["alice", "bob", "dotxted", "last", "six"],
        what,
      );
    }
  // The shell reads its first 100 lines a byte at a time; of a file of 100,000 lines, grep reads
  // the rest, and the loop only the lines grep passes on.
  const many = [
    ...lines.slice(0, -1),
    ...filler(1000, 100_000),
    "last:x:1008:1008::/home/last:/bin/sh",
  ];
  const big = await hostTree({
    "etc/passwd": `${many.join("\n")}\n`,
    "home/last/.ssh/authorized_keys": first.line,
  });
  const { script, live } = await runProbe<AccountsLive>(accounts, declared, { root: { dir: big } });
  assert.deepEqual(live!.keys.get("last"), [first.print]);
  const { programs, reads } = await traced(script);
  assert.deepEqual(programs, ["awk", "grep", "sh"]);
  assert.ok(reads < 20_000, `${reads} reads`);
});

test("cause: /etc/passwd or /etc/group changed since the last audit is the edit; unchanged since says nothing", () => {
  const since = Date.parse("2026-01-02T00:00:00Z");
  const record = {
    owned: new Map(),
    digest: new Map(),
    stat: new Map([
      ["/etc/passwd", { mtime: since + 60_000, owner: "root" }],
      ["/etc/group", { mtime: since - 60_000, owner: "root" }],
    ]),
    packages: [],
    conffiles: [],
    apt: [],
  };
  const item = (key: string) => ({ key, declared: null, live: {}, path: ["accounts"] });
  assert.deepEqual(accounts.records!({}), { files: ["/etc/passwd", "/etc/group"] });
  assert.deepEqual(accounts.cause!(item("user:intruder"), record, { node: "web-01", since }), {
    kind: "file-edit",
    at: "2026-01-02T00:01:00Z",
    evidence: "/etc/passwd modified at 2026-01-02T00:01:00Z, owner root, since the last audit",
    group: "file-edit: web-01 /etc/passwd",
  });
  assert.equal(accounts.cause!(item("group:sudo"), record, { node: "web-01", since }), undefined);
  assert.equal(accounts.cause!(item("user:intruder"), record, { node: "web-01" }), undefined);
  assert.equal(
    accounts.cause!(item("sudo:x ALL=(ALL) ALL"), record, { node: "web-01", since }),
    undefined,
  );
});

/** A host's record: the files' mtimes, dpkg's conffiles and events, configure steps, apt runs. */
const recordOf = (parts: Partial<HostRecord>): HostRecord => ({
  ...emptyHostRecord(),
  ...parts,
});

test("records: a package's configure steps where users are declared, the sudoers files and key files where declared", () => {
  assert.deepEqual(accounts.records!({ users: { alice: { authorized_keys: [] } }, sudo: [] }), {
    files: ["/etc/passwd", "/etc/group"],
    steps: true,
    globs: [
      "/etc/sudoers",
      "/etc/sudoers.d/*",
      "/root/.ssh/authorized_keys",
      "/home/*/.ssh/authorized_keys",
    ],
  });
});

test("cause: a login user the latest change of /etc/passwd added while dpkg configured a package is that package's", () => {
  const since = Date.parse("2026-01-02T00:00:00Z");
  const at = (s: string) => Date.parse(`2026-01-02T${s}Z`);
  const record = recordOf({
    stat: new Map([["/etc/passwd", { mtime: at("01:00:01"), owner: "root" }]]),
    steps: [
      { name: "qm-svc", version: "1.0", start: at("01:00:00"), end: at("01:00:02") },
      { name: "later", version: "2.0", start: at("02:00:00") },
    ],
    apt: [
      {
        start: at("00:59:59"),
        end: at("01:00:03"),
        commandline: "apt-get install qm-svc",
        requestedBy: "alice (1000)",
      },
    ],
  });
  const user = (detail: string) => ({
    key: "user:qmsvc",
    declared: null,
    live: {},
    path: ["accounts", "users", "qmsvc"],
    detail,
  });
  const added = `login shell /bin/bash, uid 998; ${ADDED_LAST}`;
  assert.deepEqual(accounts.cause!(user(added), record, { node: "web-01", since }), {
    kind: "package",
    at: "2026-01-02T01:00:01Z",
    by: "apt-get (alice)",
    evidence:
      "qmsvc added to /etc/passwd at 2026-01-02T01:00:01Z, while dpkg configured qm-svc 1.0 (its maintainer script)",
    group: "package: qm-svc 1.0 configured",
  });
  // A user already in /etc/passwd- was added before that change: the file's edit, no more.
  assert.equal(
    accounts.cause!(user("login shell /bin/bash, uid 998"), record, { node: "web-01", since })!
      .kind,
    "file-edit",
  );
  // Outside a configure step, within apt's run: the transaction, not a package it names.
  const unpacked = recordOf({ ...record, steps: [] });
  assert.deepEqual(accounts.cause!(user(added), unpacked, { node: "web-01", since }), {
    kind: "package",
    at: "2026-01-02T01:00:01Z",
    by: "apt-get (alice)",
    evidence:
      "qmsvc added to /etc/passwd at 2026-01-02T01:00:01Z, while `apt-get install qm-svc` ran",
    group: "package: apt-get install qm-svc",
  });
  // No transaction when passwd changed: the edit.
  const manual = recordOf({ ...record, steps: [], apt: [] });
  assert.equal(accounts.cause!(user(added), manual, { node: "web-01", since })!.kind, "file-edit");
});

test("cause: a sudo entry's file changed since the last audit is the edit, at its file and line; a package's conffile installed since is the package", () => {
  const since = Date.parse("2026-01-02T00:00:00Z");
  const at = (s: string) => Date.parse(`2026-01-02T${s}Z`);
  const entry = (file: string) => ({
    key: "sudo:qmsvc ALL=(root) NOPASSWD: /usr/bin/true",
    declared: null,
    live: "qmsvc ALL=(root) NOPASSWD: /usr/bin/true",
    path: ["accounts", "sudo"],
    detail: `at ${file}:2, /etc/sudoers.d/zz:1`,
  });
  const record = recordOf({
    stat: new Map([
      ["/etc/sudoers.d/90-alice", { mtime: at("03:00:00"), owner: "root" }],
      // dpkg gives a file the mtime it has in the package.
      ["/etc/sudoers.d/qm-svc", { mtime: Date.parse("2025-06-01T00:00:00Z"), owner: "root" }],
      ["/etc/sudoers.d/old", { mtime: since - 1000, owner: "root" }],
    ]),
    owned: new Map([["/etc/sudoers.d/qm-svc", { package: "qm-svc", digest: "0".repeat(32) }]]),
    packages: [{ at: at("01:00:00"), action: "install", name: "qm-svc", to: "1.0" }],
  });
  const ctx = { node: "web-01", since };
  assert.deepEqual(accounts.cause!(entry("/etc/sudoers.d/90-alice"), record, ctx), {
    kind: "file-edit",
    at: "2026-01-02T03:00:00Z",
    evidence:
      "/etc/sudoers.d/90-alice modified at 2026-01-02T03:00:00Z, owner root, since the last audit: /etc/sudoers.d/90-alice:2 holds it",
    group: "file-edit: web-01 /etc/sudoers.d/90-alice",
  });
  assert.deepEqual(accounts.cause!(entry("/etc/sudoers.d/qm-svc"), record, ctx), {
    kind: "package",
    at: "2026-01-02T01:00:00Z",
    by: "dpkg",
    evidence: "/etc/sudoers.d/qm-svc:2 holds it, a conffile of qm-svc since qm-svc (new) → 1.0",
    group: "package: qm-svc (new) → 1.0",
  });
  // Edited after the package put it there: the edit.
  const edited = recordOf({
    ...record,
    stat: new Map([["/etc/sudoers.d/qm-svc", { mtime: at("02:00:00"), owner: "alice" }]]),
  });
  assert.equal(accounts.cause!(entry("/etc/sudoers.d/qm-svc"), edited, ctx)!.kind, "file-edit");
  // Unchanged since the last audit, no package: nothing recorded it.
  assert.equal(accounts.cause!(entry("/etc/sudoers.d/old"), record, ctx), undefined);
});

test("cause: an authorized_keys file changed since the last audit is the edit", () => {
  const since = Date.parse("2026-01-02T00:00:00Z");
  const file = "/home/alice/.ssh/authorized_keys";
  const record = recordOf({
    stat: new Map([[file, { mtime: since + 5000, owner: "alice" }]]),
  });
  const item = {
    key: "user:alice:authorized_keys",
    declared: [],
    live: ["SHA256:x"],
    path: ["accounts", "users", "alice", "authorized_keys"],
    detail: `added SHA256:x (${file})`,
  };
  assert.deepEqual(accounts.cause!(item, record, { node: "web-01", since }), {
    kind: "file-edit",
    at: "2026-01-02T00:00:05Z",
    evidence: `${file} modified at 2026-01-02T00:00:05Z, owner alice, since the last audit`,
    group: `file-edit: web-01 ${file}`,
  });
  assert.equal(accounts.cause!(item, record, { node: "web-01", since: since + 6000 }), undefined);
});
