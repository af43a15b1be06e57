// Drift causes end to end: five real sshd hosts, each with its own dpkg database, logs and /etc
// (private overlays), a systemd host and an rpm host, audited and proposed through the CLI against
// the git server and the GitHub double. Between the two runs the hosts change as an operator or the
// OS changes them: `apt-get install` and `dpkg -i` of a local .deb (its conffile replaced by the
// upgrade), `dpkg -r`, `rpm -U` of a local .rpm (its config file replaced), `sed -i` on a managed
// file (rpm-shipped ones included), a reboot. Run 2 must name each change's cause, and never a
// wrong one.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import { suiteForge } from "../support/forge.js";
import {
  AUDIT_USER,
  buildRpm,
  startFleet,
  type RpmPackage,
  type TestFleet,
} from "../support/hosts.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_causes_e2e";
const DB = ["db-01", "db-02", "db-03"];
const WEB = ["web-01", "web-02"];
// A real systemd host: its units are enabled and disabled with systemctl.
const APP_HOST = "app-01";
const unit = (name: string) =>
  `[Unit]\nDescription=${name}\nDefaultDependencies=no\n\n[Service]\nExecStart=/bin/sleep infinity\n\n[Install]\nWantedBy=multi-user.target\n`;
const CONF = "/etc/qm-demo/demo.conf";
const APP = "/etc/qm-app.conf";
// An rpm host (RHEL-like): its package ships a config file the upgrade replaces and one edited.
const RPM_HOST = "rhel-01";
const RPM_CONF = "/etc/qm-rpm/rpm.conf";
const RPM_APP = "/etc/qm-rpm/app.conf";
const rpmPackage = (version: string, level: string): RpmPackage => ({
  name: "qm-rpm",
  version,
  release: "1",
  files: {
    [RPM_CONF]: { contents: `level = ${level}\n`, config: true },
    [RPM_APP]: { contents: "port = 80\n", config: true },
  },
});
// What dpkg, apt and `sed -i` write: nothing of the machine's own is changed.
const WRITABLE = ["/etc", "/var/lib/dpkg", "/var/lib/apt", "/var/cache/apt", "/var/log"];

let fleet: TestFleet;
const debs: Record<string, string> = {};
const rpms: Record<string, string> = {};

/** A package built here with dpkg-deb: `conf` is its conffile's contents, when it ships one. */
async function buildDeb(name: string, version: string, conf?: string): Promise<string> {
  const root = path.join(forge.work, `${name}-${version}`);
  await mkdir(path.join(root, "DEBIAN"), { recursive: true });
  const control = [
    `Package: ${name}`,
    `Version: ${version}`,
    "Architecture: all",
    "Maintainer: Quartermaster tests <qm@example.invalid>",
    "Description: a package of the cause scenario",
    "",
  ];
  await writeFile(path.join(root, "DEBIAN", "control"), control.join("\n"));
  if (conf !== undefined) {
    await mkdir(path.join(root, path.dirname(CONF)), { recursive: true });
    await writeFile(path.join(root, CONF), conf);
    await writeFile(path.join(root, "DEBIAN", "conffiles"), `${CONF}\n`);
  }
  const deb = path.join(forge.work, `${name}_${version}_all.deb`);
  await execa("dpkg-deb", ["--root-owner-group", "--build", root, deb]);
  return deb;
}

/** A node spec declaring `packages` (a YAML flow map) and each file's contents, then `more`. */
const declare = (packages: string, files: Record<string, string>, more: string[] = []) =>
  [
    "packages:",
    `  installed_manifest: ${packages}`,
    "files:",
    ...Object.entries(files).map(
      ([f, text]) => `  - { path: ${f}, contents: ${JSON.stringify(text)} }`,
    ),
    ...more,
    "",
  ].join("\n");
const spec = declare(
  '{ qm-demo: "1.0", qm-extra: "*" }',
  { [CONF]: "level = 1\n", [APP]: "port = 80\n" },
  ["system:", "  kernel_version: 0.0.0-declared"],
);

