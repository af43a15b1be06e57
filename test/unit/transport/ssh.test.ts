import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { NodeAuditError } from "../../../src/errors.js";
import type { LoadedNode } from "../../../src/manifest/load.js";
import type { SshSettings } from "../../../src/manifest/schema.js";
import { classifySshFailure, isRetriedClass } from "../../../src/transport/ssh-failure.js";
import {
  DEFAULT_RETRY,
  retryDelayMs,
  sshArgs,
  sshConfigValue,
  sshTransport,
} from "../../../src/transport/ssh.js";

const node = (ssh: SshSettings = {}, host = "web-01.example.net"): LoadedNode => ({
  name: "web-01",
  host,
  file: "fleet-manifests/nodes/web-01.yaml",
  layers: [],
  groups: [],
  spec: {},
  ssh,
});
// Retries in these tests wait a few milliseconds, not seconds.
const OPTIONS = {
  connectTimeoutSeconds: 10,
  retry: { tries: 4, firstDelayMs: 1, maxDelayMs: 4 },
};
const option = (args: string[], key: string) =>
  args.filter((a, i) => args[i - 1] === "-o" && a.startsWith(`${key}=`));

describe("ssh arguments", () => {
  it("checks host keys strictly, never prompts, never writes known_hosts", () => {
    const args = sshArgs(node(), OPTIONS);
    assert.deepEqual(option(args, "StrictHostKeyChecking"), ["StrictHostKeyChecking=yes"]);
    assert.deepEqual(option(args, "BatchMode"), ["BatchMode=yes"]);
    assert.deepEqual(option(args, "UpdateHostKeys"), ["UpdateHostKeys=no"]);
    assert.deepEqual(option(args, "ConnectTimeout"), ["ConnectTimeout=10"]);
    assert.ok(!args.some((a) => /StrictHostKeyChecking=(no|accept-new|off)/i.test(a)));
  });

  it("puts the destination after -- and runs sh -s, or sudo -n /bin/sh -s with become: sudo", () => {
    assert.deepEqual(sshArgs(node(), OPTIONS).slice(-3), ["--", "web-01.example.net", "sh -s"]);
    assert.deepEqual(sshArgs(node({ become: "sudo" }), OPTIONS).slice(-3), [
      "--",
      "web-01.example.net",
      "sudo -n /bin/sh -s",
    ]);
  });

  it("passes manifest values as quoted -o values only: nothing before -- comes unquoted from a manifest", () => {
    const args = sshArgs(
      node({
        user: "audit",
        port: 2222,
        identity_file: "~/keys/audit key",
        certificate_file: "~/keys/audit key-cert.pub",
        identity_agent: '/run/agent/"sock"',
        proxy_jump: "bastion",
        connect_timeout: 3,
      }),
      {
        ...OPTIONS,
        configFile: "/etc/qm/ssh_config",
        knownHostsFile: "/srv/fleet 100%/known_hosts",
      },
    );
    const beforeDestination = args.slice(0, args.indexOf("--"));
    assert.deepEqual(beforeDestination.slice(0, 2), ["-F", "/etc/qm/ssh_config"]);
    assert.deepEqual(option(args, "User"), ['User="audit"']);
    assert.deepEqual(option(args, "Port"), ["Port=2222"]);
    assert.deepEqual(option(args, "IdentityFile"), ['IdentityFile="~/keys/audit key"']);
    assert.deepEqual(option(args, "CertificateFile"), [
      'CertificateFile="~/keys/audit key-cert.pub"',
    ]);
    assert.deepEqual(option(args, "IdentityAgent"), ['IdentityAgent="/run/agent/\\"sock\\""']);
    // Unquoted: ssh reads a quoted ProxyJump as a host named with the quotes.
    assert.deepEqual(option(args, "ProxyJump"), ["ProxyJump=bastion"]);
    assert.deepEqual(option(args, "ConnectTimeout"), ["ConnectTimeout=3"]);
    assert.deepEqual(option(args, "UserKnownHostsFile"), [
      'UserKnownHostsFile="/srv/fleet 100%%/known_hosts"',
    ]);
    for (const [i, a] of beforeDestination.entries())
      if (a.startsWith("-"))
        assert.ok(["-F", "-T", "-o"].includes(a), `unexpected option ${a} at ${i}`);
  });

  it("passes one jump host or several, as ssh's ProxyJump takes them", () => {
    for (const jump of ["bastion", "audit@10.0.0.1:2222", "a@bastion-1:22,b@[fd00::1]:2200,inner"])
      assert.deepEqual(option(sshArgs(node({ proxy_jump: jump }), OPTIONS), "ProxyJump"), [
        `ProxyJump=${jump}`,
      ]);
  });

  it("a proxy_jump that is no jump host list fails the node, never reaches ssh", async () => {
    for (const jump of ["-oProxyCommand=sh", "a@-x", "a b", "a,,b", '"a"']) {
      const transport = sshTransport(node({ proxy_jump: jump }), OPTIONS);
      await assert.rejects(
        transport.run("true", { timeoutMs: 1000, maxOutputBytes: 1000 }),
        (e: NodeAuditError) =>
          e.kind === "probe" && /unusable.*not a jump host list/.test(e.message),
        jump,
      );
    }
  });

  it("escapes quotes and refuses control characters in a value", () => {
    assert.equal(sshConfigValue('a "b" \\c'), '"a \\"b\\" \\\\c"');
    assert.throws(() => sshConfigValue("key\nProxyCommand=sh"), /control character/);
  });

  it("an identity file that would end the option line fails the node, not the run", async () => {
    const transport = sshTransport(node({ identity_file: "/k\nProxyCommand sh" }), OPTIONS);
    await assert.rejects(
      transport.run("true", { timeoutMs: 1000, maxOutputBytes: 1000 }),
      (e: NodeAuditError) => e.status === "error" && /unusable/.test(e.message),
    );
  });
});

