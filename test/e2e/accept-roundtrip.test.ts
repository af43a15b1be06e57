// Every accept PR round-trips: a fleet of real sshd test hosts, each with its own drift, audited
// through the real CLI, `propose` against the real git server and the GitHub double, every PR
// merged through the API, and one audit again: each node is clean, and no node's effective
// declared state changed anywhere but where its own drift was accepted. Needs root.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { after, before, describe, it } from "node:test";
import { execa } from "execa";
import { parse } from "yaml";
import { domainByName } from "../../src/domains/registry.js";
import { loadFleet, type LoadedNode } from "../../src/manifest/load.js";
import { parseMarker } from "../../src/propose/marker.js";
import { Report, type DriftItem } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import type { GitServer } from "../support/git-server.js";
import type { GitHubDouble } from "../support/github-double/index.js";
import { startForge } from "../support/forge.js";
import { startFleet, type HostDefinition, type TestFleet } from "../support/hosts.js";
import { removeTree, writeTree } from "../support/tree.js";

const TOKEN = "ghs_accept_roundtrip";
const OWNER = "acme";
const REPO = "fleet";
const M = "fleet-manifests";
const CAP = 4096;
/** Another engineer's per-run budget of new PRs: every propose here stays within it. */
const PR_BUDGET = 10;

const DIR = "/etc/qm-accept";
const APP = `${DIR}/app.conf`;
const GONE = `${DIR}/gone.conf`;
const BIN = `${DIR}/blob.bin`;
const BIG = `${DIR}/big.txt`;
const BIGDECL = `${DIR}/bigdecl.txt`;
const REWRITTEN = `${DIR}/rewritten.txt`;
const SHA = `${DIR}/hashed.conf`;
const MODE = `${DIR}/mode.conf`;
const OWN = `${DIR}/owned.conf`;
const STRAY = `${DIR}/stray.conf`;
const SUBDIR = `${DIR}/sub`;
const SECRET = `${DIR}/secret.env`;

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
const lines = (letter: string, bytes: number) =>
  `${letter.repeat(63)}\n`.repeat(Math.ceil(bytes / 64)).slice(0, bytes);
/**
 * 600 lines in under 3 KB (the cap is 4 KB): rewritten on every line, 1,200 edited lines, more than
 * the line diff searches (MAX_DIFF_EDITS).
 */
const rewritten = (letter: string) =>
  Array.from({ length: 600 }, (_, i) => `${letter}${i}\n`).join("");
const bumpBash = (status: string) =>
  status.replace(/^(Package: bash\n(?:.+\n)*?Version: )(.+)$/m, "$1$2+hotfix1");
const blockText = (text: string, indent: string) =>
  text
    .split("\n")
    .map((l) => (l ? indent + l : l))
    .join("\n");
const yaml = (...rows: string[]) => `${rows.join("\n")}\n`;
const sysctls = (...rows: string[]) => [
  "system:",
  "  sysctl_parameters:",
  ...rows.map((r) => `    ${r}`),
];

/** Nodes with nothing to accept: their effective spec must come out unchanged. */
const CONTROLS = ["sysctl-list-ok", "routes-shared-ok", "pkg-ok", "files-ok", "files-secret-ok"];

/**
 * What each node's drift should edit: where the value was declared, or an override in the node
 * file.
 */