const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-causes-e2e-",
  files: {
    "fleet-manifests/fleet.yaml": "policy:\n  kernel: { on_drift: ticket }\n",
    "fleet-manifests/groups/db.yaml": spec,
    "fleet-manifests/groups/web.yaml": spec,
    ...Object.fromEntries(
      [...DB, ...WEB].map((n) => [
        `fleet-manifests/nodes/${n}.yaml`,
        `groups: [${n.slice(0, n.indexOf("-"))}]\n`,
      ]),
    ),
    [`fleet-manifests/nodes/${RPM_HOST}.yaml`]: declare('{ qm-rpm: "1.0-1" }', {
      [RPM_CONF]: "level = 1\n",
      [RPM_APP]: "port = 80\n",
    }),
    [`fleet-manifests/nodes/${APP_HOST}.yaml`]:
      "systemd:\n  units:\n    - { name: qm-old.service, enabled: true }\n    - { name: qm-new.service, enabled: false }\n",
  },
  setup: async () => {
    debs["demo-1.0"] = await buildDeb("qm-demo", "1.0", "level = 1\n");
    debs["demo-1.1"] = await buildDeb("qm-demo", "1.1", "level = 2\n");
    debs["extra-1.0"] = await buildDeb("qm-extra", "1.0");
    rpms["1.0"] = await buildRpm(rpmPackage("1.0", "1"), path.join(forge.work, "rpmbuild"));
    rpms["1.1"] = await buildRpm(rpmPackage("1.1", "2"), path.join(forge.work, "rpmbuild"));
    fleet = await startFleet(
      [
        ...[...DB, ...WEB].map((name) => ({ name, writable: WRITABLE })),
        {
          name: APP_HOST,
          systemd: true,
          files: Object.fromEntries(
            ["qm-old.service", "qm-new.service"].map((u) => [
              `/usr/lib/systemd/system/${u}`,
              { contents: unit(u) },
            ]),
          ),
        },
        // Where rpm and `sed -i` write; the database starts with one package, installed for real below.
        {
          name: RPM_HOST,
          writable: ["/etc"],
          rpmPackages: [{ name: "qm-base", version: "1", release: "1" }],
        },
      ],
      { prefix: "qmc" },
    );
    // rpm 4.18 (Debian's) warns on stderr that it is not dpkg; it installs all the same.
    await fleet.exec(RPM_HOST, `rpm -U --nodeps ${rpms["1.0"]} 2>/dev/null`);
    await fleet.exec(
      APP_HOST,
      "systemctl daemon-reload && systemctl enable --quiet qm-old.service",
    );
    // The state every host starts from, clean against the manifests.
    await Promise.all(
      [...DB, ...WEB].map((name) =>
        fleet.exec(
          name,
          `dpkg -i ${debs["demo-1.0"]} ${debs["extra-1.0"]} >/dev/null && printf 'port = 80\\n' > ${APP}`,
        ),
      ),
    );
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig);

/** One change made on a host between the runs, and the cause run 2 must give its drift item. */
interface Change {
  node: string;
  domain: string;
  key: string;
  kind: string;
  at: number;
}

