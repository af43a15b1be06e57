// The mounts domain on real sshd test hosts, each its own mount namespace with its own /etc/fstab,
// through the real CLI: the snapshot audits clean; a tmpfs mounted by hand over a declared mount
// point is drift, latent back to what fstab mounts, caused at runtime; accepting it by PR and
// auditing again leaves only the latent items; an fstab line the running system does not match is
// latent. A compromised host: mount points with spaces, tabs, newlines and backslashes as mountinfo
// escapes them, sources holding markup, runner commands and control characters, and 100,000
// mountinfo lines. Needs root.
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
import { parse, stringify } from "yaml";
import { Report, type NodeResult } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { assertNoSelfChange } from "../support/pull-text.js";
import { runnerCommandLines } from "../support/runner-commands.js";
import { writeTree } from "../support/tree.js";

const HOST = "mnt-01";
const HOSTILE = "mnt-02";
const M = "fleet-manifests";
const TOKEN = "ghs_mounts_e2e";
const FSTAB = [
  "# this test host's own",
  "tmpfs /srv/data tmpfs nosuid,nodev 0 0",
  "tmpfs /srv/my\\040data tmpfs nosuid,nodev,noexec 0 0",
  "tmpfs /srv/later tmpfs nosuid 0 0",
  "",
].join("\n");
// Host text a report must show escaped: markup, runner commands, an escape sequence, a comment.
const EVIL_SOURCE = "<b>x</b> ::error::pwned ##[warning]y \x1b[31mred <!-- z";
const ODD_POINTS = ["/srv/a b", "/srv/tab\there", "/srv/back\\slash", "/srv/new\nline"];
const FLOOD = 100_000;
const FLOOD_DECLARED = 600;
// A compromised host's probe output: after the mountinfo mark, 100,000 more lines (at most
// 60 bytes each: under the output cap), each a tmpfs at `/srv/flood N` whose source is markup.
const FLOOD_FILTER = `awk '{ print } / mark mountinfo$/ { for (i = 0; i < ${FLOOD}; i++) printf "%d 1 0:1 / /srv/flood\\\\040%d rw - tmpfs <i>%d</i> rw\\n", 1000 + i, i, i }'`;
const q = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-mounts-",
  files: { [`${M}/fleet.yaml`]: "{}\n" },
});
let fleet: TestFleet;
let snapshot: Record<string, unknown>;

/** The manifests from the forge, audited for mounts only: what propose then reads. */
const MOUNTS_ONLY = () => [...forge.repoArgs(), "--category", "mounts"];
let audits = 0;
async function audit(
  name: string,
  args: string[],
): Promise<{ exitCode: number; stderr: string; node: NodeResult; out: string }> {
  const out = path.join(forge.work, `${name}-${++audits}.json`);
  const result = await runCli(
    [
      ...["audit", ...args, "--ssh-config", fleet.sshConfig, "--format", "json", "--out", out],
      ...["--nodes", name],
    ],
    { env: forge.double.cliEnv() },
  );
  const report = Report.parse(JSON.parse(await readFile(out, "utf8")));
  return { exitCode: result.exitCode, stderr: result.stderr, node: report.nodes[0]!, out };
}
/** The node's mounts items (a snapshot's other domains may hold latent items of their own). */
const items = (node: NodeResult) =>
  node.drift
    .filter((d) => d.domain === "mounts")
    .map((d) => [d.key, d.declared, d.live, d.latent?.becomes ?? "-", d.cause?.kind ?? "-"]);

