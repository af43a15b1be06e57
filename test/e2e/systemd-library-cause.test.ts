// A library replaced under a running unit, with what replaced it: on a real systemd test host (its
// own pid, mount and network namespaces; its dpkg database, logs and the library's folder writable
// overlays of its own), `dpkg -i` installs a library package, a unit maps the library, and between
// two scheduled runs `dpkg -i` upgrades the package, renaming the new file over the one the unit
// maps. The second run's latent ticket says what a restart loads and what replaced it, from dpkg's
// own log and file list. Needs root, gcc and sudo (the unit's process maps are root's).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { assertNoSelfChange } from "../support/pull-text.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_systemd_library_cause";
const M = "fleet-manifests";
const HOST = "sdl-01";
const PKG = "libqmcache1";
const UNIT = "qm-cache.service";
// A folder of this run's own under /usr/lib, which the host shares with this machine: only an
// empty one is made here; the host's writable overlay of it takes what dpkg unpacks.
const DIR = `/usr/lib/qm-test-${randomBytes(6).toString("hex")}`;
const LIBRARY = `${DIR}/libqmcache.so.1`;

let fleet: TestFleet;
const debs: Record<string, string> = {};

/** The library package at `version`: one shared object, built with gcc. */
async function buildDeb(work: string, version: string): Promise<string> {
  const root = path.join(work, `${PKG}-${version}`);
  await mkdir(path.join(root, "DEBIAN"), { recursive: true });
  await mkdir(path.join(root, DIR), { recursive: true });
  await writeFile(
    path.join(root, "DEBIAN/control"),
    `Package: ${PKG}\nVersion: ${version}\nArchitecture: all\nMaintainer: Quartermaster tests <qm@example.invalid>\nDescription: a library a unit maps\n`,
  );
  const source = path.join(work, `${PKG}-${version}.c`);
  await writeFile(source, `const char *qm_cache_version(void) { return "${version}"; }\n`);
  await execa("gcc", ["-shared", "-fPIC", "-o", path.join(root, LIBRARY), source]);
  const file = path.join(work, `${PKG}_${version}_all.deb`);
  await execa("dpkg-deb", ["--root-owner-group", "--build", root, file]);
  return file;
}

const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-systemd-library-cause-",
  files: {
    "README.md": "Fleet manifests.\n",
    [`${M}/fleet.yaml`]: "{}\n",
    [`${M}/nodes/${HOST}.yaml`]: [
      "ssh: { become: sudo }",
      "systemd:",
      `  units: [{ name: ${UNIT}, active: true }]`,
      "",
    ].join("\n"),
  },
  setup: async () => {
    await mkdir(DIR);
    fleet = await startFleet(
      [
        {
          name: HOST,
          systemd: true,
          writable: ["/var/lib/dpkg", "/var/log", DIR],
          files: {
            "/etc/sudoers.d/qm-audit": {
              contents: "qm-audit ALL=(root) NOPASSWD: /bin/sh\n",
              mode: "0440",
            },
          },
        },
      ],
      { prefix: "qmsl" },
    );
    // In the fleet's folder, which the host's private /tmp keeps visible.
    for (const version of ["1.0-1", "1.1-1"]) debs[version] = await buildDeb(fleet.dir, version);
    await writeFile(
      path.join(fleet.dir, UNIT),
      `[Unit]\nDescription=cache\nDefaultDependencies=no\n\n[Service]\nEnvironment=LD_PRELOAD=${LIBRARY}\nExecStart=/bin/sleep infinity\n`,
    );
    await fleet.exec(
      HOST,
      [
        `dpkg -i ${debs["1.0-1"]} >/dev/null`,
        `cp ${path.join(fleet.dir, UNIT)} /etc/systemd/system/`,
        "systemctl daemon-reload",
        `systemctl start ${UNIT}`,
      ].join(" && "),
    );
  },
});
after(async () => {
  await fleet?.stop();
  await rm(DIR, { recursive: true, force: true });
});

const run = scheduledRun(forge, () => fleet.sshConfig);

describe("a library replaced under a running unit, and what replaced it", () => {
  it("run 1 is clean and records the node's audit", async () => {
    const { report } = await run.auditAndPropose("run-1", 0);
    assert.deepEqual(
      [report.nodes[0]!.status, report.nodes[0]!.drift, report.nodes[0]!.unknown ?? []],
      ["clean", [], []],
      JSON.stringify(report.nodes[0]),
    );
  });

  it("run 2: after dpkg upgrades the package, the restart ticket names the upgrade that replaced the library", async () => {
    await fleet.exec(HOST, `dpkg -i ${debs["1.1-1"]} >/dev/null`);
    const { report } = await run.auditAndPropose("run-2", 0);
    const [item] = report.nodes[0]!.drift;
    assert.equal(report.nodes[0]!.status, "clean", JSON.stringify(report.nodes[0]));
    assert.deepEqual(
      [item?.key, item?.latent?.because, item?.cause?.kind, item?.cause?.by, item?.cause?.evidence],
      [
        `${UNIT}:libraries`,
        LIBRARY,
        "package-file",
        "dpkg",
        `${LIBRARY} replaced by ${PKG} 1.0-1 → 1.1-1`,
      ],
    );
    const pulls = forge.double.pulls().filter((p) => p.state === "open");
    assertNoSelfChange(pulls);
    assert.deepEqual(
      pulls.map((p) => p.title),
      [`Remediate latent systemd drift on ${HOST}: ${UNIT}:libraries: restart pending`],
    );
    const lines = pulls[0]!.body!.split("\n");
    assert.ok(
      lines.includes(
        `Quartermaster found **high** latent systemd drift on 1 node: A restart of \`${UNIT}\` loads the replaced \`${LIBRARY}\`.`,
      ),
      pulls[0]!.body!,
    );
    assert.deepEqual(
      lines.filter((l) => l.startsWith("Replaced by ")),
      [
        `Replaced by \`dpkg\` at ${item!.cause!.at!.slice(0, 16).replace("T", " ")} UTC: \`${LIBRARY} replaced by ${PKG} 1.0-1 → 1.1-1\`.`,
      ],
    );
  });
});
