import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { execFileSync } from "node:child_process";
import { firstHop } from "../../../src/transport/session-gate.js";
import { scanSshConfig, sshConfigHop } from "../../../src/transport/ssh-config-scan.js";

describe("an ssh_config text's lines that can route a node", () => {
  it("Match, CanonicalizeHostname, in any case, with = or spaces; a HostName, Port, ProxyJump or ProxyCommand not evaluated here", () => {
    for (const line of [
      "ProxyJump %r@bastion",
      "ProxyJump bastion # the way in",
      "ProxyJump bastion:0022",
      "ProxyJump [::1]:22",
      "ProxyJump ssh://bastion/",
      "ProxyJump bastion.",
      "ProxyJump a b",
      "ProxyCommand",
      "  proxycommand 'nc' %h %p",
      "\tMatch host web-*",
      "HostName=%h.example.net",
      "HostName 10.0.0.1 # web",
      "Port ssh",
      "Host Web-01\n  HostName 10.0.0.1",
      'Host "a b"\n  Port 2222',
      "CANONICALIZEHOSTNAME yes",
      "proxyjump",
      'Host "a b"\n  ProxyJump bastion',
    ])
      assert.equal(scanSshConfig(`Host *\n  Port 22\n${line}\n`).routes, true, line);
  });

  it("ProxyJump and ProxyCommand lines under plain Host blocks are read, not routing", () => {
    assert.deepEqual(
      scanSshConfig("ProxyJump=none\nHost web-*\n  ProxyJump ssh://audit@b-1:2222,10.0.0.1\n"),
      {
        routes: false,
        includes: [],
        settings: [
          { keyword: "proxyjump", value: "none" },
          { patterns: ["web-*"], keyword: "proxyjump", value: "ssh://audit@b-1:2222,10.0.0.1" },
        ],
      },
    );
    assert.deepEqual(scanSshConfig("Host x\n  ProxyCommand nc %h %p\n").settings, [
      { patterns: ["x"], keyword: "proxycommand", value: "nc %h %p" },
    ]);
  });

  it("other keywords, comments and Host patterns that look like one do not", () => {
    const text = "# ProxyJump bastion\nHost proxyjump match\n  User audit\n  Port 2222\n";
    assert.deepEqual(scanSshConfig(text), {
      routes: false,
      includes: [],
      settings: [{ patterns: ["proxyjump", "match"], keyword: "port", value: "2222" }],
    });
  });

  it("an Include gives its paths; one with quotes, % tokens or ${} variables routes", () => {
    assert.deepEqual(scanSshConfig("Include /etc/ssh/ssh_config.d/*.conf ~/.ssh/extra\n"), {
      routes: false,
      includes: ["/etc/ssh/ssh_config.d/*.conf", "~/.ssh/extra"],
      settings: [],
    });
    for (const line of ['Include "a b"', "Include %d/x", "Include ${HOME}/x"])
      assert.equal(scanSshConfig(line).routes, true, line);
  });
});

describe("whether the ssh configuration in effect may route a node", () => {
  const dir = mkdtempSync(join(tmpdir(), "qm-ssh-scan-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const home = join(dir, "home");
  const etc = join(dir, "etc");
  mkdirSync(join(home, ".ssh"), { recursive: true });
  mkdirSync(join(etc, "ssh_config.d"), { recursive: true });
  const systemFile = join(etc, "ssh_config");
  const write = (file: string, text: string) => writeFileSync(file, text);
  const mayRoute = async (configFile?: string) =>
    (await sshConfigHop({ systemFile, homes: [home], ...(configFile && { configFile }) })) ===
    undefined;

  it("follows the system file's Include glob, relative paths from its directory", async () => {
    write(systemFile, "Include ssh_config.d/*.conf\nHost *\n  SendEnv LANG\n");
    assert.equal(await mayRoute(), false);
    write(join(etc, "ssh_config.d", "notes.txt"), "ProxyJump bastion\n");
    assert.equal(await mayRoute(), false, "the glob does not match notes.txt");
    write(join(etc, "ssh_config.d", "50-jump.conf"), "Host inner-*\n  ProxyJump %h-bastion\n");
    assert.equal(await mayRoute(), true);
    rmSync(join(etc, "ssh_config.d", "50-jump.conf"));
  });

  it("reads ~/.ssh/config and what it includes from ~/.ssh, nested", async () => {
    write(join(home, ".ssh", "config"), "Include more\n");
    write(join(home, ".ssh", "more"), "Include ~/.ssh/deeper\n");
    assert.equal(await mayRoute(), false, "deeper is missing: ssh skips it");
    write(join(home, ".ssh", "deeper"), "Match all\n  ProxyCommand none\n");
    assert.equal(await mayRoute(), true);
  });

  it("with -F only that file counts, neither the user's nor the system's", async () => {
    const config = join(dir, "only");
    write(config, "Host *\n  User audit\n");
    assert.equal(await mayRoute(config), false);
    write(config, "Include /nonexistent/*.conf\nInclude ~other/x\n");
    assert.equal(await mayRoute(config), true, "~other cannot be expanded here");
    // A relative Include in a -F file is under ~/.ssh, as for the user's own file.
    write(config, "Include only\n");
    assert.equal(await mayRoute(config), false);
    write(config, `Include ${config}\n`);
    assert.equal(await mayRoute(config), true, "an Include loop past ssh's depth");
  });
});

describe("a node's sshd from plain Host blocks, as ssh -G resolves it", () => {
  const dir = mkdtempSync(join(tmpdir(), "qm-ssh-sshd-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const configFile = join(dir, "ssh_config");

  it("the first HostName and Port of the blocks whose patterns take the host, a -o Port first", async () => {
    writeFileSync(
      configFile,
      [
        "Port 2200",
        "Host web-* !web-09",
        "  HostName 10.0.0.7",
        "Host web-0?",
        "  HostName 10.0.0.8",
        "  Port 2201",
        "Host db-01 db-02",
        "  HostName=DB.example.net",
        "Host *",
        "  HostName 10.0.0.9",
        "  Port 2202",
        "",
      ].join("\n"),
    );
    const resolve = await sshConfigHop({ configFile });
    assert.ok(resolve);
    for (const [host, port] of [
      ["web-01", undefined],
      ["web-09", undefined],
      ["web-10", undefined],
      ["db-02", 2222],
      ["db-03", undefined],
      ["10.1.2.3", 22],
    ] as const) {
      const resolved = execFileSync("ssh", [
        "-G",
        "-F",
        configFile,
        ...(port ? ["-o", `Port=${port}`] : []),
        "--",
        host,
      ]).toString();
      const hop = resolve(host, port, undefined);
      assert.equal(hop && `${hop.hostname}:${hop.port}`, firstHop(resolved), host);
    }
    assert.equal(resolve("Web-01", undefined, undefined), undefined, "ssh -G decides capitals");
  });

  it("an Include among HostName or Port lines leaves it to ssh -G", async () => {
    writeFileSync(join(dir, "more"), "Host x\n  User audit\n");
    writeFileSync(configFile, `Host web-*\n  Include ${join(dir, "more")}\n  HostName 10.0.0.7\n`);
    assert.equal(await sshConfigHop({ configFile }), undefined);
  });
});