describe("a cause on every drift item", () => {
  const changes: Change[] = [];
  /** Run 1's known causes, by node and key: a drift that persists keeps its cause. */
  const firstCauses = new Map<string, unknown>();
  /** Runs `command` on `node` as root; each of `items` changed now, by a `kind` cause. */
  async function change(node: string, command: string, items: [string, string, string][]) {
    const at = Date.now();
    await fleet.exec(node, command);
    for (const [domain, key, kind] of items) {
      // A later change of the same item is the one its drift comes from.
      const earlier = changes.findIndex((c) => c.node === node && c.key === key);
      if (earlier >= 0) changes.splice(earlier, 1);
      changes.push({ node, domain, key, kind, at });
    }
  }

  it("run 1 records the fleet's audit; the hosts then change, 20 times", async () => {
    const { report } = await run.auditAndPropose("run-1", 1, ["--max-new-prs", "0"]);
    for (const node of report.nodes) {
      assert.deepEqual(
        node.drift.map((d) => d.key),
        node.name === APP_HOST || node.name === RPM_HOST ? [] : ["kernel_version"],
        `${node.name}: only the kernel drifts before the changes`,
      );
      for (const { key, cause } of node.drift)
        if (cause?.kind !== "unknown") firstCauses.set(`${node.name} ${key}`, cause);
    }
    const uid = (await fleet.exec("db-01", `id -u ${AUDIT_USER}`)).trim();
    const upgraded: [string, string, string][] = [
      ["packages", "qm-demo", "package"],
      ["files", CONF, "package-file"],
    ];
    for (const node of DB)
      await change(
        node,
        `SUDO_UID=${uid} DEBIAN_FRONTEND=noninteractive apt-get install -y -q ${debs["demo-1.1"]} >/dev/null 2>&1`,
        upgraded,
      );
    for (const node of WEB) {
      await change(node, `dpkg -i ${debs["demo-1.1"]} >/dev/null`, upgraded);
      await change(node, "dpkg -r qm-extra >/dev/null", [["packages", "qm-extra", "package"]]);
    }
    for (const node of [...DB, ...WEB])
      await change(node, `sed -i 's/80/8080/' ${APP}`, [["files", APP, "file-edit"]]);
    // A local edit of the conffile the upgrade just replaced.
    await change("db-03", `sed -i 's/2/3/' ${CONF}`, [["files", CONF, "file-edit"]]);
    await change(RPM_HOST, `rpm -U --nodeps ${rpms["1.1"]} 2>/dev/null`, [
      ["packages", "qm-rpm", "package"],
      ["files", RPM_CONF, "package-file"],
    ]);
    // A local edit of a file the package shipped and the upgrade left alone.
    await change(RPM_HOST, `sed -i 's/80/8080/' ${RPM_APP}`, [["files", RPM_APP, "file-edit"]]);
    await change(APP_HOST, "systemctl disable --quiet qm-old.service", [
      ["systemd", "qm-old.service:enabled", "persisted"],
    ]);
    await change(APP_HOST, "systemctl enable --quiet qm-new.service", [
      ["systemd", "qm-new.service:enabled", "persisted"],
    ]);
    for (const node of ["db-01", "db-02", "web-01"]) {
      changes.push({
        node,
        domain: "kernel",
        key: "kernel_version",
        kind: "reboot",
        at: Date.now(),
      });
      await fleet.reboot(node);
    }
    assert.equal(changes.length, 25);
  });

  it("run 2 names the cause of every change, within a minute, and no wrong one; PR bodies show it", async (t) => {
    const { report } = await run.auditAndPropose("run-2", 1);
    let right = 0;
    for (const node of report.nodes) {
      for (const item of node.drift) {
        const made = changes.find(
          (c) => c.node === node.name && c.domain === item.domain && c.key === item.key,
        );
        const cause = item.cause;
        assert.ok(cause, `${node.name} ${item.key}: a cause`);
        if (!made) {
          // Drift no change between the runs explains (the kernel of a host not rebooted): the
          // cause run 1 found, else unknown.
          const first = firstCauses.get(`${node.name} ${item.key}`);
          if (first) assert.deepEqual(cause, first, `${node.name} ${item.key}`);
          else
            assert.equal(
              cause.kind,
              "unknown",
              `${node.name} ${item.key}: ${JSON.stringify(cause)}`,
            );
          continue;
        }
        assert.ok(
          cause.kind === made.kind || cause.kind === "unknown",
          `${node.name} ${item.key}: ${JSON.stringify(cause)}, not ${made.kind}`,
        );
        const off = Math.abs(Date.parse(cause.at ?? "") - made.at);
        if (cause.kind === made.kind && off <= 60_000) right++;
        else t.diagnostic(`not named: ${node.name} ${item.key} (${cause.kind}, ${off} ms off)`);
      }
    }
    t.diagnostic(`${right} of ${changes.length} changes carry the right cause`);
    assert.ok(
      right >= 0.9 * changes.length,
      `${right} of ${changes.length} changes carry the right cause`,
    );

    const db01 = report.nodes.find((n) => n.name === "db-01")!.drift;
    const pkg = db01.find((d) => d.key === "qm-demo")!.cause!;
    assert.equal(pkg.by, `apt-get (${AUDIT_USER})`);
    assert.equal(pkg.evidence, "qm-demo 1.0 → 1.1");
    const web01 = report.nodes.find((n) => n.name === "web-01")!.drift;
    assert.equal(web01.find((d) => d.key === "qm-extra")!.cause!.by, "dpkg");

    const bodies = forge.double.pulls().map((p) => p.body ?? "");
    assert.ok(
      bodies.some((b) =>
        // One line for the transaction on every host, the conffile it replaced first.
        /^Replaced by `apt-get \(qm-audit\)`[^\n]* UTC: `\/etc\/qm-demo\/demo\.conf replaced by qm-demo 1\.0 → 1\.1`, `qm-demo 1\.0 → 1\.1` \(as each of `db-01`[^\n]* recorded it\)\.$/m.test(
          b,
        ),
      ),
      bodies.join("\n---\n"),
    );
    assert.ok(
      bodies.some((b) => /Edited at [^:]+:\d\d UTC: `\/etc\/qm-app\.conf modified at /.test(b)),
    );
    // The three reboots into one kernel: one line, its hosts and the span of their boots; db-03
    // and web-02, not rebooted, keep the cause run 1 found, their boot into that kernel before.
    assert.ok(
      bodies.some((b) =>
        /^Rebooted between [^\n]* UTC: `booted [^\n]* \(as each of `db-01`, `db-02`, `db-03`, `web-01`, `web-02` recorded it\)\.$/m.test(
          b,
        ),
      ),
      bodies.join("\n---\n"),
    );
    // rpm records when, not who: no `by`.
    const rpm = report.nodes.find((n) => n.name === RPM_HOST)!.drift;
    assert.equal(rpm.find((d) => d.key === "qm-rpm")!.cause!.by, undefined);
    assert.ok(
      bodies.some(
        (b) =>
          // The conffile and its package: one transaction, one line, the replaced file first.
          b.includes(
            `: \`${RPM_CONF} replaced by qm-rpm 1.1-1 installed\`, \`qm-rpm 1.1-1 installed\`.`,
          ) && /^Replaced at [^:]+:\d\d UTC: /m.test(b),
      ),
      bodies.join("\n---\n"),
    );
    assert.ok(
      bodies.some((b) =>
        new RegExp(
          `Edited at [^:]+:\\d\\d UTC: \`${RPM_APP} modified at .*, a local edit of qm-rpm's file\``,
        ).test(b),
      ),
    );
    assert.ok(bodies.some((b) => /Persisted at .*: `qm-old\.service's link removed from /.test(b)));
    assert.deepEqual(forge.double.violations, []);
    // The packages went into the hosts' own databases only.
    const machine = await execa("dpkg-query", ["-W", "qm-demo"], { reject: false });
    assert.notEqual(machine.exitCode, 0, "qm-demo is not in the machine's dpkg database");
  });
});