const EDITS: Record<string, string[]> = {
  "sysctl-map": [`${M}/nodes/sysctl-map.yaml`], // node file, map form
  "sysctl-list": [`${M}/nodes/sysctl-list.yaml`], // a group's list form, shared with a control: override
  "sysctl-list-node": [`${M}/nodes/sysctl-list-node.yaml`], // node file, list form
  "sysctl-missing-1": [`${M}/groups/sysctl-base.yaml`], // a base group, every node under it drifted alike
  "sysctl-missing-2": [`${M}/groups/sysctl-base.yaml`],
  "sysctl-list-missing": [`${M}/nodes/sysctl-list-missing.yaml`], // node file, list form: the item goes
  "sysctl-shadowed": [`${M}/nodes/sysctl-shadowed.yaml`], // declared by a group and the node file: null in the node file
  "io-dev": [`${M}/nodes/io-dev.yaml`],
  "io-glob": [`${M}/groups/storage.yaml`], // a group of one: the device gets its own entry beside the glob
  "io-none": [`${M}/nodes/io-none.yaml`], // a glob matching no device goes
  "routes-extra": [`${M}/nodes/routes-extra.yaml`], // fleet.yaml, shared: override
  "routes-missing": [`${M}/nodes/routes-missing.yaml`],
  "routes-shared": [`${M}/nodes/routes-shared.yaml`], // group shared with routes-shared-ok: the node's own list
  "ports-extra": [`${M}/nodes/ports-extra.yaml`], // fleet.yaml, shared: override
  "ports-closed": [`${M}/groups/ports-group.yaml`],
  "pkg-version": [`${M}/nodes/pkg-version.yaml`], // group shared with pkg-ok: override
  "pkg-missing": [`${M}/nodes/pkg-missing.yaml`],
  "pkg-absent": [`${M}/groups/pkg-base.yaml`], // base group
  "files-text": [`${M}/nodes/files-text.yaml`], // group shared with files-ok: override of one keyed item
  "files-deleted": [`${M}/nodes/files-deleted.yaml`], // the same, fields of an inherited item deleted with null
  "files-bin": [`${M}/nodes/files-bin.yaml`],
  "files-big": [`${M}/groups/files-base.yaml`], // base group
  "files-bigdecl": [`${M}/nodes/files-bigdecl.yaml`],
  "files-rewritten": [`${M}/nodes/files-rewritten.yaml`], // every line changed: past the line diff's bound
  "files-sha": [`${M}/nodes/files-sha.yaml`],
  "files-mode": [`${M}/groups/files-mode.yaml`],
  "files-owner": [`${M}/nodes/files-owner.yaml`],
  "files-group": [`${M}/nodes/files-group.yaml`],
  "files-absent": [`${M}/nodes/files-absent.yaml`],
  "files-gone": [`${M}/nodes/files-gone.yaml`], // a block item's fields removed, absent added
  "files-secret": [`${M}/nodes/files-secret.yaml`], // a secret's hash, group shared with files-secret-ok: override
};
/** Drift the manifest cannot take: a ticket PR, which acknowledges the drift once merged. */
const TICKETS = ["files-dir"];

/**
 * One propose per round, each under the PR budget. The kernel drift is on every node but the
 * controls.
 */
const ROUNDS: { category: string; nodes?: string[] }[] = [
  { category: "sysctl,io_scheduler,kernel" },
  { category: "routes,ports,packages" },
  {
    category: "files",
    nodes: [
      "files-ok",
      "files-text",
      "files-deleted",
      "files-bin",
      "files-big",
      "files-bigdecl",
      "files-sha",
    ],
  },
  {
    category: "files",
    nodes: [
      "files-mode",
      "files-owner",
      "files-group",
      "files-absent",
      "files-gone",
      "files-secret",
      "files-secret-ok",
      "files-dir",
      "files-rewritten",
    ],
  },
];

let fleet: TestFleet;
let server: GitServer;
let double: GitHubDouble;
let work: string;
let release: string;
let device: { name: string; active: string; others: string[] } | undefined;

const env = () => double.cliEnv();
const repoArgs = () => [
  "--repo",
  server.repoUrl(OWNER, REPO),
  "--cache-dir",
  path.join(work, "cache"),
];

async function audit(name: string, extra: string[]): Promise<Report> {
  const file = path.join(work, `${name}.json`);
  const args = [
    "audit",
    ...repoArgs(),
    "--ssh-config",
    fleet.sshConfig,
    "--format",
    "json",
    "--out",
    file,
    ...extra,
  ];
  const result = await runCli(args, { env: env() });
  assert.ok(
    result.exitCode === 0 || result.exitCode === 1,
    `audit exited ${result.exitCode}: ${result.stderr}`,
  );
  return Report.parse(JSON.parse(await readFile(file, "utf8")));
}

