// Fleet audits over SSH against real test hosts: one injected drift per host, every kind of
// failure, sudo, the manifest repository's known_hosts, shards and their merge. Needs root.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { parse, stringify } from "yaml";
import type { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { byName, isLatentTicket } from "../support/reports.js";
import { allSamples, specOf } from "../support/samples.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { removeTree, writeTree } from "../support/tree.js";

const SAMPLES = await allSamples();
const APP_CONF = "/etc/qm-e2e/app.conf";
const FRAMING = "/etc/qm-e2e/framing.txt";
const BIG = "/etc/qm-e2e/big.txt";
const SMALL_DECLARED = "/etc/qm-e2e/small.txt";
const ROOT_ONLY = "/etc/qm-e2e/root-only.conf";
const MAX_FILE_BYTES = 4096;

// Frame lines as the probe prints them, under a nonce the file's author had to guess.
const GUESSED = "QM0123456789abcdef01234567";
const forged = (role: string) =>
  [
    `role = ${role}`,
    `${GUESSED} end files`,
    `${GUESSED} done`,
    `${GUESSED} begin sysctl`,
    `${GUESSED} mark runtime`,
    "/proc/sys/net/ipv4/ip_forward:1",
    `${GUESSED} end sysctl`,
    `${GUESSED} done`,
    "",
  ].join("\n");

// About 1 MiB of numbered lines; `changed` alters one line in the middle.
const bigText = (changed: boolean) =>
  Array.from({ length: 16384 }, (_, i) =>
    changed && i === 8000
      ? "this line was edited on the host.........................\n"
      : `line ${String(i).padStart(6, "0")} of a file far over the cap for contents\n`,
  ).join("");

// A host `<domain>-01` per domain whose sample injects drift on a fleet host
// (test/support/samples/<name>.ts).
const DRIFT_HOSTS = SAMPLES.flatMap(({ domain, sample }) =>
  sample.fleet ? [{ name: `${domain.name}-01`, domain, injected: sample.fleet }] : [],
);
// Nodes beside them: 9 hosts (3 clean, 2 drifted, 1 in maintenance, 1 rekeyed, 2 unreachable) and
// 2 nodes that reach clean-02 as someone else (errors).
const NODES = 11 + DRIFT_HOSTS.length;
const DRIFTED = 2 + DRIFT_HOSTS.length;

/**
 * The report without what differs between two audits of the same hosts: times, and probe sizes (the
 * machine's lock table shows in every probe).
 */
const comparable = (report: Report) => ({
  ...report,
  startedAt: undefined,
  finishedAt: undefined,
  nodes: report.nodes.map((n) => ({ ...n, durationMs: undefined, probeBytes: undefined })),
});

describe("fleet audit over ssh", () => {
  let fleet: TestFleet;
  const dirs: string[] = [];
  let manifests: string;
  let report: Report;
  let audit: Awaited<ReturnType<typeof runCli>>;

  const cli = (args: string[], dir = manifests) =>
    runCli([...args, "--manifests", dir, "--ssh-config", fleet.sshConfig]);

  before(async () => {
    fleet = await startFleet([
      { name: "clean-01", files: { [APP_CONF]: { contents: "role = app\n", mode: "0644" } } },
      { name: "clean-02" },
      ...DRIFT_HOSTS.map(({ name, injected }) => ({ ...injected.host, name })),
      { name: "maint-01", maintenance: true },
      { name: "rekeyed-01" },
      { name: "framing-01", files: { [FRAMING]: { contents: forged("live"), mode: "0644" } } },
      {
        name: "bigfile-01",
        files: {
          [BIG]: { contents: bigText(true), mode: "0644" },
          [SMALL_DECLARED]: { contents: bigText(false).slice(0, 65536), mode: "0644" },
        },
      },
      {
        name: "sudo-01",
        files: {
          "/etc/sudoers.d/qm-audit": {
            contents: "qm-audit ALL=(root) NOPASSWD: /bin/sh\n",
            mode: "0440",
          },
          [ROOT_ONLY]: { contents: "token = 1\n", mode: "0600" },
        },
      },
      { name: "stopped-01", state: "stopped" },
      { name: "hang-01", state: "hang" },
    ]);
    await fleet.rotateHostKey("rekeyed-01");

    // Declared state = a clean host's live state, taken over ssh with snapshot; versions pinned, so
    // a changed one drifts.
    manifests = await writeTree({ "nodes/clean-02.yaml": "host: clean-02\n" });
    dirs.push(manifests);
    const snapshot = await cli(["snapshot", "--node", "clean-02", "--packages", "versions"]);
    assert.equal(snapshot.exitCode, 0, snapshot.stderr);
    // The snapshot keeps the node's `host`, which a fleet-wide spec cannot hold.
    const { host, ...live } = parse(snapshot.stdout) as Record<string, any>;
    assert.equal(host, "clean-02");
    assert.ok(live.packages?.installed_manifest?.bash, "the snapshot lists packages");
    const fleetSpec = {
      ...live,
      system: {
        ...live.system,
        sysctl_parameters: { "net.ipv4.ip_forward": 0, ...live.system?.sysctl_parameters },
      },
      audit: { max_file_bytes: MAX_FILE_BYTES },
    };
    const nodes: Record<string, object> = {
      "clean-01": { files: [{ path: APP_CONF, contents: "role = app\n", mode: "0644" }] },
      "clean-02": {},
      ...Object.fromEntries(
        DRIFT_HOSTS.map(({ name, domain, injected }) => [
          name,
          specOf([[domain, injected.declared]]),
        ]),
      ),
      "maint-01": {},
      "rekeyed-01": {},
      "framing-01": { files: [{ path: FRAMING, contents: forged("declared") }] },
      "bigfile-01": {
        files: [
          { path: BIG, contents: bigText(false) },
          { path: SMALL_DECLARED, contents: "short\n" },
        ],
      },
      "sudo-01": {
        ssh: { become: "sudo" },
        files: [{ path: ROOT_ONLY, contents: "token = 1\n", mode: "0600" }],
      },
      "stopped-01": {},
      // The manifest's own per-node limit: the host accepts the connection and never answers.
      "hang-01": { ssh: { timeout: 5 } },
      "auth-01": { host: "clean-02", ssh: { user: "qm-nobody" } },
      "nosudo-01": { host: "clean-02", ssh: { become: "sudo" } },
    };
    await writeFile(path.join(manifests, "fleet.yaml"), stringify(fleetSpec));
    for (const [name, spec] of Object.entries(nodes))
      await writeFile(path.join(manifests, "nodes", `${name}.yaml`), stringify(spec));

    const out = path.join(manifests, "..", `${path.basename(manifests)}-report.json`);
    audit = await cli(["audit", "--format", "json", "--out", out]);
    report = JSON.parse(await readFile(out, "utf8")) as Report;
    await removeTree(out);
  });

  after(async () => {
    await fleet?.stop();
    await Promise.all(dirs.map(removeTree));
  });

  test("every node is in the report once, with exit code 5 (drift and nodes not audited)", () => {
    assert.equal(report.nodes.length, NODES, audit.stderr);
    assert.equal(audit.exitCode, 5, audit.stderr);
    assert.deepEqual(report.summary, {
      nodes: NODES,
      clean: 3,
      drifted: DRIFTED,
      unreachable: 2,
      errors: 3,
      maintenance: 1,
      driftItems: report.summary.driftItems,
      acknowledgedItems: 0,
      latentItems: report.summary.latentItems,
    });
  });

  test("without a TTY, stderr carries a one-line summary", () => {
    assert.match(
      audit.stderr,
      new RegExp(
        `^${NODES}/${NODES} nodes finished, ${DRIFTED} drifted, 5 not audited, [\\d.]+s$`,
        "m",
      ),
    );
  });

  test("clean hosts report zero drift; latent tickets name the boot-time line that sets them", async () => {
    for (const name of ["clean-01", "clean-02", "sudo-01"]) {
      const node = byName(report, name);
      assert.equal(node.status, "clean", `${name}: ${JSON.stringify(node)}`);
      assert.deepEqual(
        node.drift.filter((d) => !isLatentTicket(d)),
        [],
      );
      for (const d of node.drift.filter(isLatentTicket)) {
        assert.equal(d.live, d.declared, JSON.stringify(d));
        assert.equal(d.latent?.after, "reboot", JSON.stringify(d));
        const [file, line] = (d.latent?.because ?? "").split(/:(?=\d+$)/);
        const text = (await readFile(file!, "utf8")).split("\n")[Number(line) - 1] ?? "";
        assert.match(
          text,
          new RegExp(`^\\s*${d.key.replaceAll(".", "\\.")}\\s*=\\s*${d.latent?.becomes}\\s*$`),
        );
      }
      assert.ok((node.probeBytes ?? 0) > 0);
    }
  });

  const driftOf = (name: string) => {
    const node = byName(report, name);
    assert.equal(node.status, "drift", `${name}: ${JSON.stringify(node)}`);
    return node.drift
      .filter((d) => !isLatentTicket(d))
      .map((d) => ({
        domain: d.domain,
        key: d.key,
        declared: d.declared,
        live: d.live,
      }));
  };

  for (const { name, domain, injected } of DRIFT_HOSTS)
    test(`${domain.name} drift on ${name} only, with declared and live values`, async () => {
      const drift = driftOf(name);
      assert.deepEqual(new Set(drift.map((d) => d.domain)), new Set([domain.name]));
      await injected.drift(
        drift.map(({ key, declared, live }) => ({ key, declared, live })),
        fleet,
      );
    });

  test("a node in maintenance is reported as such, not as drift", () => {
    const node = byName(report, "maint-01");
    assert.equal(node.status, "maintenance");
    assert.match(node.error ?? "", /maintenance marker/);
    assert.deepEqual(node.drift, []);
  });

  test("a stopped host is unreachable: ssh's own words, refused-by-target, never tried again", () => {
    const node = byName(report, "stopped-01");
    assert.equal(node.status, "unreachable");
    assert.match(node.error ?? "", /^ssh: connect to host \S+ port \d+: Connection refused$/);
    assert.equal(node.errorClass, "refused-by-target");
    assert.equal(node.tries, 1);
  });

  test("a host that accepts and never answers is unreachable: timed out, ssh killed", () => {
    const node = byName(report, "hang-01");
    assert.equal(node.status, "unreachable");
    assert.match(node.error ?? "", /timed out after 5s .*ssh was killed, node not audited/);
    assert.equal(node.errorClass, "timeout");
    // A time-out is never tried again.
    assert.equal(node.tries, 1);
  });

  test("a changed host key is an error saying so; the node is not audited", () => {
    const node = byName(report, "rekeyed-01");
    assert.equal(node.status, "error");
    assert.equal(node.error, "WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!");
    assert.equal(node.errorClass, "host-key");
    assert.deepEqual(node.drift, []);
  });

  test("an authentication failure is an error", () => {
    const node = byName(report, "auth-01");
    assert.equal(node.status, "error");
    assert.match(node.error ?? "", /^\S+@\S+: Permission denied \(publickey\)\.$/);
    assert.deepEqual([node.errorClass, node.tries], ["auth", 1]);
  });

  test("become: sudo audits as root where sudo -n is allowed, and fails clearly where it would prompt", () => {
    // sudo-01 is clean although it declares a file only root can read.
    assert.equal(byName(report, "sudo-01").status, "clean");
    const node = byName(report, "nosudo-01");
    assert.equal(node.status, "error");
    assert.match(node.error ?? "", /sudo -n refused on clean-02/);
  });

  test("framing text inside a declared file cannot forge the probe's frames", () => {
    const drift = driftOf("framing-01");
    assert.deepEqual(drift, [
      { domain: "files", key: FRAMING, declared: forged("declared"), live: forged("live") },
    ]);
  });

  test("a file far over the size cap is compared by hash and never read whole", () => {
    const node = byName(report, "bigfile-01");
    assert.equal(node.status, "drift");
    const big = node.drift.find((d) => d.key === BIG);
    assert.ok(big, JSON.stringify(node.drift));
    assert.match(big.detail ?? "", /over the 4096-byte cap.*compared by SHA-256/);
    assert.match(String(big.live), /^sha256:[0-9a-f]{64} \(\d+ bytes\)$/);
    const small = node.drift.find((d) => d.key === SMALL_DECLARED);
    assert.ok(small, JSON.stringify(node.drift));
    assert.match(small.detail ?? "", /over the 4096-byte cap.*not read/);
    // Neither file crossed the wire: the probe output is far smaller than the big file alone.
    assert.ok(
      (node.probeBytes ?? Infinity) < bigText(false).length / 2,
      `probe output ${node.probeBytes} bytes`,
    );
  });

  test("a probe answer over audit.max_output_bytes is an error saying the cap was exceeded", async () => {
    const dir = await writeTree({
      "fleet.yaml": stringify({ audit: { max_output_bytes: 20000 } }),
      // A declared file's 64 KiB of contents: the package database no longer travels whole.
      "nodes/bigfile-01.yaml": stringify({
        files: [{ path: SMALL_DECLARED, contents: "short\n" }],
      }),
    });
    dirs.push(dir);
    const r = await cli(["audit", "--format", "json"], dir);
    assert.equal(r.exitCode, 4, r.stderr);
    const node = byName(JSON.parse(r.stdout) as Report, "bigfile-01");
    assert.equal(node.status, "error");
    assert.match(node.error ?? "", /exceeded the 20000-byte cap/);
  });

  test("--timeout bounds every node: ssh is killed at the limit", async () => {
    const r = await cli(["audit", "--nodes", "hang-01", "--timeout", "3", "--format", "json"]);
    assert.equal(r.exitCode, 4, r.stderr);
    const node = byName(JSON.parse(r.stdout) as Report, "hang-01");
    assert.equal(node.status, "unreachable");
    assert.match(node.error ?? "", /timed out after 3s/);
  });

  test("known_hosts in the manifest repository is used; a host missing from it is never trusted", async () => {
    const known = (await readFile(fleet.knownHosts, "utf8")).split("\n");
    const address = (name: string) => fleet.hosts.find((h) => h.name === name)!.address;
    const onlyClean01 = `${known.find((l) => l.startsWith(`${address("clean-01")} `))}\n`;
    // No ssh_config: user, port and identity come from the manifest.
    const ssh = { user: fleet.user, port: 22, identity_file: fleet.identityFile };
    const dir = await writeTree({
      known_hosts: onlyClean01,
      "nodes/by-address-01.yaml": stringify({
        host: address("clean-01"),
        ssh,
        files: [{ path: APP_CONF, contents: "role = app\n" }],
      }),
      "nodes/by-address-02.yaml": stringify({
        host: address("clean-02"),
        ssh,
        networking: { listening_ports: ["tcp/22"] },
      }),
    });
    dirs.push(dir);
    const r = await runCli(["audit", "--manifests", dir, "--format", "json"]);
    const result = JSON.parse(r.stdout) as Report;
    assert.equal(byName(result, "by-address-01").status, "clean", JSON.stringify(result.nodes));
    const missing = byName(result, "by-address-02");
    assert.equal(missing.status, "error");
    assert.match(missing.error ?? "", /^No \S+ host key is known for \S+/);
    assert.equal(missing.errorClass, "host-key");
    assert.equal(r.exitCode, 4);
    assert.equal(
      await readFile(path.join(dir, "known_hosts"), "utf8"),
      onlyClean01,
      "known_hosts was changed",
    );
  });

  test("snapshot --node of a host that cannot be reached says why and exits 4", async () => {
    const r = await cli(["snapshot", "--node", "stopped-01"]);
    assert.equal(r.exitCode, 4);
    assert.match(r.stderr, /stopped-01: ssh: connect to host \S+ port \d+: Connection refused/);
  });

  test("three shards merged equal the unsharded report", async () => {
    const files = [1, 2, 3].map((k) => path.join(manifests, `shard-${k}.json`));
    const shards = await Promise.all(
      [1, 2, 3].map((k) =>
        cli(["audit", "--shard", `${k}/3`, "--format", "json", "--out", files[k - 1]!]),
      ),
    );
    for (const s of shards) assert.ok([0, 1, 4, 5].includes(s.exitCode), s.stderr);
    const sizes = await Promise.all(
      files.map(async (f) => (JSON.parse(await readFile(f, "utf8")) as Report).nodes.length),
    );
    assert.equal(
      sizes.reduce((a, b) => a + b),
      NODES,
    );
    const merged = await runCli(["merge-reports", ...files]);
    assert.equal(merged.exitCode, 5, merged.stderr);
    const joined = JSON.parse(merged.stdout) as Report;
    assert.equal(joined.shard, undefined);
    assert.deepEqual(comparable(joined), comparable(report));

    const overlap = await runCli(["merge-reports", files[0]!, files[0]!, files[1]!]);
    assert.equal(overlap.exitCode, 2);
    assert.match(overlap.stderr, /shard-1\.json and .*shard-1\.json both cover shard 1\/3/);
    const missing = await runCli(["merge-reports", files[0]!, files[2]!]);
    assert.equal(missing.exitCode, 2);
    assert.match(missing.stderr, /shard 2\/3 missing/);
  });
});
