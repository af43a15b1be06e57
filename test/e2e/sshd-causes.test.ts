// sshd causes end to end: a real sshd test host whose /etc, dpkg database and logs are its own,
// audited with `become: sudo` through the real CLI with the run history on the bot's state branch.
// Between two scheduled runs a package upgrade replaces its sshd_config.d file at dpkg's conffile
// prompt and an operator writes `PasswordAuthentication yes` into another; sshd restarts. The
// second run names the package for the one, the edit (with its file and line) for the other, and
// for a value unchanged since the first run, the unknown cause with that line the first run found.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import { suiteForge } from "../support/forge.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_sshd_causes_e2e";
const HOST = "sshd-c-01";
const PKG = "qm-sshd";
const D = "/etc/ssh/sshd_config.d";
const PACKAGED = `${D}/40-${PKG}.conf`;
const BASE = `${D}/10-base.conf`;
const INCIDENT = `${D}/50-incident.conf`;
// What dpkg and the operator write: nothing of the machine's own is changed.
const WRITABLE = ["/etc", "/var/lib/dpkg", "/var/log"];

let fleet: TestFleet;
const debs: Record<string, string> = {};
const sh = (command: string) => fleet.exec(HOST, command);

/** A package shipping one sshd_config.d file as a conffile. */
async function buildDeb(work: string, version: string, conf: string): Promise<string> {
  const root = path.join(work, `${PKG}-${version}`);
  await mkdir(path.join(root, "DEBIAN"), { recursive: true });
  await mkdir(path.join(root, D), { recursive: true });
  await writeFile(
    path.join(root, "DEBIAN/control"),
    `Package: ${PKG}\nVersion: ${version}\nArchitecture: all\nMaintainer: Quartermaster tests <qm@example.invalid>\nDescription: sshd settings\n`,
  );
  await writeFile(path.join(root, "DEBIAN/conffiles"), `${PACKAGED}\n`);
  await writeFile(path.join(root, PACKAGED), conf);
  const file = path.join(work, `${PKG}_${version}_all.deb`);
  await execa("dpkg-deb", ["--root-owner-group", "--build", root, file]);
  return file;
}

const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-sshd-causes-e2e-",
  files: {
    "README.md": "Fleet manifests.\n",
    "fleet-manifests/fleet.yaml": "{}\n",
    [`fleet-manifests/nodes/${HOST}.yaml`]: [
      "ssh:",
      "  become: sudo",
      "sshd:",
      "  settings:",
      "    LoginGraceTime: 30",
      "    X11Forwarding: no",
      "    PasswordAuthentication: no",
      "",
    ].join("\n"),
  },
  setup: async (forge) => {
    debs["1.0"] = await buildDeb(forge.work, "1.0", "X11Forwarding no\n");
    debs["1.1"] = await buildDeb(forge.work, "1.1", "X11Forwarding yes\n");
    fleet = await startFleet(
      [
        {
          name: HOST,
          // The drop-ins come before the main file's lines: sshd keeps a keyword's first value.
          sshdOptions: [`Include ${D}/*.conf`, "X11Forwarding no", "PasswordAuthentication no"],
          writable: WRITABLE,
        },
      ],
      { prefix: "qmsc" },
    );
    await sh(
      [
        `printf '%s\\n' '${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh' > /etc/sudoers.d/qm-audit`,
        "chmod 0440 /etc/sudoers.d/qm-audit",
        `printf 'LoginGraceTime 60\\n' > ${BASE}`,
        `dpkg -i ${debs["1.0"]} >/dev/null`,
        // A local change of the packaged file: its upgrade then asks which version to keep.
        `printf '# tuned here\\n' >> ${PACKAGED}`,
      ].join(" && "),
    );
    // sshd starts after its files were written: nothing is pending a restart.
    await fleet.reboot(HOST);
  },
});

after(() => fleet?.stop());

const run = scheduledRun(forge, () => fleet.sshConfig);

describe("sshd causes from the host's records", () => {
  it("run 1 records the node's audit; its one drift has no history to date its file", async () => {
    const { report } = await run.auditAndPropose("run-1", 1, ["--max-new-prs", "0"]);
    const drift = report.nodes[0]!.drift;
    assert.deepEqual(
      drift.map((d) => [d.key, d.live, d.cause?.kind]),
      [["logingracetime", "60", "unknown"]],
    );
    assert.equal(
      drift[0]!.cause!.evidence,
      `${BASE}:1 sets LoginGraceTime 60; with no audit history, when ${BASE} changed is not known`,
    );
  });

  it("run 2 names the package that replaced one file, the edit of another with its line, and unknown for the file unchanged since", async () => {
    await sh(
      [
        `dpkg -i --force-confnew ${debs["1.1"]} >/dev/null`,
        `printf 'PasswordAuthentication yes\\n' > ${INCIDENT}`,
      ].join(" && "),
    );
    await fleet.reboot(HOST);
    const { report } = await run.audit("run-2", 1);
    const causes = Object.fromEntries(report.nodes[0]!.drift.map((d) => [d.key, d.cause!]));
    assert.deepEqual(Object.keys(causes).sort(), [
      "logingracetime",
      "passwordauthentication",
      "x11forwarding",
    ]);
    assert.equal(causes.x11forwarding!.kind, "package");
    assert.equal(causes.x11forwarding!.by, "dpkg");
    assert.match(
      causes.x11forwarding!.evidence,
      new RegExp(
        `^${PACKAGED}:1 sets X11Forwarding yes; ${PACKAGED} replaced by ${PKG}'s version at \\S+ \\(dpkg's conffile prompt\\)$`,
      ),
    );
    assert.equal(causes.passwordauthentication!.kind, "file-edit");
    assert.match(
      causes.passwordauthentication!.evidence,
      new RegExp(
        `^${INCIDENT}:1 sets PasswordAuthentication yes; ${INCIDENT} modified at \\S+, owner root, since the last audit$`,
      ),
    );
    // Unchanged since the first run, it keeps the words of its first sighting: its pull request
    // is not rewritten for having been seen before.
    assert.deepEqual(causes.logingracetime, {
      kind: "unknown",
      evidence: `${BASE}:1 sets LoginGraceTime 60; with no audit history, when ${BASE} changed is not known`,
    });
    // What the operator reads: each cause on its item.
    const text = await run.auditText(1);
    assert.ok(text.includes(`${PACKAGED} replaced by ${PKG}'s version`), text);
    assert.ok(text.includes(`${INCIDENT}:1 sets PasswordAuthentication yes`), text);
  });
});