async function checkout(): Promise<string> {
  const dir = await mkdtemp(path.join(work, "checkout-"));
  const url = server.repoUrl(OWNER, REPO).replace("http://", `http://x-access-token:${TOKEN}@`);
  await execa("git", ["clone", "--quiet", url, dir]);
  return dir;
}

async function effectiveSpecs(): Promise<Map<string, LoadedNode["spec"]>> {
  const dir = await checkout();
  const loaded = await loadFleet(path.join(dir, M), { displayPrefix: M });
  return new Map(loaded.nodes.map((n) => [n.name, n.spec]));
}

/**
 * The scheduler of a block device that offers at least three: /sys is shared by every test host.
 */
async function blockDevice(): Promise<typeof device> {
  const { stdout } = await execa("sh", [
    "-c",
    "grep -H -s '' /sys/block/*/queue/scheduler || true",
  ]);
  for (const line of stdout.split("\n")) {
    const m = /^\/sys\/block\/([^/]+)\/queue\/scheduler:(.*)$/.exec(line);
    if (!m || /^(loop|ram|nbd)\d+$/.test(m[1]!)) continue;
    const words = m[2]!.trim().split(/\s+/);
    const active = words.find((w) => w.startsWith("["))?.slice(1, -1);
    const others = words.filter((w) => !w.startsWith("["));
    if (active && others.length >= 2) return { name: m[1]!, active, others };
  }
  return undefined;
}

function hosts(): HostDefinition[] {
  const file = (contents: string | Buffer, mode = "0644") => ({ contents, mode });
  const appOk = { [APP]: file("role = app\n"), [GONE]: file("x = 1\n") };
  return [
    { name: "sysctl-map", sysctls: { "net.ipv4.ip_forward": "1" } },
    { name: "sysctl-list", sysctls: { "net.ipv4.ip_default_ttl": "65" } },
    { name: "sysctl-list-ok", sysctls: { "net.ipv4.ip_default_ttl": "64" } },
    { name: "sysctl-list-node", sysctls: { "net.ipv4.tcp_syncookies": "1" } },
    { name: "sysctl-missing-1" },
    { name: "sysctl-missing-2" },
    { name: "sysctl-list-missing" },
    { name: "sysctl-shadowed" },
    { name: "io-dev" },
    { name: "io-glob" },
    { name: "io-none" },
    { name: "routes-extra", routes: ["198.51.100.0/24 via {gateway}"] },
    { name: "routes-missing" },
    { name: "routes-shared" },
    { name: "routes-shared-ok", routes: ["203.0.113.0/24 via {gateway} dev eth0"] },
    { name: "ports-extra", listeners: ["tcp/8080"] },
    { name: "ports-closed" },
    { name: "pkg-version", dpkgStatus: bumpBash },
    { name: "pkg-ok" },
    { name: "pkg-missing" },
    { name: "pkg-absent" },
    { name: "files-ok", files: appOk },
    { name: "files-text", files: { ...appOk, [APP]: file("role = hotfixed\n") } },
    { name: "files-deleted", files: { [APP]: file("role = app\n") } },
    { name: "files-bin", files: { [BIN]: file(Buffer.from([0xff, 0x00, 0xfe, 0x0a])) } },
    { name: "files-big", files: { [BIG]: file(lines("b", CAP * 2)) } },
    { name: "files-bigdecl", files: { [BIGDECL]: file(lines("l", CAP + 1000)) } },
    { name: "files-rewritten", files: { [REWRITTEN]: file(rewritten("l")) } },
    { name: "files-sha", files: { [SHA]: file("new\n") } },
    { name: "files-mode", files: { [MODE]: file("m\n", "0640") } },
    { name: "files-owner", files: { [OWN]: file("o\n") } },
    { name: "files-group", files: { [OWN]: file("g\n") } },
    { name: "files-absent", files: { [STRAY]: file("left behind\n") } },
    { name: "files-dir", files: { [`${SUBDIR}/inner.conf`]: file("i\n") } },
    { name: "files-gone" },
    { name: "files-secret", files: { [SECRET]: file("TOKEN=rotated\n") } },
    { name: "files-secret-ok", files: { [SECRET]: file("TOKEN=old\n") } },
  ];
}

