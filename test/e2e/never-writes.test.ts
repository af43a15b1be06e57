// "Quartermaster never changes a host", checked on the host's own file system: a Debian host and an
// rpm host whose every writable place is their own (`ownRoots`: /etc, /var, /root, /home, /run,
// /tmp, the audit user's home), each adopted and then audited with every domain declared (the
// records of the cause section read, since a last audit an hour ago), as the audit user and through
// sudo. Afterwards nothing on either host is newer than a marker taken before. Needs root, rpm and
// sudo.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { stringify } from "yaml";
import { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";
import { allSamples, specOf } from "../support/samples.js";
import { scratchTrees } from "../support/tree.js";

const DEB = "deb-01";
const RPM = "rhel-01";
const RPM_CONF = "/etc/qm-never/app.conf";
const SUDOERS = {
  "/etc/sudoers.d/qm-never": {
    contents: `${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh -s\n`,
    mode: "0440",
  },
};
// The only path left out: sshd records a connection dropped before it logged in (as one is under
// load) in btmp, the host's own account of failed logins, whoever connects.
const FAILED_LOGINS = "/var/log/btmp";

const SAMPLES = await allSamples();

/** Every domain's sample declaration, then what exists on the host: `real` per domain's spec key. */
function declaration(real: { packages: Record<string, string>; files: object[] }) {
  const spec = specOf(SAMPLES.map(({ domain, sample }) => [domain, sample.declared])) as {
    packages: { installed_manifest: Record<string, string> };
    files: object[];
  };
  spec.packages.installed_manifest = { ...spec.packages.installed_manifest, ...real.packages };
  spec.files = [...spec.files, ...real.files];
  return spec;
}

describe("a host adopted and audited, every domain declared, as the audit user and through sudo", () => {
  let fleet: TestFleet;
  const tree = scratchTrees();
  const cli = (args: string[]) =>
    runCli([...args, "--ssh-config", fleet.sshConfig]).then((result) => {
      assert.ok([0, 1].includes(result.exitCode), `${args.join(" ")}: ${result.stderr}`);
      return result;
    });

  before(async () => {
    fleet = await startFleet(
      [
        { name: DEB, ownRoots: true, systemd: true, files: SUDOERS },
        {
          name: RPM,
          ownRoots: true,
          rpmPackages: [
            { name: "qm-tool", version: "1.2", release: "3.el9" },
            {
              name: "qm-never",
              version: "1.0",
              release: "1",
              files: { [RPM_CONF]: { contents: "port = 80\n", config: true } },
            },
          ],
          files: { ...SUDOERS, [RPM_CONF]: { contents: "port = 80\n" } },
        },
      ],
      { prefix: "qmw" },
    );
  });
  after(() => fleet?.stop());

  test("the check sees a write anywhere the host may write", async () => {
    const mark = path.join(fleet.dir, "marker-check");
    await writeFile(mark, "");
    const paths = ["/etc/qm-x", "/var/lib/qm-x", "/root/.qm-x", "/run/qm-x", "/tmp/qm-x"];
    // In the audit user's home, which the harness made on the machine.
    const own = `/home/${AUDIT_USER}/.qm-x`;
    await fleet.exec(DEB, `touch ${[...paths, own].join(" ")}`);
    // Appended to a file of the machine's, seen through the host's overlay.
    await fleet.exec(DEB, `printf '# x\\n' >> /etc/ssh/ssh_config`);
    assert.deepEqual(await fleet.writtenSince(DEB, mark), [
      "/etc/qm-x",
      "/etc/ssh/ssh_config",
      own,
      "/root/.qm-x",
      "/run",
      "/run/qm-x",
      "/tmp",
      "/tmp/qm-x",
      "/var/lib/qm-x",
    ]);
  });

  test("adopt, audit and the cause records write nothing on either host", async () => {
    const marker = path.join(fleet.dir, "marker");
    await writeFile(marker, "");
    const inventory = path.join(await tree(), "hosts.ini");
    await writeFile(inventory, `[debian]\n${DEB}\n[rhel]\n${RPM}\n`);
    const sudo = stringify({ ssh: { become: "sudo" } });
    const adopted = {
      plain: await tree(),
      sudo: await tree({ "groups/debian.yaml": sudo, "groups/rhel.yaml": sudo }),
    };
    for (const dir of Object.values(adopted)) {
      await cli([
        ...["adopt", "--inventory", inventory, "--manifests", dir, "--known-hosts"],
        ...[fleet.knownHosts, "--files", `/etc/ssh/ssh_config,${RPM_CONF}`],
      ]);
      const audit = await cli(["audit", "--format", "json", "--manifests", dir]);
      const report = Report.parse(JSON.parse(audit.stdout));
      assert.deepEqual(
        report.nodes.map((n) => [n.name, n.status]),
        [
          [DEB, "clean"],
          [RPM, "clean"],
        ],
        audit.stdout,
      );
    }

    // Every domain declared, with packages and files that exist (so their records are read), and a
    // last audit an hour ago: the cause section reads what the hosts recorded since.
    const nodes = {
      [DEB]: declaration({
        packages: { bash: "*", "openssh-server": "*" },
        files: [{ path: "/etc/ssh/ssh_config", mode: "0644" }],
      }),
      [RPM]: declaration({
        packages: { "qm-tool": "*", "qm-never": "*" },
        files: [{ path: RPM_CONF, mode: "0644" }],
      }),
    };
    const lastAudited = new Date(Date.now() - 3600_000).toISOString();
    const files: Record<string, string> = {};
    const history: Record<string, object> = {};
    for (const [host, spec] of Object.entries(nodes))
      for (const [name, ssh] of [
        [host, {}],
        [`${host}-root`, { ssh: { become: "sudo" } }],
      ] as const) {
        files[`nodes/${name}.yaml`] = stringify({ host, ...ssh, ...spec });
        history[name] = { lastAudited, unauditedRuns: 0 };
      }
    const every = await tree(files);
    const state = path.join(every, "..", `${path.basename(every)}-history.json`);
    await writeFile(state, JSON.stringify({ version: 1, nodes: history, drift: {} }));
    const out = `${state}.report.json`;
    const audit = await cli([
      ...["audit", "--format", "json", "--out", out, "--manifests", every, "--state", state],
    ]);
    const report = Report.parse(JSON.parse(await readFile(out, "utf8")));
    assert.deepEqual(
      report.nodes.map((n) => [n.name, n.status]).sort(),
      [DEB, `${DEB}-root`, RPM, `${RPM}-root`].map((n) => [n, "drift"]),
      audit.stderr,
    );
    // Each probe read what it was asked, as the audit user and as root: the packages that exist are
    // found (by rpm as root too), the declared files looked at; systemd on the Debian host, nft and
    // sshd as root.
    const drifting: Record<string, string[]> = {
      [DEB]: ["openssl", "toString"],
      [RPM]: ["bash", "toString"],
    };
    for (const node of report.nodes) {
      const host = node.name.replace(/-root$/, "");
      const root = node.name !== host;
      const unknown = (node.unknown ?? []).map((u) => u.domain);
      const expected = [
        ...(host === RPM ? ["systemd"] : []),
        "kernel_modules",
        ...(root ? [] : ["firewall", "accounts", "sshd"]),
      ];
      assert.deepEqual(unknown, expected, `${node.name}: ${JSON.stringify(node.unknown)}`);
      const packages = node.drift.filter((d) => d.domain === "packages").map((d) => d.key);
      assert.deepEqual(packages.sort(), drifting[host], node.name);
    }

    for (const host of [DEB, RPM]) {
      const written = await fleet.writtenSince(host, marker);
      assert.deepEqual(
        written.filter((p) => p !== FAILED_LOGINS),
        [],
        `${host}: written since the marker`,
      );
    }
  });
});
