// Compromised hosts over real ssh: each rewrites its own probe output on the host side (probeFilter
// in test/support/hosts.ts) or swaps a declared file for a symlink. A hostile host costs only
// itself: the fleet's report stays valid, the honest host beside it is audited normally. Needs
// root.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
import { stringify } from "yaml";
import { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { byName } from "../support/reports.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { removeTree, writeTree } from "../support/tree.js";

const PROTO_DEVICES = ["__proto__", "constructor", "toString"];
// Three block devices named like Object.prototype's members, each with mq-deadline active.
const protoDevices = `sed '/ begin io_scheduler$/a ${PROTO_DEVICES.map((d) => `/sys/block/${d}/queue/scheduler:none [mq-deadline]`).join("\\n")}'`;
// 16384 routes and as many local addresses, one network each: quadratic for a parser comparing
// every route with every address. Then a line no socket table has, so this host fails after its
// routes parsed.
const ROUTES = 16384;
const hugeRoutes = [
  "awk '{ print }",
  `/ begin routes$/ { for (i = 0; i < ${ROUTES}; i++) printf "/proc/net/route:eth0\\t00%02X%02X0A\\t00000000\\t0001\\t0\\t0\\t0\\t00FFFFFF\\t0\\t0\\t0\\n", i % 256, int(i / 256);`,
  `  for (i = 0; i < ${ROUTES}; i++) printf "local:10.%d.%d.200\\n", int(i / 256), i % 256 }`,
  '/ begin ports$/ { print "/proc/net/tcp: rewritten by a compromised host" }\'',
].join("\n");
// An honest host on a slow link: its answer, unchanged, arrives after a few seconds, so it is still
// in flight while the crafted host's output is parsed.
const slowLink = "{ sleep 3; cat; }";
// The kernel section, printed twice.
const duplicateKernel = `awk '/ begin kernel$/ { s = 1 } s { buf = buf $0 "\\n" } { print } / end kernel$/ { s = 0; printf "%s", buf }'`;

const APP = "/etc/qm-hostile/app.conf";
const SECRET = "/etc/qm-hostile/secret.key";
const QUOTED = "/etc/qm-hostile/it's-gone.conf";
const SECRET_TEXT = "token = QM-TOPSECRET-7f3a9\n";

describe("hostile hosts", () => {
  let fleet: TestFleet;
  let manifests: string;
  let work: string;
  const cli = (args: string[]) =>
    runCli([...args, "--manifests", manifests, "--ssh-config", fleet.sshConfig]);

  before(async () => {
    fleet = await startFleet([
      { name: "proto-01", probeFilter: protoDevices },
      { name: "honest-01" },
      { name: "slow-01", probeFilter: slowLink },
      { name: "routes-01", probeFilter: hugeRoutes },
      { name: "dup-01", probeFilter: duplicateKernel },
      {
        name: "swap-01",
        files: {
          "/etc/sudoers.d/qm-audit": {
            contents: "qm-audit ALL=(root) NOPASSWD: /bin/sh\n",
            mode: "0440",
          },
          [APP]: { contents: "role = app\n", mode: "0644" },
          [SECRET]: { contents: SECRET_TEXT, mode: "0600" },
        },
      },
    ]);
    // A user who can write in the declared file's directory swaps the file for a symlink to a file
    // only root reads.
    await fleet.exec("swap-01", `rm ${APP} && ln -s ${SECRET} ${APP}`);
    const scheduled = {
      storage: { io_scheduler: { "vd*": "mq-deadline", "*": "none" } },
      networking: { routes: [], listening_ports: ["tcp/22"] },
    };
    manifests = await writeTree({
      "fleet.yaml": "ssh: { connect_timeout: 10 }\n",
      "nodes/proto-01.yaml": stringify(scheduled),
      "nodes/honest-01.yaml": stringify({
        ...scheduled,
        system: { kernel_version: (await readFile("/proc/sys/kernel/osrelease", "utf8")).trim() },
      }),
      "nodes/routes-01.yaml": stringify({ networking: scheduled.networking }),
      "nodes/slow-01.yaml": stringify({ networking: scheduled.networking }),
      "nodes/dup-01.yaml": stringify({ system: { kernel_version: "6.1.0-28-amd64" } }),
      "nodes/swap-01.yaml": stringify({
        ssh: { become: "sudo" },
        files: [
          { path: APP, contents: "role = app\n" },
          { path: QUOTED, mode: "0644" },
        ],
      }),
    });
    // propose makes commits on top of the manifests' commit: the tree is a git checkout.
    const git = (...args: string[]) =>
      execa("git", ["-c", "user.name=qm", "-c", "user.email=qm@example.com", ...args], {
        cwd: manifests,
      });
    await git("init", "--quiet");
    await git("add", "-A");
    await git("commit", "--quiet", "-m", "fleet");
    work = await writeTree({});
  });
  after(async () => {
    await fleet?.stop();
    if (manifests) await removeTree(manifests);
    if (work) await removeTree(work);
  });

  test("block devices named __proto__, constructor, toString: the report validates; merge-reports, report and propose work", async () => {
    const shards = ["1/2", "2/2"].map((shard) => path.join(work, `shard-${shard[0]}.json`));
    for (const [i, out] of shards.entries()) {
      const audit = await cli([
        "audit",
        "--nodes",
        "proto-01,honest-01",
        "--shard",
        `${i + 1}/2`,
        "--format",
        "json",
        "--out",
        out,
      ]);
      assert.ok(audit.exitCode === 0 || audit.exitCode === 1, audit.stderr);
    }
    const merged = path.join(work, "merged.json");
    const merge = await runCli(["merge-reports", "--out", merged, ...shards]);
    assert.equal(merge.exitCode, 1, merge.stderr);
    const report = Report.parse(JSON.parse(await readFile(merged, "utf8")));
    const proto = byName(report, "proto-01");
    assert.equal(proto.status, "drift", proto.error);
    assert.deepEqual(
      proto.drift.map((d) => [d.domain, d.key, d.declared, d.live, d.path.at(-1)]),
      [...PROTO_DEVICES]
        .sort()
        .map((device) => ["io_scheduler", device, "none", "mq-deadline", "*"]),
    );
    assert.equal(byName(report, "honest-01").status, "clean", byName(report, "honest-01").error);

    const markdown = await runCli(["report", "--report", merged, "--format", "markdown"]);
    assert.equal(markdown.exitCode, 0, markdown.stderr);
    for (const device of PROTO_DEVICES)
      assert.ok(markdown.stdout.includes(device), `${device} missing from the job summary`);
    const propose = await runCli(
      ["propose", "--report", merged, "--dry-run", "--manifests", manifests],
      { env: {} },
    );
    assert.equal(propose.exitCode, 0, propose.stderr);
    assert.match(propose.stdout, /^would /m);
  });

  test("huge crafted routes next to an honest host: the crafted host fails alone, the honest one is audited", async () => {
    // Parsing blocks the event loop every node shares: were it quadratic, slow-01's timeout would
    // fire meanwhile.
    const audit = await cli([
      "audit",
      "--nodes",
      "routes-01,slow-01",
      "--timeout",
      "15",
      "--format",
      "json",
    ]);
    assert.equal(audit.exitCode, 4, audit.stderr);
    const report = Report.parse(JSON.parse(audit.stdout));
    const honest = byName(report, "slow-01");
    assert.deepEqual([honest.status, honest.error, honest.drift], ["clean", undefined, []]);
    const crafted = byName(report, "routes-01");
    assert.equal(crafted.status, "error");
    assert.equal(
      crafted.error,
      'probe output ports: unexpected line "/proc/net/tcp: rewritten by a compromised host"; node not audited',
    );
  });

  test("a section printed twice is that node's error, naming the section", async () => {
    const audit = await cli(["audit", "--nodes", "dup-01,honest-01", "--format", "json"]);
    assert.equal(audit.exitCode, 4, audit.stderr);
    const report = Report.parse(JSON.parse(audit.stdout));
    assert.deepEqual(
      [byName(report, "dup-01").status, byName(report, "dup-01").error],
      ["error", "probe output kernel: section appears twice in the probe output; node not audited"],
    );
    assert.equal(byName(report, "honest-01").status, "clean");
  });

  test("a declared file swapped for a symlink to a root-only file: type drift, the target's contents nowhere", async () => {
    const json = await cli(["audit", "--nodes", "swap-01", "--format", "json"]);
    assert.equal(json.exitCode, 1, json.stderr);
    const node = byName(Report.parse(JSON.parse(json.stdout)), "swap-01");
    assert.deepEqual(
      node.drift.map((d) => [d.key, d.declared, d.live, d.path.at(-1)]),
      [
        [APP, "file", `symlink -> ${SECRET}`, "type"],
        // A quote in a declared path is audited like any other: missing, not unknown.
        [QUOTED, "present", null, QUOTED],
      ],
    );
    assert.equal(node.unknown, undefined);
    const text = await cli(["audit", "--nodes", "swap-01", "--format", "text"]);
    const markdown = await cli(["audit", "--nodes", "swap-01", "--format", "markdown"]);
    for (const output of [json, text, markdown]) {
      assert.equal(
        `${output.stdout}${output.stderr}`.includes("TOPSECRET"),
        false,
        "the symlink's target was read",
      );
    }
    assert.match(text.stdout, /symlink -> \/etc\/qm-hostile\/secret\.key/);
  });
});