describe("ssh failures", () => {
  const classify = (
    stderr: string,
    exitCode = 255,
    extra: Partial<{ timedOut: boolean }> = {},
    ssh: SshSettings = {},
  ) => classifySshFailure(node(ssh), { stderr, exitCode, timedOut: false, ...extra }, 5000);

  // Captured from OpenSSH 9.2 against this repository's test hosts, a jump host among them.
  const CAPTURED: ReadonlyArray<readonly [string, string, string, string]> = [
    [
      "down behind the jump host",
      "channel 0: open failed: connect failed: Connection refused\r\nstdio forwarding failed\r\nkex_exchange_identification: Connection closed by remote host",
      "refused-by-target",
      "channel 0: open failed: connect failed: Connection refused",
    ],
    [
      "down, direct",
      "ssh: connect to host 10.213.1.5 port 22: Connection refused",
      "refused-by-target",
      "ssh: connect to host 10.213.1.5 port 22: Connection refused",
    ],
    [
      "no such name behind the jump host",
      "channel 0: open failed: connect failed: Temporary failure in name resolution\nstdio forwarding failed\nkex_exchange_identification: Connection closed by remote host",
      "name-resolution",
      "channel 0: open failed: connect failed: Temporary failure in name resolution",
    ],
    [
      "a jump host whose name does not resolve",
      "ssh: Could not resolve hostname bastion: Name or service not known\nkex_exchange_identification: Connection closed by remote host",
      "name-resolution",
      "ssh: Could not resolve hostname bastion: Name or service not known",
    ],
    [
      "a wrong user",
      "qm-nobody@10.214.1.4: Permission denied (publickey).",
      "auth",
      "qm-nobody@10.214.1.4: Permission denied (publickey).",
    ],
    [
      "refused at the jump host: its Permission denied wins over the closed connection after it",
      "audit@bastion: Permission denied (publickey).\r\nConnection closed by UNKNOWN port 65535",
      "auth",
      "audit@bastion: Permission denied (publickey).",
    ],
    [
      "an unknown host key",
      "No ED25519 host key is known for 10.214.1.4 and you have requested strict checking.\r\nHost key verification failed.",
      "host-key",
      "No ED25519 host key is known for 10.214.1.4 and you have requested strict checking.",
    ],
    [
      "a changed host key",
      "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\nIT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\nHost key verification failed.",
      "host-key",
      "WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!",
    ],
    [
      "no banner in ConnectTimeout",
      "Connection timed out during banner exchange",
      "timeout",
      "Connection timed out during banner exchange",
    ],
    [
      "no route",
      "ssh: connect to host 10.0.0.9 port 22: No route to host",
      "network-unreachable",
      "ssh: connect to host 10.0.0.9 port 22: No route to host",
    ],
    [
      "MaxStartups at the jump host",
      "kex_exchange_identification: read: Connection reset by peer\r\nConnection reset by 10.213.1.2 port 22\r\nkex_exchange_identification: Connection closed by remote host",
      "bastion-throttled",
      "kex_exchange_identification: read: Connection reset by peer",
    ],
    [
      "MaxStartups at the node",
      "kex_exchange_identification: Connection closed by remote host",
      "bastion-throttled",
      "kex_exchange_identification: Connection closed by remote host",
    ],
    [
      "closed after the banner, before authentication",
      "Connection closed by 10.0.0.9 port 22",
      "connection-lost",
      "Connection closed by 10.0.0.9 port 22",
    ],
    [
      "a session dropped after it started",
      "client_loop: send disconnect: Broken pipe",
      "ssh",
      "client_loop: send disconnect: Broken pipe",
    ],
  ];

  it("ssh's exit 255: ssh's own first line that names a cause, and its class", () => {
    for (const [what, stderr, sshClass, line] of CAPTURED) {
      const e = classify(stderr);
      assert.deepEqual([e.sshClass, e.message], [sshClass, line], what);
      const status = ["auth", "host-key"].includes(sshClass) ? "error" : "unreachable";
      assert.equal(e.status, status, what);
    }
  });

  it("only a drop before the banner or before authentication is tried again", () => {
    assert.deepEqual(
      CAPTURED.filter(([, stderr]) => isRetriedClass(classify(stderr).sshClass)).map(([w]) => w),
      [
        "MaxStartups at the jump host",
        "MaxStartups at the node",
        "closed after the banner, before authentication",
      ],
    );
  });

  it("a kill at the limit: unreachable, class timeout, saying ssh was killed", () => {
    const e = classify("kex_exchange_identification: Connection closed", undefined, {
      timedOut: true,
    });
    assert.deepEqual([e.status, e.kind, e.sshClass], ["unreachable", "timeout", "timeout"]);
    assert.match(e.message, /timed out after 5s .* ssh was killed, node not audited/);
    assert.equal(isRetriedClass(e.sshClass), false);
  });

  it("ssh saying nothing: class ssh, and that it said nothing", () => {
    assert.deepEqual(
      [classify("").sshClass, classify("").message],
      ["ssh", "ssh exited with status 255 and said nothing"],
    );
  });

  it("sudo that would prompt, and any other exit: the probe's errors, no ssh class", () => {
    const sudo = classify("sudo: a password is required", 1, {}, { become: "sudo" });
    assert.deepEqual([sudo.kind, sudo.sshClass], ["sudo", undefined]);
    assert.match(sudo.message, /sudo -n refused on web-01\.example\.net/);
    const e = classify("sh: 1: cannot open /x\nsh: 2: oops", 2);
    assert.deepEqual([e.kind, e.sshClass], ["probe", undefined]);
    assert.match(e.message, /exit 2.*oops/);
  });
});

