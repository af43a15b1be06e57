// `adopt --packages chosen` on a dnf host, end to end: an rpm test host (its own rpm database, no
// dpkg) into which the real dnf installs an application from a local repository as an operator
// would (`dnf install qm-app`, which pulls qm-lib in as its dependency; recorded, not unpacked).
// The packages adopted are what `dnf repoquery --userinstalled` answers on that host. Needs root,
// dnf and createrepo_c.
import assert from "node:assert/strict";
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { execa } from "execa";
import { parse } from "yaml";
import { runCli } from "../support/cli.js";
import { buildRpm, startFleet, type TestFleet } from "../support/hosts.js";

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
        // What dnf writes besides the rpm database: the host's own.
        writable: ["/var/lib/dnf", "/var/cache/dnf", "/var/log", "/etc/dnf"],
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

  const inventory = path.join(dir, "hosts.ini");
  await writeFile(inventory, `${HOST}\n`);
  const tree = path.join(dir, "tree");
  const adopted = await runCli([
    ...["adopt", "--inventory", inventory, "--manifests", tree],
    ...["--ssh-config", fleet.sshConfig, "--known-hosts", fleet.knownHosts],
  ]);
  assert.equal(adopted.exitCode, 0, adopted.stderr);
  const spec = parse(await readFile(path.join(tree, `nodes/${HOST}.yaml`), "utf8")) as {
    packages: { installed_manifest: Record<string, string> };
  };
  assert.deepEqual(Object.keys(spec.packages.installed_manifest).sort(), userInstalled);
  assert.match(
    adopted.stderr,
    /packages: declared those the package manager marks as installed on purpose; 1 package installed as dependencies left to them on 1 host/,
  );
});
