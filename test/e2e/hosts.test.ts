// End-to-end check of the test-host library through the real ssh client. Needs root.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
import { startFleet, type TestFleet } from "../support/hosts.js";

const APP_CONF = "/etc/quartermaster-test/app.conf";
const MARKER = "/run/quartermaster/maintenance";

describe("test hosts", () => {
  let fleet: TestFleet;

  before(async () => {
    fleet = await startFleet([
      {
        name: "web-01",
        sysctls: { "net.ipv4.ip_forward": "1" },
        routes: ["198.51.100.0/24 via {gateway}"],
        listeners: ["tcp/8080", "udp/5353"],
        files: { [APP_CONF]: { contents: "role = web\n", mode: "0664" } },
        dpkgStatus: (real) =>
          `${real.trimEnd()}\n\nPackage: qm-test-package\nStatus: install ok installed\nVersion: 1.0\n\n`,
        maintenance: true,
      },
      {
        name: "db-01",
        sysctls: { "net.ipv4.ip_forward": "0" },
        // An existing file: bind-mounted over for this host only.
        files: { "/etc/debian_version": { contents: "99.9\n" } },
      },
      { name: "cache-01", state: "stopped" },
      { name: "lb-01", state: "hang" },
    ]);
  });

  // Tests must always stop the fleet in an after hook, so a failing test leaves nothing behind.
  after(async () => {
    await fleet?.stop();
  });

  const ssh = (host: string, command: string, extra: string[] = []) =>
    execa("ssh", ["-F", fleet.sshConfig, ...extra, host, command], {
      reject: false,
      timeout: 20000,
    });

  const remote = async (host: string, command: string): Promise<string> => {
    const r = await ssh(host, command);
    assert.equal(r.exitCode, 0, `ssh ${host} ${command}: ${r.stderr}`);
    return r.stdout;
  };

  test("fleet describes every host with its own address and namespace", () => {
    assert.equal(fleet.hosts.length, 4);
    assert.equal(new Set(fleet.hosts.map((h) => h.address)).size, 4);
    const netns = fs.readdirSync("/run/netns");
    for (const h of fleet.hosts) assert.ok(netns.includes(h.netns), h.netns);
    assert.match(fs.readFileSync(fleet.sshConfig, "utf8"), /Host web-01\n\s+HostName 10\.213\./);
  });

  test("sysctls differ per host as declared", async () => {
    assert.equal(await remote("web-01", "cat /proc/sys/net/ipv4/ip_forward"), "1");
    assert.equal(await remote("db-01", "cat /proc/sys/net/ipv4/ip_forward"), "0");
  });

  test("a per-host file is visible only on its host", async () => {
    assert.equal(await remote("web-01", `cat ${APP_CONF}`), "role = web");
    assert.equal(await remote("web-01", `stat -c %a ${APP_CONF}`), "664");
    assert.equal(
      await remote("db-01", `test -e ${APP_CONF} && echo present || echo absent`),
      "absent",
    );
    assert.equal(fs.existsSync(APP_CONF), false, "file leaked onto the machine");
    assert.equal(await remote("db-01", "cat /etc/debian_version"), "99.9");
    assert.notEqual(await remote("web-01", "cat /etc/debian_version"), "99.9");
  });

  test("the dpkg status transform is visible on its host only", async () => {
    assert.match(
      await remote("web-01", "grep -A1 '^Package: qm-test-package' /var/lib/dpkg/status"),
      /install ok installed/,
    );
    assert.equal(
      await remote("db-01", "grep -c '^Package: qm-test-package' /var/lib/dpkg/status || true"),
      "0",
    );
  });

  test("a listener shows in its host's /proc/net only", async () => {
    // 8080 = 0x1F90, state 0A = LISTEN; 5353 = 0x14E9.
    assert.match(await remote("web-01", "cat /proc/net/tcp"), /:1F90 00000000:0000 0A/);
    assert.match(await remote("web-01", "cat /proc/net/udp"), /:14E9 /);
    assert.doesNotMatch(await remote("db-01", "cat /proc/net/tcp"), /:1F90 /);
  });

  test("a declared route shows in /proc/net/route", async () => {
    // 198.51.100.0 in little-endian hex.
    assert.match(await remote("web-01", "cat /proc/net/route"), /\b006433C6\b/);
    assert.doesNotMatch(await remote("db-01", "cat /proc/net/route"), /\b006433C6\b/);
  });

  test("the maintenance marker exists only where set", async () => {
    assert.equal(await remote("web-01", `test -e ${MARKER} && echo yes || echo no`), "yes");
    assert.equal(await remote("db-01", `test -e ${MARKER} && echo yes || echo no`), "no");
    assert.equal(fs.existsSync(MARKER), false, "marker leaked onto the machine");
  });

  test("the audit user gets /bin/sh and a PATH without sbin", async () => {
    const out = await remote(
      "web-01",
      'id -u; id -un; getent passwd "$(id -un)" | cut -d: -f7; readlink /proc/$$/exe; echo "$PATH"',
    );
    const [uid, name, shell, exe, pathVar] = out.split("\n");
    assert.notEqual(uid, "0");
    assert.equal(name, fleet.user);
    assert.equal(shell, "/bin/sh");
    assert.match(exe ?? "", /\/(dash|sh)$/);
    assert.ok(!(pathVar ?? "").split(":").includes("/usr/sbin"), pathVar);
    assert.ok(!(pathVar ?? "").split(":").includes("/sbin"), pathVar);
  });

  test("exec injects drift inside the host", async () => {
    await fleet.exec("web-01", "printf '0\\n' > /proc/sys/net/ipv4/ip_forward");
    assert.equal(await remote("web-01", "cat /proc/sys/net/ipv4/ip_forward"), "0");
    await fleet.exec("web-01", `printf 'role = drifted\\n' > ${APP_CONF}`);
    assert.equal(await remote("web-01", `cat ${APP_CONF}`), "role = drifted");
    assert.equal(await remote("db-01", "cat /proc/sys/net/ipv4/ip_forward"), "0");
  });

  test("a stopped host refuses the connection", async () => {
    const r = await ssh("cache-01", "true");
    assert.equal(r.exitCode, 255);
    assert.match(r.stderr, /Connection refused/);
  });

  test("a hanging host times out", async () => {
    const started = Date.now();
    const r = await ssh("lb-01", "true", ["-o", "ConnectTimeout=2"]);
    assert.equal(r.exitCode, 255);
    assert.match(r.stderr, /timed out/i);
    assert.ok(Date.now() - started < 10000, "ConnectTimeout was not honoured");
  });

  test("rotateHostKey makes ssh report a changed host key", async () => {
    await fleet.rotateHostKey("db-01");
    const r = await ssh("db-01", "true");
    assert.equal(r.exitCode, 255);
    assert.match(r.stderr, /REMOTE HOST IDENTIFICATION HAS CHANGED/);
    assert.match(r.stderr, /Host key verification failed/);
    // Other hosts keep working.
    assert.equal(await remote("web-01", "echo ok"), "ok");
  });

  test("stop removes namespaces, links, processes and the temp dir", async () => {
    const netns = fleet.hosts.map((h) => h.netns);
    const dir = fleet.dir;
    // Every process inside the hosts' network namespaces: sshds, namespace anchors, listeners.
    const inodes = new Set(netns.map((n) => fs.statSync(`/run/netns/${n}`).ino));
    const inside = fs
      .readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return inodes.has(Number(/\[(\d+)\]/.exec(fs.readlinkSync(`/proc/${p}/ns/net`))?.[1]));
        } catch {
          return false;
        }
      });
    assert.ok(inside.length >= 6, `expected sshds, anchors and listeners, found ${inside.length}`);
    await fleet.stop();
    const left = (await execa("ip", ["netns", "list"])).stdout;
    for (const n of netns)
      assert.ok(!left.split("\n").some((l) => l.split(" ")[0] === n), `${n} left behind`);
    const links = (await execa("ip", ["-o", "link", "show"])).stdout;
    for (const n of netns)
      assert.ok(!links.includes(` ${n}@`) && !links.includes(` ${n}:`), `link ${n} left behind`);
    assert.equal(fs.existsSync(dir), false);
    const running = inside.filter((pid) => {
      try {
        // A zombie has exited; only its parent can reap it.
        const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
        return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
      } catch {
        return false;
      }
    });
    assert.deepEqual(running, [], "processes survived stop()");
    await fleet.stop(); // idempotent
  });
});

describe("startFleet failures", () => {
  test("a broken host definition fails naming the host and leaves nothing behind", async () => {
    // Only this process's names: other test processes start and stop hosts meanwhile.
    const ours = `qmf-${process.pid}-`;
    await assert.rejects(
      startFleet(
        [{ name: "ok-01" }, { name: "broken-01", routes: ["203.0.113.0/24 via 203.0.113.1"] }],
        { prefix: "qmf" },
      ),
      /test host broken-01: /,
    );
    assert.doesNotMatch((await execa("ip", ["netns", "list"])).stdout, new RegExp(ours));
    assert.doesNotMatch((await execa("ip", ["-o", "link", "show"])).stdout, new RegExp(ours));
    assert.equal(fs.readdirSync(os.tmpdir()).filter((e) => e.startsWith(ours)).length, 0);
  });

  test("sysctls outside net.* are refused: they would change the whole machine", async () => {
    await assert.rejects(
      startFleet([{ name: "bad-01", sysctls: { "kernel.pid_max": "4096" } }], { prefix: "qmf" }),
      /bad-01: only net\.\*/,
    );
  });
});
