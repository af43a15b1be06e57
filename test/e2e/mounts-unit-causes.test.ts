// What the next boot mounts, as mount units and their drop-ins say, with the causes the host
// records, on a real sshd test host (its own mount namespace, /etc, /usr/lib/systemd/system, dpkg
// database and logs) through the real CLI with the run history on the bot's state branch. Between
// two scheduled runs `dpkg -i` installs a package shipping a mount unit for a declared point, which
// a target wants, and an operator writes a drop-in for the unit fstab's line makes: the second run
// reads each latent item from the file that says it, with the package as the cause of the one and
// the drop-in's edit as the cause of the other. Needs root.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_mounts_unit_causes";
const M = "fleet-manifests";
const HOST = "mnu-01";
const PKG = "qm-mnt";
const UNIT = "/usr/lib/systemd/system/srv-pkg.mount";
const DROPIN = "/etc/systemd/system/srv-data.mount.d/50-source.conf";

let fleet: TestFleet;
let deb = "";

/** A package shipping a mount unit for /srv/pkg (noexec) that local-fs.target wants. */
async function buildDeb(work: string): Promise<string> {
  const root = path.join(work, PKG);
  const units = path.join(root, "usr/lib/systemd/system");
  await mkdir(path.join(root, "DEBIAN"), { recursive: true });
  await mkdir(path.join(units, "local-fs.target.wants"), { recursive: true });
  await writeFile(
    path.join(root, "DEBIAN/control"),
    `Package: ${PKG}\nVersion: 1.0\nArchitecture: all\nMaintainer: Quartermaster tests <qm@example.invalid>\nDescription: a mount unit\n`,
  );
  await writeFile(
    path.join(units, "srv-pkg.mount"),
    "[Mount]\nWhat=tmpfs\nWhere=/srv/pkg\nType=tmpfs\nOptions=noexec\n",
  );
  await execa("ln", ["-s", "../srv-pkg.mount", path.join(units, "local-fs.target.wants")]);
  const file = path.join(work, `${PKG}_1.0_all.deb`);
  await execa("dpkg-deb", ["--root-owner-group", "--build", root, file]);
  return file;
}

const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-mounts-unit-causes-",
  files: {
    "README.md": "Fleet manifests.\n",
    [`${M}/fleet.yaml`]: "{}\n",
    [`${M}/nodes/${HOST}.yaml`]: [
      "storage:",
      "  mounts:",
      "    - { path: /srv/data, source: tmpfs, fstype: tmpfs, options: [rw, nosuid] }",
      "    - { path: /srv/pkg, fstype: tmpfs, options: [rw, nosuid] }",
      "",
    ].join("\n"),
  },
  setup: async (forge) => {
    deb = await buildDeb(forge.work);
    fleet = await startFleet(
      [
        {
          name: HOST,
          writable: ["/etc", "/usr/lib/systemd/system", "/var/lib/dpkg", "/var/log"],
        },
      ],
      { prefix: "qmmu" },
    );
    await fleet.exec(
      HOST,
      [
        "printf 'tmpfs /srv/data tmpfs nosuid 0 0\\ntmpfs /srv/pkg tmpfs nosuid 0 0\\n' > /etc/fstab",
        "touch -d 2020-01-01 /etc/fstab",
        "mount -t tmpfs -o mode=755 tmpfs /srv",
        "mkdir /srv/data /srv/pkg",
        "mount -t tmpfs -o nosuid tmpfs /srv/data",
        "mount -t tmpfs -o nosuid tmpfs /srv/pkg",
      ].join(" && "),
    );
  },
});
after(() => fleet?.stop());

const run = scheduledRun(forge, () => fleet.sshConfig);

describe("mount units, their drop-ins and their causes", () => {
  it("run 1 is clean and records the node's audit", async () => {
    const { report } = await run.auditAndPropose("run-1", 0);
    assert.equal(report.nodes[0]!.status, "clean", JSON.stringify(report.nodes[0]));
  });

  it("run 2: the package's unit and the operator's drop-in each say what the next boot mounts, with their cause", async () => {
    await fleet.exec(
      HOST,
      [
        `dpkg -i ${deb} >/dev/null`,
        `mkdir -p ${path.dirname(DROPIN)}`,
        `printf '[Mount]\\nWhat=elsewhere\\n' > ${DROPIN}`,
      ].join(" && "),
    );
    const { report } = await run.audit("run-2", 0);
    const items = report.nodes[0]!.drift.map((d) => [
      d.key,
      d.latent?.becomes,
      d.latent?.because,
      d.cause?.kind,
    ]);
    assert.deepEqual(items, [
      ["/srv/data:source", "elsewhere", DROPIN, "file-edit"],
      ["/srv/pkg:options", ["rw", "noexec"], UNIT, "package"],
    ]);
    const [dropin, unit] = report.nodes[0]!.drift.map((d) => d.cause!);
    assert.match(
      dropin!.evidence,
      new RegExp(
        `^${DROPIN} modified at \\S+, owner root, since this node's last audit: ${DROPIN} mounts it at the next boot$`,
      ),
    );
    assert.match(
      unit!.evidence,
      new RegExp(
        `^${UNIT} shipped by ${PKG} 1\\.0, configured at \\S+ since this node's last audit: ${UNIT} mounts it at the next boot$`,
      ),
    );
    assert.equal(unit!.by, "dpkg");
    // The text report says it in an operator's words: the options as mount writes them, the package.
    const text = await run.auditText(0);
    assert.ok(
      text.includes(
        `mounts /srv/pkg:options: rw,nosuid now; the next boot mounts /srv/pkg with options rw,noexec, as ${UNIT} says`,
      ) && text.includes(`changed by dpkg at `),
      text,
    );
  });
});