function manifests(
  baseline: { routes: unknown[]; ports: string[] },
  bash: string,
): Record<string, string> {
  const flow = (value: unknown) => JSON.stringify(value);
  const gateway = fleet.gateway;
  const pinned = `system:\n  kernel_version: ${release}   # pinned to the running release\n`;
  const tree: Record<string, string> = {
    "README.md": "Fleet manifests.\n",
    [`${M}/fleet.yaml`]: [
      "# Fleet-wide defaults.",
      "audit:",
      `  max_file_bytes: ${CAP}`,
      "policy:",
      "  routes: { on_drift: accept }",
      "  ports: { on_drift: accept }",
      "  kernel: { on_drift: accept }",
      "system:",
      "  kernel_version: 0.0.0-qm-old   # the fleet's release",
      "networking:",
      `  routes: ${flow(baseline.routes)}`,
      `  listening_ports: ${flow(baseline.ports)}   # ssh only`,
      "",
    ].join("\n"),
    [`${M}/groups/sysctl-lists.yaml`]: yaml(
      "# The seed's list form.",
      ...sysctls("- net.ipv4.ip_default_ttl = 64"),
    ),
    [`${M}/groups/sysctl-base.yaml`]: yaml(
      ...sysctls("net.ipv4.qm_no_such_param: 1   # a tunable this kernel lacks"),
    ),
    [`${M}/groups/sysctl-mid.yaml`]: "groups: [sysctl-base]\n",
    [`${M}/groups/sysctl-shadow.yaml`]: yaml(...sysctls("net.ipv4.qm_gone: 1")),
    [`${M}/groups/ports-group.yaml`]: yaml(
      "networking:",
      "  listening_ports:",
      "    - tcp/22",
      "    - tcp/9999   # the old admin port",
    ),
    [`${M}/groups/pkgs.yaml`]: `packages:\n  installed_manifest:\n    bash: "${bash}"\n`,
    [`${M}/groups/pkg-base.yaml`]: yaml(
      "packages:",
      "  installed_manifest:",
      "    coreutils: absent   # should never be there",
    ),
    [`${M}/groups/pkg-mid.yaml`]: "groups: [pkg-base]\n",
    [`${M}/groups/files-group.yaml`]: [
      "files:",
      `  - path: ${APP}`,
      '    contents: "role = app\\n"',
      '    mode: "0644"',
      `  - { path: ${GONE}, contents: "x = 1\\n", mode: "0644" }`,
      "",
    ].join("\n"),
    [`${M}/groups/files-base.yaml`]: `files:\n  - { path: ${BIG}, contents: "short\\n" }\n`,
    [`${M}/groups/files-mid.yaml`]: "groups: [files-base]\n",
    [`${M}/groups/routed.yaml`]: yaml(
      "networking:",
      "  routes:",
      `    - { dst: 203.0.113.0/24, via: ${gateway}, dev: eth0 }`,
    ),
    [`${M}/groups/secrets.yaml`]: yaml(
      "files:",
      `  - path: ${SECRET}`,
      `    sha256: ${sha256("TOKEN=old\n")}`,
      "    secret: true",
    ),
    [`${M}/groups/files-mode.yaml`]: `files:\n  - { path: ${MODE}, mode: "0644" }\n`,
    [`${M}/nodes/sysctl-map.yaml`]:
      "system:\n  sysctl_parameters:\n    net.ipv4.ip_forward: 0   # not a router\n",
    [`${M}/nodes/sysctl-list.yaml`]: "groups: [sysctl-lists]\n",
    [`${M}/nodes/sysctl-list-ok.yaml`]: `groups: [sysctl-lists]\n${pinned}`,
    [`${M}/nodes/sysctl-list-node.yaml`]: yaml(
      ...sysctls("- net.ipv4.tcp_syncookies = 0", "- net.ipv4.ip_forward = 0"),
    ),
    [`${M}/nodes/sysctl-missing-1.yaml`]: "groups: [sysctl-mid]\n",
    [`${M}/nodes/sysctl-missing-2.yaml`]: "groups: [sysctl-mid]\n",
    [`${M}/nodes/sysctl-shadowed.yaml`]: yaml(
      "groups: [sysctl-shadow]",
      ...sysctls("net.ipv4.qm_gone: 2   # this node's own"),
    ),
    [`${M}/nodes/sysctl-list-missing.yaml`]: yaml(
      ...sysctls(
        "- net.ipv4.ip_forward = 0",
        "- net.ipv4.qm_nope = 1",
        "- net.ipv4.ip_default_ttl = 64",
      ),
    ),
    [`${M}/nodes/routes-extra.yaml`]: "# routes come from fleet.yaml\n",
    [`${M}/nodes/routes-missing.yaml`]: yaml(
      "networking:",
      "  routes:",
      ...[...baseline.routes, { dst: "203.0.113.0/24", via: gateway, dev: "eth0" }].map(
        (r) => `    - ${flow(r)}`,
      ),
    ),
    [`${M}/nodes/routes-shared.yaml`]: "groups: [routed]\n",
    [`${M}/nodes/routes-shared-ok.yaml`]: `groups: [routed]\n${pinned}`,
    [`${M}/nodes/ports-extra.yaml`]: "# ports come from fleet.yaml\n",
    [`${M}/nodes/ports-closed.yaml`]: "groups: [ports-group]\n",
    [`${M}/nodes/pkg-version.yaml`]: "groups: [pkgs]\n",
    [`${M}/nodes/pkg-ok.yaml`]: `groups: [pkgs]\n${pinned}`,
    [`${M}/nodes/pkg-missing.yaml`]:
      'packages:\n  installed_manifest:\n    qm-e2e-not-installed: "1.0"\n',
    [`${M}/nodes/pkg-absent.yaml`]: "groups: [pkg-mid]\n",
    [`${M}/nodes/files-ok.yaml`]: `groups: [files-group]\n${pinned}`,
    [`${M}/nodes/files-text.yaml`]: "groups: [files-group]\n",
    [`${M}/nodes/files-deleted.yaml`]: "groups: [files-group]\n",
    [`${M}/nodes/files-bin.yaml`]: `files:\n  - { path: ${BIN}, contents: "text\\n" }\n`,
    [`${M}/nodes/files-big.yaml`]: "groups: [files-mid]\n",
    [`${M}/nodes/files-bigdecl.yaml`]: yaml(
      "files:",
      `  - path: ${BIGDECL}`,
      "    contents: |",
      blockText(lines("d", CAP + 1000), "      "),
    ),
    [`${M}/nodes/files-rewritten.yaml`]: yaml(
      "files:",
      `  - path: ${REWRITTEN}`,
      "    contents: |",
      blockText(rewritten("d"), "      "),
    ),
    [`${M}/nodes/files-sha.yaml`]: `files:\n  - { path: ${SHA}, sha256: ${sha256("old\n")} }\n`,
    [`${M}/nodes/files-mode.yaml`]: "groups: [files-mode]\n",
    [`${M}/nodes/files-owner.yaml`]: `files:\n  - { path: ${OWN}, owner: nobody }\n`,
    [`${M}/nodes/files-group.yaml`]: `files:\n  - { path: ${OWN}, group: nogroup }\n`,
    [`${M}/nodes/files-absent.yaml`]: `files:\n  - { path: ${STRAY}, absent: true }\n`,
    [`${M}/nodes/files-gone.yaml`]: yaml(
      "files:",
      `  - path: ${DIR}/gone-too.conf`,
      '    contents: "x\\n"   # written by the installer',
      '    mode: "0644"',
      "    owner: root",
    ),
    [`${M}/nodes/files-secret.yaml`]: "groups: [secrets]\n",
    [`${M}/nodes/files-secret-ok.yaml`]: `groups: [secrets]\n${pinned}`,
    [`${M}/nodes/files-dir.yaml`]: `files:\n  - { path: ${SUBDIR}, contents: "x\\n" }\n`,
  };
  if (device) {
    const [first, second] = device.others;
    const glob = `${device.name.slice(0, -1)}[${device.name.at(-1)}]`;
    tree[`${M}/nodes/io-dev.yaml`] = `storage:\n  io_scheduler:\n    ${device.name}: ${first}\n`;
    tree[`${M}/groups/storage.yaml`] =
      `storage:\n  io_scheduler:\n    "${glob}": ${second}   # by pattern\n`;
    tree[`${M}/nodes/io-glob.yaml`] = "groups: [storage]\n";
    tree[`${M}/nodes/io-none.yaml`] =
      'storage:\n  io_scheduler:\n    "qm-none*": none   # no such device\n';
  }
  return tree;
}

