// `adopt --packages chosen` on a dnf host, end to end: an rpm test host (its own rpm database, no
// dpkg) where the real dnf records a history as an operator's would (recorded, not unpacked):
// `dnf install qm-app`, which pulls qm-lib in as its dependency; `dnf group install qm-tools`; and
// qm-extra installed, removed by dnf, then installed again by rpm alone. The packages adopted are
// what `dnf repoquery --userinstalled` answers on that host, whether the probe runs as the audit
// user or through `become: sudo`, and neither run writes anything on the host: dnf is not run.
// Needs root, dnf, sudo and createrepo_c.
import assert from "node:assert/strict";
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { execa } from "execa";
import { parse } from "yaml";
import { runCli } from "../support/cli.js";
import { AUDIT_USER, buildRpm, startFleet, type TestFleet } from "../support/hosts.js";

const HOST = "rhel-01";
let fleet: TestFleet;
let dir: string;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "qm-adopt-dnf-"));
  const repo = path.join(dir, "repo");
  await mkdir(repo);
  const packages = [
    { name: "qm-lib", version: "1.0", release: "1" },
    { name: "qm-app", version: "1.0", release: "1", requires: ["qm-lib"] },
    { name: "qm-tool", version: "1.0", release: "1" },
    { name: "qm-extra", version: "1.0", release: "1" },
  ];
  for (const pkg of packages) {
    const rpm = await buildRpm(pkg, path.join(dir, "build"));
    await copyFile(rpm, path.join(repo, path.basename(rpm)));
  }
  const comps = path.join(dir, "comps.xml");
  await writeFile(
    comps,
    [
      '<?xml version="1.0" encoding="UTF-8"?>',
      "<comps><group><id>qm-tools</id><name>Quartermaster tools</name><description/>",
      "<default>false</default><uservisible>true</uservisible><packagelist>",
      '<packagereq type="mandatory">qm-tool</packagereq></packagelist></group></comps>',
    ].join("\n"),
  );
  await execa("createrepo_c", ["-q", "-g", comps, repo]);
  await chmod(dir, 0o755);
  fleet = await startFleet(
    [
      {
        name: HOST,
        // Present before dnf ran: installed by rpm alone, as an image build would.
        rpmPackages: [{ name: "qm-base", version: "1.0", release: "1" }],
        // What dnf writes besides the rpm database: the host's own. /var/tmp is where dnf makes
        // itself a cache folder when not run as root.
        writable: ["/var/lib/dnf", "/var/cache/dnf", "/var/log", "/etc/dnf", "/var/tmp"],
        files: {
          "/etc/sudoers.d/qm-adopt-dnf": {
            contents: `${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh -s\n`,
            mode: "0440",
          },
        },
      },
    ],
    { prefix: "qmd" },
  );
  const dnf = [
    "dnf -y -q --releasever=1 --setopt=reposdir=/nonexistent --nogpgcheck",
    `--repofrompath=local,file://${repo} --repo=local --setopt=tsflags=justdb`,
  ].join(" ");
  await fleet.exec(
    HOST,
    [
      `${dnf} install qm-app`,
      `${dnf} group install qm-tools`,
      `${dnf} install qm-extra`,
      `${dnf} remove qm-extra`,
      `rpm -i --justdb --nodeps ${repo}/qm-extra-1.0-1.noarch.rpm`,
    ].join(" && "),
  );
});
after(async () => {
  await fleet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * What was written under `dirs` since `marker` was: paths, one a line. Not the login records the
 * host's sshd keeps for its sessions (btmp gains a line when a connection under load is dropped
 * before it logs in).
 */
const writtenSince = (marker: string, dirs: string) =>
  fleet.exec(
    HOST,
    `find ${dirs} -newer ${marker} ! -path ${marker} ! -name btmp ! -name wtmp ! -name lastlog`,
  );

/** `adopt` of the host into `tree`, in the inventory group `rhel`, and its node file's packages. */
async function adopt(tree: string) {
  const inventory = path.join(dir, "hosts.ini");
  await writeFile(inventory, `[rhel]\n${HOST}\n`);
  const adopted = await runCli([
    ...["adopt", "--inventory", inventory, "--manifests", tree],
    ...["--ssh-config", fleet.sshConfig, "--known-hosts", fleet.knownHosts],
  ]);
  assert.equal(adopted.exitCode, 0, adopted.stderr);
  const spec = parse(await readFile(path.join(tree, `nodes/${HOST}.yaml`), "utf8")) as {
    packages: { installed_manifest: Record<string, string> };
  };
  return { stderr: adopted.stderr, names: Object.keys(spec.packages.installed_manifest).sort() };
}

test("the packages adopted from a dnf host are those dnf says were installed on purpose, and nothing is written on it", async () => {
  const installed = await fleet.exec(HOST, "rpm -qa --qf '%{NAME}\\n'");
  assert.deepEqual(installed.split("\n").filter(Boolean).sort(), [
    "qm-app",
    "qm-base",
    "qm-extra",
    "qm-lib",
    "qm-tool",
  ]);
  const userInstalled = (
    await fleet.exec(HOST, "dnf -q -C repoquery --userinstalled --qf '%{name}\\n'")
  )
    .split("\n")
    .filter(Boolean)
    .sort();
  // dnf 4 counts a dependency (qm-lib) and a group's package (qm-tool) as not chosen; a package
  // rpm alone installed, before dnf (qm-base) or after dnf removed it (qm-extra), as chosen.
  assert.deepEqual(userInstalled, ["qm-app", "qm-base", "qm-extra"]);

  const marker = "/var/tmp/qm-adopt-dnf-marker";
  await fleet.exec(HOST, `touch ${marker}`);
  const dnfFiles = "/var/tmp /var/cache/dnf /var/lib/dnf /var/log";

  // The audit user itself: dnf's history database is readable by anyone.
  const plain = await adopt(path.join(dir, "plain"));
  assert.equal(await writtenSince(marker, dnfFiles), "");
  assert.deepEqual(plain.names, userInstalled);
  const leftOut =
    /packages: declared those the package manager marks as installed on purpose; 2 packages installed as dependencies left to them on 1 host/;
  assert.match(plain.stderr, leftOut);

  // Through sudo, as the tree's group says: the same answer, and still nothing written.
  const tree = path.join(dir, "tree");
  await mkdir(path.join(tree, "groups"), { recursive: true });
  await writeFile(path.join(tree, "groups/rhel.yaml"), "ssh:\n  become: sudo\n");
  const root = await adopt(tree);
  assert.deepEqual(root.names, userInstalled);
  assert.match(root.stderr, leftOut);
  assert.equal(await writtenSince(marker, dnfFiles), "");

  // Where the audit user cannot read the history database, every package is declared, and why.
  await fleet.exec(HOST, "chmod 0600 /var/lib/dnf/history.sqlite");
  const unreadable = await adopt(path.join(dir, "unreadable"));
  assert.deepEqual(unreadable.names, ["qm-app", "qm-base", "qm-extra", "qm-lib", "qm-tool"]);
  assert.match(
    unreadable.stderr,
    /packages: every installed package declared on rhel-01: cannot read \/var\/lib\/dnf\/history\.sqlite: declare ssh: \{ become: sudo \} for this node/,
  );
});
