// Nodes only a jump host can reach, audited through the real CLI over real sshd: a ProxyJump in
// the manifest or in an ssh_config (retries through either said once, naming the jump host), a
// fleet behind one sshd that drops connections past `MaxStartups 4:50:8`, and an authentication
// failure among them; `snapshot` and `adopt` of nodes behind it. Needs root.
import assert from "node:assert/strict";
import { chmod, copyFile, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
import { parse, stringify } from "yaml";
import type { Report } from "../../src/report/schema.js";
import { auditReport, jumpTrees } from "../support/audited-fleet.js";
import { runCli, spawnCli } from "../support/cli.js";
import { byName } from "../support/reports.js";
import { startFleet, type TestFleet } from "../support/hosts.js";

const APP_CONF = "/etc/qm-e2e/app.conf";
const DECLARED = "role = app\n";
// Behind the jump host with the private node: 39 nodes and one whose first connection is dropped.
const CROWD = Array.from({ length: 39 }, (_, i) => `n-${String(i + 1).padStart(2, "0")}`);
const tree = jumpTrees();

describe("nodes behind a jump host", () => {
  let fleet: TestFleet;
  /** The private node as an ssh_config alias whose Host block holds `ProxyJump jump-01`. */
  let configJump: string;
  /** The private node by its address (no Host block), the jump host in the manifest. */
  let manifestJump: string;

  const audit = (manifests: string, extra: string[] = [], sshConfig = fleet.sshConfig) =>
    auditReport(manifests, sshConfig, { extra });

  before(async () => {
    fleet = await startFleet([
      // VERBOSE: each connection dropped past MaxStartups is logged with the number pending.
      { name: "jump-01", sshdOptions: ["MaxStartups 4:50:8", "LogLevel VERBOSE"] },
      {
        name: "private-01",
        behind: "jump-01",
        files: { [APP_CONF]: { contents: DECLARED, mode: "0644" } },
      },
      ...CROWD.map((name) => ({ name, behind: "jump-01" })),
      { name: "late-01", behind: "jump-01", state: "drop-first" as const },
      // Its own first connection dropped, for the retry notice (late-01's is the crowd's).
      { name: "late-02", behind: "jump-01", state: "drop-first" as const },
      { name: "down-02", behind: "jump-01", state: "stopped" as const },
    ]);
    const address = fleet.hosts.find((h) => h.name === "private-01")!.address;
    const jumpAddress = fleet.hosts.find((h) => h.name === "jump-01")!.address;
    const files = [{ path: APP_CONF, contents: DECLARED, mode: "0644" }];
    configJump = await tree({ "nodes/private-01.yaml": stringify({ host: "private-01", files }) });
    const viaManifest = (proxy_jump: string) =>
      stringify({
        host: address,
        ssh: { user: fleet.user, identity_file: fleet.identityFile, proxy_jump },
        files,
      });
    manifestJump = await tree({
      "nodes/via-alias.yaml": viaManifest("jump-01"),
      "nodes/via-address.yaml": viaManifest(`${fleet.user}@${jumpAddress}:22`),
      // Two jumps: through jump-01, then from there to jump-01 again by its address.
      "nodes/via-two.yaml": viaManifest(`jump-01,${fleet.user}@${jumpAddress}:22`),
    });
    // The private node's host key, as a manifest repository keeps it.
    await copyFile(fleet.knownHosts, path.join(manifestJump, "known_hosts"));
  });

  after(() => fleet?.stop());

  test("a direct ssh to the private node cannot connect: only the jump host reaches it", async () => {
    const run = await execa(
      "ssh",
      [
        "-F",
        fleet.sshConfig,
        "-o",
        "ProxyJump=none",
        "-o",
        "ConnectTimeout=3",
        "private-01",
        "echo reached",
      ],
      { reject: false, timeout: 20_000 },
    );
    assert.equal(run.exitCode, 255, run.stdout);
    assert.doesNotMatch(run.stdout, /reached/);
  });

  test("audited clean, then with drift: the jump host in the ssh_config, and in the manifest", async () => {
    const clean = await Promise.all([audit(configJump), audit(manifestJump)]);
    for (const { report, exitCode, stderr } of clean) {
      assert.equal(exitCode, 0, stderr);
      for (const node of report.nodes) {
        assert.equal(node.status, "clean", `${node.name}: ${node.error}`);
        assert.equal(node.checked?.items, 1);
        assert.ok(node.tries !== undefined && node.tries >= 1, JSON.stringify(node));
      }
    }
    assert.deepEqual(
      clean[1].report.nodes.map((n) => n.name),
      ["via-address", "via-alias", "via-two"],
    );
    await fleet.exec("private-01", `printf 'role = hotfixed\\n' > ${APP_CONF}`);
    try {
      const drifted = await Promise.all([audit(configJump), audit(manifestJump)]);
      for (const { report, exitCode, stderr } of drifted) {
        assert.equal(exitCode, 1, stderr);
        for (const node of report.nodes) {
          assert.equal(node.status, "drift", `${node.name}: ${node.error}`);
          assert.deepEqual(
            node.drift.map((d) => [d.domain, d.key, d.live]),
            [["files", APP_CONF, "role = hotfixed\n"]],
          );
        }
      }
    } finally {
      await fleet.exec("private-01", `printf '%s' ${JSON.stringify(DECLARED)} > ${APP_CONF}`);
    }
  });

  test("a connection through the manifest's jump host that needed a retry: the run says so once, naming the jump host and ssh.max_sessions", async () => {
    const address = fleet.hosts.find((h) => h.name === "late-02")!.address;
    const manifests = await tree({
      "nodes/late-02.yaml": stringify({
        host: address,
        ssh: { user: fleet.user, identity_file: fleet.identityFile, proxy_jump: "jump-01" },
        system: { sysctl_parameters: { "net.ipv4.ip_forward": 0 } },
      }),
    });
    await copyFile(fleet.knownHosts, path.join(manifests, "known_hosts"));
    const { report, exitCode, stderr } = await audit(manifests);
    assert.equal(exitCode, 0, stderr);
    assert.equal(report.nodes[0]!.tries, 2, JSON.stringify(report.nodes[0]));
    const said = stderr.match(/jump host jump-01: .*/g) ?? [];
    assert.deepEqual(said, [
      "jump host jump-01: 1 retry on 1 node whose connections through it were dropped or reset before ssh's handshake (as an sshd past its MaxStartups drops them): set ssh.max_sessions on the nodes behind it (now 8) below that sshd's MaxStartups start value, or raise MaxStartups there",
    ]);
  });

  test("snapshot --node of a node behind the jump host, either way", async () => {
    for (const [manifests, node] of [
      [configJump, "private-01"],
      [manifestJump, "via-two"],
    ] as const) {
      const run = await runCli([
        "snapshot",
        "--manifests",
        manifests,
        "--ssh-config",
        fleet.sshConfig,
        "--node",
        node,
      ]);
      assert.equal(run.exitCode, 0, run.stderr);
      const live = parse(run.stdout) as { system?: { sysctl_parameters?: object } };
      assert.ok(live.system?.sysctl_parameters, run.stdout.slice(0, 500));
    }
  });

  /** Logins the jump host accepted from here on. */
  const jumpLogins = async () => {
    const before = (await fleet.sshdLog("jump-01")).length;
    return async () =>
      (await fleet.sshdLog("jump-01")).slice(before).match(/^Accepted publickey for /gm)?.length ??
      0;
  };

  /** Connections the jump host dropped from here on, as `#<connections pending>`. */
  const jumpDrops = async () => {
    const before = (await fleet.sshdLog("jump-01")).length;
    return async () =>
      [...(await fleet.sshdLog("jump-01")).slice(before).matchAll(/drop connection #(\d+)/g)].map(
        (m) => Number(m[1]),
      );
  };
  const adopt = (inventory: string, manifests: string, extra: string[] = []) =>
    runCli([
      "adopt",
      "--inventory",
      inventory,
      "--manifests",
      manifests,
      "--ssh-config",
      fleet.sshConfig,
      ...extra,
    ]);

  test("adopt of the private node: the jump host in the inventory, and in the ssh_config; an audit right after is clean", async () => {
    const dir = await tree();
    const address = fleet.hosts.find((h) => h.name === "private-01")!.address;
    const inventory = path.join(dir, "inventory.yml");
    await writeFile(
      inventory,
      stringify({
        all: {
          children: {
            private: {
              hosts: {
                // An ssh_config alias whose Host block holds the ProxyJump.
                "private-01": null,
                // No Host block matches its address: the jump comes from the inventory alone.
                "via-inventory": {
                  ansible_host: address,
                  ansible_user: fleet.user,
                  ansible_ssh_private_key_file: fleet.identityFile,
                  ansible_ssh_common_args: "-o ProxyJump=jump-01 -o ServerAliveInterval=30",
                },
              },
            },
          },
        },
      }),
    );
    const manifests = path.join(dir, "fleet-manifests");
    const adopted = await adopt(inventory, manifests, ["--known-hosts", fleet.knownHosts]);
    assert.equal(adopted.exitCode, 0, adopted.stderr);
    assert.match(adopted.stderr, /2 of 2 hosts adopted, 0 left out/);
    const node = async (name: string) =>
      parse(await readFile(path.join(manifests, "nodes", `${name}.yaml`), "utf8")) as Record<
        string,
        unknown
      >;
    // The identity file is a path of the adopting machine: it stays out of the tree, and the
    // summary says where it goes.
    assert.deepEqual((await node("via-inventory")).ssh, {
      user: fleet.user,
      proxy_jump: "jump-01",
    });
    assert.match(adopted.stderr, /identity files: put them in the runner's ssh config/);
    assert.equal((await node("via-inventory")).host, address);
    assert.equal((await node("private-01")).ssh, undefined);
    const validate = await runCli(["validate", "--manifests", manifests]);
    assert.equal(validate.exitCode, 0, validate.stderr);
    // As the summary says: the runner's ssh config names the key for the host the tree names.
    const runnerConfig = path.join(dir, "runner_ssh_config");
    await writeFile(
      runnerConfig,
      `Include "${fleet.sshConfig}"\nHost ${address}\n  IdentityFile "${fleet.identityFile}"\n  IdentitiesOnly yes\n`,
    );
    const { report, exitCode, stderr } = await audit(manifests, [], runnerConfig);
    assert.equal(exitCode, 0, stderr);
    assert.deepEqual(
      report.nodes.map((n) => [n.name, n.status, n.error]),
      [
        ["private-01", "clean", undefined],
        ["via-inventory", "clean", undefined],
      ],
    );
  });

  test("adopt of 24 hosts behind the jump host at default settings: all adopted through one login there, nothing dropped", async () => {
    const dir = await tree();
    const hosts = CROWD.slice(0, 24);
    const inventory = path.join(dir, "inventory.ini");
    await writeFile(inventory, `[crowd]\n${hosts.join("\n")}\n`);
    const manifests = path.join(dir, "fleet-manifests");
    const logins = await jumpLogins();
    const drops = await jumpDrops();
    const adopted = await adopt(inventory, manifests);
    assert.equal(adopted.exitCode, 0, adopted.stderr);
    assert.match(adopted.stderr, /24 of 24 hosts adopted, 0 left out/);
    // One connection to the jump host carried every host's session, as in an audit.
    assert.equal(await logins(), 1);
    assert.deepEqual(await drops(), []);
    const { report, exitCode, stderr } = await audit(manifests);
    assert.equal(exitCode, 0, stderr);
    assert.equal(report.nodes.filter((n) => n.status === "clean").length, 24);
  });

  test("adopt into a tree whose fleet.yaml has the jump host and ssh.max_sessions 4: used to reach the new hosts and to limit them", async () => {
    const far = CROWD.slice(12, 24).map((name) => ({
      name: name.replace(/^n-/, "far-"),
      address: fleet.hosts.find((h) => h.name === name)!.address,
    }));
    const manifests = await tree({
      "fleet.yaml": stringify({
        ssh: {
          user: fleet.user,
          identity_file: fleet.identityFile,
          proxy_jump: "jump-01",
          max_sessions: 4,
        },
      }),
    });
    const inventory = path.join(await tree(), "inventory.ini");
    // No Host block matches these names or addresses: the jump is the tree's alone.
    await writeFile(
      inventory,
      `[far]\n${far.map((h) => `${h.name} ansible_host=${h.address}`).join("\n")}\n`,
    );
    const drops = await jumpDrops();
    const adopted = await adopt(inventory, manifests, ["--known-hosts", fleet.knownHosts]);
    assert.equal(adopted.exitCode, 0, adopted.stderr);
    assert.match(adopted.stderr, /12 of 12 hosts adopted, 0 left out/);
    const node = parse(await readFile(path.join(manifests, "nodes/far-13.yaml"), "utf8")) as {
      host: string;
      ssh?: object;
    };
    assert.deepEqual([node.host, node.ssh], [far[0]!.address, undefined]);
    // Never more than 3 pending, below MaxStartups' 4: the jump host dropped nothing.
    assert.deepEqual(await drops(), []);
    const { report, exitCode, stderr } = await audit(manifests);
    assert.equal(exitCode, 0, stderr);
    assert.equal(report.nodes.filter((n) => n.status === "clean").length, 12);
  });

  const crowd = (extra: Record<string, object> = {}) =>
    tree(
      Object.fromEntries(
        Object.entries({
          ...Object.fromEntries(
            [...CROWD, "late-01"].map((name) => [
              name,
              { system: { sysctl_parameters: { "net.ipv4.ip_forward": 0 } } },
            ]),
          ),
          ...extra,
        }).map(([name, spec]) => [`nodes/${name}.yaml`, stringify(spec)]),
      ),
    );

  test("40 nodes behind one sshd with MaxStartups 4:50:8, default concurrency: all audited through one login there, retries reported", async () => {
    const logins = await jumpLogins();
    const drops = await jumpDrops();
    const { report, exitCode, stderr } = await audit(await crowd());
    assert.equal(exitCode, 0, stderr);
    // One connection to the jump host carried every node's session, and it dropped nothing.
    assert.equal(await logins(), 1);
    assert.deepEqual(await drops(), []);
    assert.equal(report.nodes.length, 40);
    assert.deepEqual(
      report.nodes.filter((n) => n.status !== "clean").map((n) => `${n.name}: ${n.error}`),
      [],
    );
    for (const node of report.nodes) assert.ok(node.tries! >= 1, JSON.stringify(node));
    // Its first connection was closed before any banner, as a MaxStartups drop reads.
    assert.ok(byName(report, "late-01").tries! > 1, JSON.stringify(byName(report, "late-01")));
    // The jump host is the ssh_config's alone (no manifest names it): the notice still names it.
    const said = stderr.match(/^.*jump host jump-01: .*$/gm) ?? [];
    assert.equal(said.length, 1, stderr);
    assert.match(
      said[0],
      /jump host jump-01: \d+ retr(y|ies) on \d+ nodes? whose connections through it were dropped or reset before ssh's handshake .*: set ssh\.max_sessions on the nodes behind it/,
    );
  });

  /** ssh itself on PATH, each `ssh -G` logged: `resolved()` counts them since the last count. */
  const countedSsh = async () => {
    const bin = await tree();
    const log = path.join(bin, "resolved");
    await writeFile(
      path.join(bin, "ssh"),
      `#!/bin/sh\n[ "$1" = -G ] && echo "$@" >> ${log}\nexec /usr/bin/ssh "$@"\n`,
    );
    await chmod(path.join(bin, "ssh"), 0o755);
    await writeFile(log, "");
    return {
      env: { PATH: `${bin}:${process.env.PATH}` },
      resolved: async () => {
        const count = (await readFile(log, "utf8")).split("\n").filter(Boolean).length;
        await writeFile(log, "");
        return count;
      },
    };
  };

  test("the jump host in the --ssh-config, or only in a file it includes: its 39 nodes share its 4 sessions, nothing dropped; read from the file without ssh -G, asked of ssh -G once per node", async () => {
    const manifests = await tree({
      "fleet.yaml": stringify({ ssh: { max_sessions: 4 } }),
      ...Object.fromEntries(CROWD.map((name) => [`nodes/${name}.yaml`, stringify({})])),
    });
    const including = path.join(manifests, "ssh_config");
    await writeFile(including, `Host *\n  ServerAliveInterval 30\nInclude ${fleet.sshConfig}\n`);
    const ssh = await countedSsh();
    for (const [config, resolutions] of [
      [fleet.sshConfig, 0],
      [including, CROWD.length],
    ] as const) {
      const drops = await jumpDrops();
      const { report, ...run } = await auditReport(manifests, config, {
        cli: (args) => spawnCli(args, { env: ssh.env }),
      });
      assert.equal(run.exitCode, 0, run.stderr);
      assert.deepEqual(
        report.nodes.map((n) => [n.name, n.status, n.tries]),
        CROWD.map((name) => [name, "clean", 1]),
      );
      // Counted as 39 direct sshds, 32 would start at once through the jump host, past its 4.
      assert.deepEqual(await drops(), [], config);
      assert.equal(await ssh.resolved(), resolutions, config);
    }
  });

  test("nodes reached directly, no ssh_config line that can route them: audited without one ssh -G; with a Match, one for the three alike", async () => {
    const jump = fleet.hosts.find((h) => h.name === "jump-01")!;
    const node = stringify({
      host: jump.address,
      ssh: { user: fleet.user, identity_file: fleet.identityFile, port: jump.port },
    });
    const manifests = await tree({
      "nodes/direct-1.yaml": node,
      "nodes/direct-2.yaml": node,
      "nodes/direct-3.yaml": node,
    });
    await copyFile(fleet.knownHosts, path.join(manifests, "known_hosts"));
    const ssh = await countedSsh();
    const resolved = async (extra: string[]) => {
      const out = path.join(manifests, "report.json");
      const run = await spawnCli(
        ["audit", "--manifests", manifests, "--format", "json", "--out", out, ...extra],
        { env: ssh.env },
      );
      assert.equal(run.exitCode, 0, run.stderr);
      const report = JSON.parse(await readFile(out, "utf8")) as Report;
      assert.deepEqual(
        report.nodes.map((n) => n.status),
        ["clean", "clean", "clean"],
      );
      return ssh.resolved();
    };
    // The ssh files in effect: this runner's /etc/ssh/ssh_config (its Include, followed, adds nothing that routes).
    assert.equal(await resolved([]), 0);
    const match = path.join(manifests, "match_config");
    await writeFile(match, "Match all\n  ServerAliveInterval 30\n");
    // One per distinct argument list: the three nodes' are the same.
    assert.equal(await resolved(["--ssh-config", match]), 1);
  });

  test("snapshot of 19 nodes behind the jump host at default settings: all taken through one login there, nothing dropped", async () => {
    const logins = await jumpLogins();
    const drops = await jumpDrops();
    const run = await runCli([
      "snapshot",
      "--manifests",
      await crowd(),
      "--ssh-config",
      fleet.sshConfig,
      "--node",
      "n-0*,n-1*",
    ]);
    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(run.stdout.split("\n---\n").length, 19);
    assert.equal(await logins(), 1);
    assert.deepEqual(await drops(), []);
  });

  test("an authentication failure among them fails that node at once (one try), the rest are audited", async () => {
    // The jump host's 4 sessions, at MaxStartups' 4: at the default 8, any first connection may
    // be dropped (as late-01's is above) and tried again before the authentication fails.
    const manifests = await tree({
      "fleet.yaml": stringify({ ssh: { max_sessions: 4 } }),
      "nodes/auth-01.yaml": stringify({ host: "n-01", ssh: { user: "qm-nobody" } }),
      ...Object.fromEntries(CROWD.map((name) => [`nodes/${name}.yaml`, stringify({})])),
    });
    const { report, exitCode, stderr } = await audit(manifests);
    assert.equal(exitCode, 4, stderr);
    assert.equal(report.nodes.length, 40);
    const failed = byName(report, "auth-01");
    assert.equal(failed.status, "error");
    assert.match(failed.error ?? "", /^qm-nobody@\S+: Permission denied \(publickey\)\.$/);
    assert.deepEqual([failed.errorClass, failed.tries], ["auth", 1]);
    assert.deepEqual(
      report.nodes.filter((n) => n.name !== "auth-01" && n.status !== "clean").map((n) => n.name),
      [],
    );
  });

  test("a host down behind the jump host, a name that does not resolve, a wrong user: ssh's own first line and its class", async () => {
    const manifests = await tree({
      "nodes/down-02.yaml": stringify({}),
      "nodes/ghost-01.yaml": stringify({
        host: "ghost-01.invalid",
        ssh: { proxy_jump: "jump-01" },
      }),
      "nodes/wrong-user.yaml": stringify({ host: "n-02", ssh: { user: "qm-nobody" } }),
    });
    const drops = await jumpDrops();
    const { report, exitCode, stderr } = await audit(manifests);
    assert.equal(exitCode, 4, stderr);
    // The jump host refused the first two nodes' channels of its shared connection, and only that
    // connection's own process hears why: each tried once more over a connection of its own,
    // whose ssh says it.
    assert.deepEqual(
      report.nodes.map((n) => [n.name, n.status, n.errorClass, n.tries]),
      [
        ["down-02", "unreachable", "refused-by-target", 2],
        ["ghost-01", "unreachable", "name-resolution", 2],
        ["wrong-user", "error", "auth", 1],
      ],
    );
    const errors = report.nodes.map((n) => n.error ?? "");
    assert.equal(errors[0], "channel 0: open failed: connect failed: Connection refused");
    assert.match(
      errors[1]!,
      /^channel 0: open failed: connect failed: (Temporary failure in name resolution|Name or service not known)$/,
    );
    assert.match(errors[2]!, /^qm-nobody@\S+: Permission denied \(publickey\)\.$/);
    // None of them was a MaxStartups drop at the jump host.
    assert.deepEqual(await drops(), []);
    const text = await runCli(["audit", "--manifests", manifests, "--ssh-config", fleet.sshConfig]);
    assert.match(text.stdout, /down-02.*: unreachable \(refused-by-target\)/);
    assert.match(text.stdout, /error: channel 0: open failed: connect failed: Connection refused/);
  });

  test('without the ssh_config that names the jump host: ssh\'s "Could not resolve hostname", class name-resolution, one try', async () => {
    const manifests = await tree({ "nodes/private-01.yaml": stringify({}) });
    const out = path.join(manifests, "report.json");
    const run = await runCli(["audit", "--manifests", manifests, "--format", "json", "--out", out]);
    assert.equal(run.exitCode, 4, run.stderr);
    const [node] = (JSON.parse(await readFile(out, "utf8")) as Report).nodes;
    assert.match(node!.error ?? "", /^ssh: Could not resolve hostname private-01: /);
    assert.deepEqual([node!.errorClass, node!.tries], ["name-resolution", 1]);
  });

  test("39 nodes behind the jump host (MaxStartups 4:50:8, ssh.max_sessions 4) as two and as three parallel shards, the way the workflow runs them: all audited, nothing dropped, one try each", async () => {
    const manifests = await tree({
      "fleet.yaml": stringify({ ssh: { max_sessions: 4 } }),
      ...Object.fromEntries(CROWD.map((name) => [`nodes/${name}.yaml`, stringify({})])),
    });
    for (const shards of [2, 3]) {
      const planned = await runCli([
        "plan-shards",
        "--manifests",
        manifests,
        "--shards",
        String(shards),
      ]);
      assert.equal(planned.exitCode, 0, planned.stderr);
      const plan = JSON.parse(planned.stdout) as { count: number; shards: number[] };
      assert.deepEqual(plan.shards, shards === 2 ? [1, 2] : [1, 2, 3]);
      const drops = await jumpDrops();
      const logins = await jumpLogins();
      // The matrix: every shard at once, each on its own runner.
      const runs = await Promise.all(
        plan.shards.map((k) =>
          runCli([
            "audit",
            "--manifests",
            manifests,
            "--shard",
            `${k}/${plan.count}`,
            "--ssh-config",
            fleet.sshConfig,
            "--format",
            "json",
            "--out",
            path.join(manifests, `shard-${k}.json`),
          ]),
        ),
      );
      for (const run of runs) assert.equal(run.exitCode, 0, run.stderr);
      const merged = await runCli([
        "merge-reports",
        ...plan.shards.map((k) => path.join(manifests, `shard-${k}.json`)),
      ]);
      assert.equal(merged.exitCode, 0, merged.stderr);
      const report = JSON.parse(merged.stdout) as Report;
      assert.deepEqual(
        report.nodes.map((n) => [n.name, n.status, n.tries]),
        CROWD.map((name) => [name, "clean", 1]),
      );
      // At most 4 sessions at once across the shards: sshd never had a 5th pending to drop. Each
      // shard logged in once.
      assert.deepEqual(await drops(), [], `${shards} shards`);
      assert.equal(await logins(), shards);
    }
  });

  test("plan-shards plans no more shards than the jump host's ssh.max_sessions, and says so", async () => {
    const manifests = await tree({
      "fleet.yaml": stringify({ ssh: { max_sessions: 4 } }),
      ...Object.fromEntries(CROWD.map((name) => [`nodes/${name}.yaml`, stringify({})])),
    });
    const run = await runCli(["plan-shards", "--manifests", manifests, "--shards", "6"]);
    assert.equal(run.exitCode, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { count: 4, shards: [1, 2, 3, 4], nodes: 39 });
    assert.match(run.stderr, /4 shards, not 6: .*ssh\.max_sessions \(4\)/);
  });
});