/**
 * What accepting `item` may change in a node's spec: the declared item (for a glob, also the
 * device's own entry).
 */
function touched(item: DriftItem): (string | number)[][] {
  const domain = domainByName(item.domain)!;
  if (item.domain === "routes" || item.domain === "ports" || item.domain === "kernel")
    return [[...domain.specPath]];
  const own = item.path.slice(0, domain.specPath.length + 1);
  return item.domain === "io_scheduler" ? [own, [...domain.specPath, item.key]] : [own];
}

/** A spec with keyed lists as maps and the given paths removed, for comparing what else changed. */
function without(spec: unknown, paths: (string | number)[][]): unknown {
  const copy = structuredClone(spec) as Record<string, any>;
  if (Array.isArray(copy.files))
    copy.files = Object.fromEntries(copy.files.map((f: { path: string }) => [f.path, f]));
  for (const p of paths) {
    const parent = p.slice(0, -1).reduce<any>((at, k) => at?.[k], copy);
    if (parent && typeof parent === "object") delete parent[String(p.at(-1))];
  }
  return copy;
}

describe("every accept PR round-trips", () => {
  const drifted = new Map<string, DriftItem[]>();
  let before_: Map<string, LoadedNode["spec"]>;

  before(async () => {
    work = await mkdtemp(path.join(tmpdir(), "qm-accept-e2e-"));
    release = (await readFile("/proc/sys/kernel/osrelease", "utf8")).trim();
    device = await blockDevice();
    fleet = await startFleet(hosts().filter((h) => device || !h.name.startsWith("io-")));
    // The routes and ports every host has, taken over ssh with snapshot.
    const probeTree = await writeTree({ "nodes/sysctl-map.yaml": "{}\n" });
    const snapshot = await runCli([
      "snapshot",
      "--node",
      "sysctl-map",
      "--manifests",
      probeTree,
      "--ssh-config",
      fleet.sshConfig,
    ]);
    await removeTree(probeTree);
    assert.equal(snapshot.exitCode, 0, snapshot.stderr);
    const live = parse(snapshot.stdout) as {
      networking?: { routes?: unknown[]; listening_ports?: string[] };
    };
    const status = await readFile("/var/lib/dpkg/status", "utf8");
    const bash = /^Package: bash\n(?:.+\n)*?Version: (.+)$/m.exec(status)![1]!;
    const baseline = {
      routes: live.networking?.routes ?? [],
      ports: live.networking?.listening_ports ?? [],
    };
    ({ server, double } = await startForge({
      token: TOKEN,
      owner: OWNER,
      repo: REPO,
      botLogin: "qm[bot]",
      files: manifests(baseline, bash),
    }));
    before_ = await effectiveSpecs();
  });

  after(async () => {
    await double?.stop();
    await server?.stop();
    await fleet?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  for (const [i, round] of ROUNDS.entries()) {
    const scope = `${round.category}${round.nodes ? `, ${round.nodes.length} nodes` : ""}`;
    it(`round ${i + 1} (${scope}): one audit, one propose, every PR merged`, async () => {
      const nodes = round.nodes ? ["--nodes", round.nodes.join(",")] : [];
      const report = await audit(`round-${i + 1}`, ["--category", round.category, ...nodes]);
      for (const node of report.nodes) {
        assert.ok(
          ["clean", "drift"].includes(node.status),
          `${node.name}: ${node.status} ${node.error ?? ""}`,
        );
        drifted.set(node.name, [...(drifted.get(node.name) ?? []), ...node.drift]);
      }
      const known = double.pulls().length;
      const result = await runCli(
        ["propose", "--report", path.join(work, `round-${i + 1}.json`), ...repoArgs()],
        {
          env: env(),
        },
      );
      assert.equal(result.exitCode, 0, result.stderr + result.stdout);
      const opened = double.pulls().slice(known);
      assert.ok(opened.length > 0 && opened.length <= PR_BUDGET, `${opened.length} PRs opened`);
      assert.equal(opened.length, new Set(opened.map((p) => p.head)).size);

      // Each PR is of the kind its drift calls for, and edits where the drift was declared.
      const seen = new Set<string>();
      for (const pr of opened) {
        const marker = parseMarker(pr.body, pr.head);
        assert.ok(marker, `#${pr.number} carries a marker`);
        assert.ok("nodes" in marker, `#${pr.number}'s marker lists its few nodes`);
        const bare = { cwd: server.barePath(OWNER, REPO) };
        const names = await execa("git", ["diff", "--name-only", `main...${pr.head}`], bare);
        const edited = names.stdout.split("\n").filter(Boolean).sort();
        if (marker.domain === "kernel") {
          assert.equal(marker.kind, "accept");
          assert.deepEqual(
            edited,
            [`${M}/fleet.yaml`],
            "every node taking the release from fleet.yaml drifted alike",
          );
          assert.ok(!marker.nodes.some((n) => CONTROLS.includes(n)));
          continue;
        }
        for (const name of marker.nodes) {
          seen.add(name);
          if (TICKETS.includes(name)) {
            assert.equal(marker.kind, "ticket", `${name}: ${pr.title}`);
            assert.match(edited[0]!, new RegExp(`^${M}/remediations/files-`));
          } else {
            assert.equal(marker.kind, "accept", `${name}: ${pr.title}\n${pr.body}`);
            const expected = [...new Set(marker.nodes.flatMap((n) => EDITS[n] ?? []))].sort();
            assert.deepEqual(edited, expected, `${name}: ${pr.title}`);
          }
        }
      }
      const expected = report.nodes
        .filter((n) => n.drift.some((d) => d.domain !== "kernel"))
        .map((n) => n.name)
        .sort();
      assert.deepEqual([...seen].sort(), expected, "one PR for each node's drift");
      for (const pr of opened) await double.mergePull(pr.number);
    });
  }

  it("audited again: every node clean, the merged ticket acknowledges its drift, nothing else declared changed", async () => {
    assert.equal(double.pulls().filter((p) => p.state === "open").length, 0);
    const report = await audit("final", []);
    for (const node of report.nodes) {
      assert.equal(
        node.status,
        "clean",
        `${node.name}: ${JSON.stringify(node.drift)} ${node.error ?? ""}`,
      );
      const open = node.drift.filter((d) => !d.acknowledged);
      assert.deepEqual(open, [], node.name);
      if (TICKETS.includes(node.name))
        assert.match(node.drift[0]?.acknowledgedBy ?? "", /^ticket files-/);
      else assert.deepEqual(node.drift, [], node.name);
    }
    for (const name of [...Object.keys(EDITS), ...TICKETS].filter(
      (n) => device || !n.startsWith("io-"),
    )) {
      assert.ok(
        drifted.get(name)?.some((d) => d.domain !== "kernel"),
        `${name} drifted before`,
      );
    }
    const after_ = await effectiveSpecs();
    for (const [name, spec] of before_) {
      // A ticket changes no declaration: only the kernel accept touched a ticketed node.
      const items = (drifted.get(name) ?? []).filter(
        (d) => !TICKETS.includes(name) || d.domain === "kernel",
      );
      if (CONTROLS.includes(name)) assert.deepEqual(items, [], `${name} is a control`);
      const paths = items.flatMap(touched);
      const [was, now] = [without(spec, paths), without(after_.get(name), paths)];
      const shown = `${JSON.stringify(was)}\n${JSON.stringify(now)}`;
      assert.ok(isDeepStrictEqual(now, was), `${name}: only its accepted drift changed\n${shown}`);
    }
  });
});