describe("mounts on test hosts", () => {
  before(async () => {
    fleet = await startFleet([
      { name: HOST, files: { "/etc/fstab": { contents: FSTAB } } },
      { name: HOSTILE, probeFilter: FLOOD_FILTER },
    ]);
    // Each host's mounts are its own: a tmpfs over /srv holds the mount points.
    await fleet.exec(
      HOST,
      [
        "mount -t tmpfs -o mode=755 tmpfs /srv",
        "mkdir /srv/data '/srv/my data' /srv/later",
        "mount -t tmpfs -o nosuid,nodev tmpfs /srv/data",
        "mount -t tmpfs -o nosuid,nodev,noexec tmpfs '/srv/my data'",
        // fstab unchanged since long before this boot: a mount unlike it was made since.
        "touch -d 2020-01-01 /etc/fstab",
      ].join(" && "),
    );
    await fleet.exec(
      HOSTILE,
      [
        "mount -t tmpfs -o mode=755 tmpfs /srv",
        ...ODD_POINTS.map(
          (p) => `mkdir ${q(p)} && mount -t tmpfs -o nosuid ${q(EVIL_SOURCE)} ${q(p)}`,
        ),
      ].join(" && "),
    );
    const tree = await writeTree({ [`nodes/${HOST}.yaml`]: "{}\n" });
    const taken = await runCli([
      ...["snapshot", "--node", HOST, "--manifests", tree, "--packages", "none"],
      ...["--ssh-config", fleet.sshConfig],
    ]);
    assert.equal(taken.exitCode, 0, taken.stderr);
    snapshot = parse(taken.stdout) as Record<string, unknown>;
  });
  after(() => fleet?.stop());

  test("the snapshot declares the persistent mounts only, and audits clean", async () => {
    assert.deepEqual((snapshot.storage as { mounts: unknown }).mounts, [
      { path: "/srv/data", source: "tmpfs", fstype: "tmpfs", options: ["rw", "nosuid", "nodev"] },
      {
        path: "/srv/my data",
        source: "tmpfs",
        fstype: "tmpfs",
        options: ["rw", "nosuid", "nodev", "noexec"],
      },
    ]);
    const checkout = await forge.checkout();
    await mkdir(path.join(checkout, M, "nodes"), { recursive: true });
    await writeFile(path.join(checkout, M, "nodes", `${HOST}.yaml`), stringify(snapshot));
    // Mount drift is accepted by PR here (the default is a ticket).
    await writeFile(
      path.join(checkout, M, "fleet.yaml"),
      stringify({ policy: { mounts: { on_drift: "accept" } } }),
    );
    const git = (...args: string[]) =>
      execa("git", [
        "-C",
        checkout,
        "-c",
        "user.name=qm",
        "-c",
        "user.email=qm@example.invalid",
        ...args,
      ]);
    await git("add", ".");
    await git("commit", "-qm", `${HOST}: its snapshot`);
    await git("push", "-q", "origin", "HEAD:main");
    const clean = await audit(HOST, forge.repoArgs());
    assert.equal(clean.exitCode, 0, `${clean.stderr}\n${JSON.stringify(clean.node)}`);
    assert.equal(clean.node.status, "clean");
    assert.deepEqual(items(clean.node), []);
  });

  test("a tmpfs mounted by hand with other options is drift, latent back to fstab's, at runtime", async () => {
    await fleet.exec(HOST, "mount -t tmpfs -o noexec 'by hand' /srv/data");
    const drifted = await audit(HOST, MOUNTS_ONLY());
    assert.equal(drifted.exitCode, 1, drifted.stderr);
    assert.deepEqual(items(drifted.node), [
      ["/srv/data:source", "tmpfs", "by hand", "tmpfs", "runtime"],
      [
        "/srv/data:options",
        ["rw", "nosuid", "nodev"],
        ["rw", "noexec"],
        ["rw", "nosuid", "nodev"],
        "runtime",
      ],
    ]);
    assert.match(
      drifted.node.drift.find((d) => d.key === "/srv/data:source")?.cause?.evidence ?? "",
      /^the live mount is not what \/etc\/fstab:2 mounts, and \/etc\/fstab has not changed since boot at /,
    );
    const text = await runCli(["report", "--report", drifted.out, "--format", "text"]);
    assert.match(
      text.stdout,
      /then the next boot mounts \/srv\/data with options rw,nosuid,nodev, as \/etc\/fstab:2 says/,
    );
  });

  test("accepting the drift by PR makes the next audit clean, but for what the next boot changes", async () => {
    const drifted = await audit(HOST, MOUNTS_ONLY());
    const proposed = await runCli(["propose", "--report", drifted.out, ...forge.repoArgs()], {
      env: forge.double.cliEnv(),
    });
    assert.equal(proposed.exitCode, 0, proposed.stderr);
    const pulls = forge.double.pulls().filter((p) => p.state === "open");
    assert.ok(pulls.length >= 1);
    assert.deepEqual(
      pulls.map((p) => p.title.split(" ")[0]),
      pulls.map(() => "Accept"),
    );
    assertNoSelfChange(pulls);
    for (const pull of pulls) await forge.double.mergePull(pull.number);
    const accepted = await audit(HOST, MOUNTS_ONLY());
    assert.equal(accepted.exitCode, 0, `${accepted.stderr}\n${JSON.stringify(accepted.node)}`);
    assert.equal(accepted.node.status, "clean");
    // Clean now; the next boot mounts what fstab says.
    assert.deepEqual(items(accepted.node), [
      ["/srv/data:source", "by hand", "by hand", "tmpfs", "-"],
      ["/srv/data:options", ["rw", "noexec"], ["rw", "noexec"], ["rw", "nosuid", "nodev"], "-"],
    ]);
  });

  test("an fstab line the running system does not match is latent", async () => {
    // Rewritten in place: the file is bind-mounted.
    await fleet.exec(
      HOST,
      `sed 's/nosuid,nodev,noexec/ro,nosuid,nodev,noexec/' /etc/fstab > /tmp/qm-fstab.$$ && cat /tmp/qm-fstab.$$ > /etc/fstab && rm /tmp/qm-fstab.$$`,
    );
    const latent = await audit(HOST, MOUNTS_ONLY());
    assert.equal(latent.exitCode, 0, latent.stderr);
    assert.equal(latent.node.status, "clean");
    assert.deepEqual(
      items(latent.node).filter(([key]) => String(key).startsWith("/srv/my data")),
      [
        [
          "/srv/my data:options",
          ["rw", "nosuid", "nodev", "noexec"],
          ["rw", "nosuid", "nodev", "noexec"],
          ["ro", "nosuid", "nodev", "noexec"],
          "-",
        ],
      ],
    );
    assert.equal(latent.node.drift.at(-1)!.latent!.because, "/etc/fstab:3");
  });

  test("a compromised host: odd mount points, hostile sources and a flood, bounded and escaped", async () => {
    const manifests = await writeTree({
      "fleet.yaml": "{}\n",
      [`nodes/${HOSTILE}.yaml`]: stringify({
        storage: {
          mounts: [
            ...ODD_POINTS.map((p) => ({ path: p, source: "tmpfs" })),
            ...Array.from({ length: FLOOD_DECLARED }, (_, i) => ({
              path: `/srv/flood ${i}`,
              fstype: "ext4",
            })),
          ],
        },
      }),
    });
    const { exitCode, stderr, node, out } = await audit(HOSTILE, ["--manifests", manifests]);
    assert.equal(exitCode, 1, stderr);
    assert.equal(node.drift.length, 500);
    const sources = node.drift.filter((d) => d.key.endsWith(":source"));
    assert.deepEqual(
      sources.map((d) => [d.key, d.live]),
      ODD_POINTS.map((p) => [`${p}:source`, EVIL_SOURCE]),
    );
    assert.deepEqual(
      node.drift
        .filter((d) => d.key.startsWith("/srv/flood 0"))
        .map((d) => [d.key, d.declared, d.live]),
      [
        ["/srv/flood 0", "mounted", "mounted"],
        ["/srv/flood 0:fstype", "ext4", "tmpfs"],
      ],
    );
    // Each flood mount point: nothing mounts it at boot (latent) and its type drifted.
    assert.deepEqual(node.unknown, [
      {
        domain: "mounts",
        reason: `${2 * FLOOD_DECLARED + 2 * ODD_POINTS.length - 500} more drift items than the 500 a domain lists per node: not listed`,
      },
    ]);
    for (const format of ["text", "markdown"]) {
      const shown = await runCli(["report", "--report", out, "--format", format]);
      assert.equal(shown.exitCode, 0, shown.stderr);
      assert.deepEqual(runnerCommandLines(shown.stdout), [], format);
      assert.equal(shown.stdout.includes("\x1b"), false, format);
      assert.match(shown.stdout, /flood 0/);
      // Markup is text in Markdown: inside a code span, and never a comment hiding what follows.
      if (format === "markdown") {
        assert.doesNotMatch(shown.stdout, /<!--/);
        assert.match(
          shown.stdout,
          /\| `"<b>x<\/b> ::error::pwned ##\\u005bwarning\]y \\u001b\[31mred <\\x21-- z"`/,
        );
      }
    }
  });
});