describe("ssh retry delays", () => {
  it("waits twice as long after each failure, with jitter, up to the cap", () => {
    const policy = { tries: 8, firstDelayMs: 200, maxDelayMs: 1000 };
    assert.deepEqual(
      [1, 2, 3, 4].map((n) => [retryDelayMs(n, policy, () => 0), retryDelayMs(n, policy, () => 1)]),
      [
        [100, 200],
        [200, 400],
        [400, 800],
        [500, 1000],
      ],
    );
    assert.ok(DEFAULT_RETRY.tries > 1);
  });
});

describe("ssh process limits", () => {
  const dir = mkdtempSync(join(tmpdir(), "qm-fake-ssh-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  // A stand-in for ssh: runs its last argument's shell on stdin, like the remote side would.
  const fakeSsh = (body: string) => {
    const file = join(dir, `ssh-${Math.random().toString(36).slice(2)}`);
    writeFileSync(file, `#!/bin/sh\n${body}\n`);
    chmodSync(file, 0o755);
    return file;
  };

  it("kills ssh at the overall limit, the node's own limit first", async () => {
    const transport = sshTransport(node(), {
      ...OPTIONS,
      sshBinary: fakeSsh("exec sleep 30"),
      timeoutMs: 300,
    });
    await assert.rejects(
      transport.run("true", { timeoutMs: 60_000, maxOutputBytes: 1000 }),
      (e: NodeAuditError) => e.kind === "timeout" && /after 0\.3s/.test(e.message),
    );
  });

  it("stops a probe whose output exceeds the cap", async () => {
    const transport = sshTransport(node(), {
      ...OPTIONS,
      sshBinary: fakeSsh("exec head -c 100000 /dev/zero"),
    });
    await assert.rejects(
      transport.run("true", { timeoutMs: 10_000, maxOutputBytes: 5000 }),
      (e: NodeAuditError) => e.kind === "too-large" && /exceeded the 5000-byte cap/.test(e.message),
    );
  });

  it("stops a probe whose error output exceeds the cap", async () => {
    const transport = sshTransport(node(), {
      ...OPTIONS,
      sshBinary: fakeSsh("exec head -c 100000 /dev/zero >&2"),
    });
    await assert.rejects(
      transport.run("true", { timeoutMs: 10_000, maxOutputBytes: 5000 }),
      (e: NodeAuditError) => e.kind === "too-large" && /exceeded the 5000-byte cap/.test(e.message),
    );
  });

  it("does not wait for a process left behind holding the output open", async () => {
    // Were the transport to wait for the pipes to close, this test would hang for an hour.
    const pidFile = join(dir, "left-behind.pid");
    const transport = sshTransport(node(), {
      ...OPTIONS,
      sshBinary: fakeSsh(`sleep 3600 & echo $! > ${pidFile}; exec sleep 3600`),
      timeoutMs: 300,
    });
    try {
      await assert.rejects(
        transport.run("true", { timeoutMs: 60_000, maxOutputBytes: 1000 }),
        (e: NodeAuditError) => e.kind === "timeout",
      );
    } finally {
      process.kill(Number(readFileSync(pidFile, "utf8")));
    }
  });

  it("judges by the exit status a process that exits without reading the probe", async () => {
    const transport = sshTransport(node(), {
      ...OPTIONS,
      sshBinary: fakeSsh(
        "echo 'ssh: connect to host web-01 port 22: Connection refused' >&2; exit 255",
      ),
    });
    await assert.rejects(
      transport.run("x".repeat(4 << 20), { timeoutMs: 10_000, maxOutputBytes: 5000 }),
      (e: NodeAuditError) => e.kind === "unreachable" && /Connection refused/.test(e.message),
    );
  });

  it("reports an ssh binary that cannot be started as a failed probe", async () => {
    const transport = sshTransport(node(), { ...OPTIONS, sshBinary: join(dir, "no-such-ssh") });
    await assert.rejects(
      transport.run("true", { timeoutMs: 10_000, maxOutputBytes: 5000 }),
      (e: NodeAuditError) => e.kind === "probe" && /not audited/.test(e.message),
    );
  });

  // A stand-in ssh that fails its first `failures` runs with `stderr` and exit 255, then works.
  const flakySsh = (failures: number, stderr: string) => {
    const count = join(dir, `count-${Math.random().toString(36).slice(2)}`);
    writeFileSync(count, "");
    const file = fakeSsh(
      `echo x >> ${count}\nif [ "$(wc -l < ${count})" -le ${failures} ]; then printf '%s\\n' '${stderr}' >&2; exit 255; fi\nexec sh -s`,
    );
    return { file, runs: () => readFileSync(count, "utf8").split("\n").length - 1 };
  };

  it("tries a transient failure again, and says how many tries it took", async () => {
    const ssh = flakySsh(2, "kex_exchange_identification: Connection closed by remote host");
    const transport = sshTransport(node(), { ...OPTIONS, sshBinary: ssh.file });
    const run = await transport.run("echo ok", { timeoutMs: 10_000, maxOutputBytes: 5000 });
    assert.equal(run.stdout, "ok\n");
    assert.equal(run.tries, 3);
    assert.equal(ssh.runs(), 3);
  });

  it("gives up after the policy's tries, saying how many were made", async () => {
    const ssh = flakySsh(100, "kex_exchange_identification: Connection closed by remote host");
    const transport = sshTransport(node(), { ...OPTIONS, sshBinary: ssh.file });
    await assert.rejects(
      transport.run("true", { timeoutMs: 10_000, maxOutputBytes: 5000 }),
      (e: NodeAuditError) => e.kind === "unreachable" && e.tries === 4,
    );
    assert.equal(ssh.runs(), 4);
  });

  it("never tries an authentication failure again", async () => {
    const ssh = flakySsh(100, "audit@web-01: Permission denied (publickey).");
    const transport = sshTransport(node(), { ...OPTIONS, sshBinary: ssh.file });
    await assert.rejects(
      transport.run("true", { timeoutMs: 10_000, maxOutputBytes: 5000 }),
      (e: NodeAuditError) => e.kind === "auth" && e.tries === 1,
    );
    assert.equal(ssh.runs(), 1);
  });

  it("never tries a host that refused the connection again", async () => {
    const ssh = flakySsh(100, "channel 0: open failed: connect failed: Connection refused");
    const transport = sshTransport(node(), { ...OPTIONS, sshBinary: ssh.file });
    await assert.rejects(
      transport.run("true", { timeoutMs: 10_000, maxOutputBytes: 5000 }),
      (e: NodeAuditError) => e.sshClass === "refused-by-target" && e.tries === 1,
    );
    assert.equal(ssh.runs(), 1);
  });

  it("does not start a retry the node's time budget has no room for", async () => {
    const ssh = flakySsh(100, "kex_exchange_identification: Connection closed by remote host");
    const transport = sshTransport(node(), {
      ...OPTIONS,
      sshBinary: ssh.file,
      retry: { tries: 10, firstDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    await assert.rejects(
      transport.run("true", { timeoutMs: 10_000, maxOutputBytes: 5000 }),
      (e: NodeAuditError) => e.kind === "unreachable" && e.tries === 1,
    );
  });

  it("sends the probe on stdin and returns stdout byte for byte", async () => {
    const transport = sshTransport(node(), { ...OPTIONS, sshBinary: fakeSsh("exec sh -s") });
    const run = await transport.run("printf 'a\\377b\\n'", {
      timeoutMs: 10_000,
      maxOutputBytes: 5000,
    });
    assert.equal(run.stdout, "a\xffb\n");
  });
});
