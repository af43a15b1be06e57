// `adopt --packages chosen` on a dnf host, end to end: an rpm test host (its own rpm database, no
// dpkg) into which the real dnf installs an application from a local repository as an operator
// would (`dnf install qm-app`, which pulls qm-lib in as its dependency; recorded, not unpacked).
// Through `become: sudo`, the packages adopted are what `dnf repoquery --userinstalled` answers on
// that host; as the audit user, whom dnf would make a cache folder for, the chosen list is unknown
// and every installed package is declared. Neither writes anything on the host. Needs root, dnf,
// sudo and createrepo_c.
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
  ];
  for (const pkg of packages) {
    const rpm = await buildRpm(pkg, path.join(dir, "build"));
    await copyFile(rpm, path.join(repo, path.basename(rpm)));
  }
  await execa("createrepo_c", ["-q", repo]);
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
  await fleet.exec(
    HOST,
    [
      "dnf -y -q --releasever=1 --setopt=reposdir=/nonexistent --nogpgcheck",
      `--repofrompath=local,file://${repo} --repo=local --setopt=tsflags=justdb install qm-app`,
    ].join(" "),
  );
});
after(async () => {
  await fleet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** What was written under `dirs` since `marker` was: paths, one a line. */
const writtenSince = (marker: string, dirs: string) =>
  fleet.exec(HOST, `find ${dirs} -newer ${marker} ! -path ${marker}`);

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

test("the packages adopted from a dnf host are those dnf says were installed on purpose", async () => {
  const installed = await fleet.exec(HOST, "rpm -qa --qf '%{NAME}\\n'");
  assert.deepEqual(installed.split("\n").filter(Boolean).sort(), ["qm-app", "qm-base", "qm-lib"]);
  const userInstalled = (
    await fleet.exec(HOST, "dnf -q -C repoquery --userinstalled --qf '%{name}\\n'")
  )
    .split("\n")
    .filter(Boolean)
    .sort();
  // qm-lib came in as qm-app's dependency.
  assert.ok(
    userInstalled.includes("qm-app") && !userInstalled.includes("qm-lib"),
    userInstalled.join(" "),
  );

  const marker = "/var/tmp/qm-adopt-dnf-marker";
  await fleet.exec(HOST, `touch ${marker}`);

  // The audit user itself: dnf would write its cache folder, so it is not run.
  const plain = await adopt(path.join(dir, "plain"));
  assert.equal(await writtenSince(marker, "/var/tmp /var/cache/dnf /var/lib/dnf /var/log"), "");
  assert.deepEqual(plain.names, ["qm-app", "qm-base", "qm-lib"]);
  assert.match(
    plain.stderr,
    /packages: every installed package declared on rhel-01: dnf writes a cache folder when not root: declare ssh: \{ become: sudo \} for this node/,
  );

  // Through sudo, as the tree's group says: dnf's answer, read from its cache alone.
  const tree = path.join(dir, "tree");
  await mkdir(path.join(tree, "groups"), { recursive: true });
  await writeFile(path.join(tree, "groups/rhel.yaml"), "ssh:\n  become: sudo\n");
  const root = await adopt(tree);
  assert.deepEqual(root.names, userInstalled);
  assert.match(
    root.stderr,
    /packages: declared those the package manager marks as installed on purpose; 1 package installed as dependencies left to them on 1 host/,
  );
  // No cache folder of its own. (As root, dnf still writes its logs under /var/log and its
  // history database's shared memory file under /var/lib/dnf.)
  assert.equal(await writtenSince(marker, "/var/tmp"), "");
});
