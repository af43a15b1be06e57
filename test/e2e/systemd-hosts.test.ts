// The systemd domain against a real systemd: a test host whose PID 1 is systemd (its own pid,
// mount and network namespaces, a minimal target of its own), audited over SSH as usual. The
// audit's verdicts are checked against `systemctl is-enabled` / `is-active` on that host.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { stringify } from "yaml";
import type { NodeResult, Report } from "../../src/report/schema.js";
import { ensureBuilt, runCli } from "../support/cli.js";
import { startForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { buildLibrary, type TestLibrary } from "../support/library.js";
import { removeTree, writeTree } from "../support/tree.js";
import { Watcher } from "../support/watcher.js";

const HOST = "sd-01";
const service = (description: string, install?: string) =>
  `[Unit]\nDescription=${description}\nDefaultDependencies=no\n\n[Service]\nExecStart=/bin/sleep infinity\n${install ? `\n[Install]\n${install}\n` : ""}`;
const APP = service("app", "WantedBy=multi-user.target");
const OVERRIDE = "[Service]\nEnvironment=MODE=prod\n";
const VENDOR = "/usr/lib/systemd/system";

/** Every unit the host has, as systemd sees it once the setup below has run. */
const UNITS = [
  "qm-app.service", // enabled by the admin, started, with a drop-in
  "qm-vendor.service", // enabled only by a vendor link in /usr/lib/systemd/system/*.wants, started
  "qm-static.service", // no [Install] section: static
  "qm-disabled.service", // installable, never enabled
  "qm-aliased.service", // enabled, with an Alias= ...
  "qm-alias.service", // ... this name
  "qm-masked.service", // masked
  "qm-worker@1.service", // an enabled template instance
  "qm-worker@2.service", // an instance nobody enabled
  "qm-preset.service", // enabled through a preset file
  "qm-indirect.service", // enabled only through Also=
];

// A canary in the machine's own /tmp: a booting systemd must never clean it.
const CANARY = path.join(tmpdir(), `qm-systemd-canary-${process.pid}`);

describe("a real systemd host over ssh", () => {
  let fleet: TestFleet;
  let manifests: string;
  const cli = (args: string[]) =>
    runCli([...args, "--manifests", manifests, "--ssh-config", fleet.sshConfig]);

  async function audit(units: object[], ssh?: object): Promise<NodeResult> {
    await writeFile(
      path.join(manifests, "nodes", `${HOST}.yaml`),
      stringify({ ...(ssh && { ssh }), systemd: { units } }),
    );
    const out = `${manifests}-report.json`;
    const result = await cli(["audit", "--format", "json", "--out", out]);
    assert.ok(result.exitCode === 0 || result.exitCode === 1, result.stderr);
    const report = JSON.parse(await readFile(out, "utf8")) as Report;
    await rm(out, { force: true });
    return report.nodes[0]!;
  }

  before(async () => {
    await writeFile(CANARY, "still here\n");
    fleet = await startFleet([
      {
        name: HOST,
        systemd: true,
        files: {
          "/etc/systemd/system/qm-app.service": { contents: APP },
          // Added to the host, not to this machine: the EnvironmentFile of qm-env.service.
          "/etc/default/qm-env": { contents: "MODE=old\n" },
          "/etc/systemd/system/qm-app.service.d/override.conf": { contents: OVERRIDE },
          [`${VENDOR}/qm-vendor.service`]: {
            contents: service("vendor", "WantedBy=multi-user.target"),
          },
          [`${VENDOR}/qm-static.service`]: { contents: service("static") },
          [`${VENDOR}/qm-disabled.service`]: {
            contents: service("disabled", "WantedBy=multi-user.target"),
          },
          [`${VENDOR}/qm-aliased.service`]: {
            contents: service("aliased", "WantedBy=multi-user.target\nAlias=qm-alias.service"),
          },
          [`${VENDOR}/qm-masked.service`]: {
            contents: service("masked", "WantedBy=multi-user.target"),
          },
          [`${VENDOR}/qm-worker@.service`]: {
            contents: service("worker %i", "WantedBy=multi-user.target"),
          },
          [`${VENDOR}/qm-preset.service`]: {
            contents: service("preset", "WantedBy=multi-user.target"),
          },
          [`${VENDOR}/qm-indirect.service`]: {
            contents: service("indirect", "Also=qm-static.service"),
          },
          "/etc/systemd/system-preset/50-qm.preset": { contents: "enable qm-preset.service\n" },
          "/etc/sudoers.d/qm-audit": {
            contents: "qm-audit ALL=(root) NOPASSWD: /bin/sh\n",
            mode: "0440",
          },
        },
      },
    ]);
    await fleet.exec(
      HOST,
      [
        `mkdir -p ${VENDOR}/multi-user.target.wants`,
        `ln -s ../qm-vendor.service ${VENDOR}/multi-user.target.wants/qm-vendor.service`,
        "systemctl daemon-reload",
        "systemctl enable --quiet qm-app.service qm-aliased.service qm-worker@1.service",
        "systemctl mask --quiet qm-masked.service",
        "systemctl preset --quiet qm-preset.service",
        "systemctl start qm-app.service qm-vendor.service",
      ].join(" && "),
    );
    manifests = await writeTree({ "fleet.yaml": "{}\n", [`nodes/${HOST}.yaml`]: "{}\n" });
  });

  after(async () => {
    await fleet?.stop();
    if (manifests) await removeTree(manifests);
    await rm(CANARY, { force: true });
  });

  test("systemd is PID 1 of the host and reaches running", async () => {
    assert.equal((await fleet.exec(HOST, "systemctl is-system-running")).trim(), "running");
    assert.equal((await fleet.exec(HOST, "cat /proc/1/comm")).trim(), "systemd");
  });

  test("enabled and active as the audit reads them agree with systemctl for every unit", async () => {
    // As root: without it, the maps of the units' processes are unreadable, so unknown.
    const node = await audit(
      UNITS.map((name) => ({ name, enabled: true, active: true })),
      { become: "sudo" },
    );
    assert.deepEqual(node.unknown ?? [], [], JSON.stringify(node.unknown));
    const verdict = (name: string, attribute: string) => {
      const item = node.drift.find((d) => d.key === `${name}:${attribute}`);
      return item ? item.live : true;
    };
    const answers: Record<string, [boolean, boolean]> = {};
    const fromSystemd: Record<string, [boolean, boolean]> = {};
    for (const name of UNITS) {
      answers[name] = [verdict(name, "enabled") as boolean, verdict(name, "active") as boolean];
      const out = await fleet.exec(
        HOST,
        `systemctl is-enabled ${name} >/dev/null 2>&1; echo $?; systemctl is-active ${name} >/dev/null 2>&1; echo $?`,
      );
      const [enabled, active] = out
        .trim()
        .split("\n")
        .map((code) => code === "0");
      fromSystemd[name] = [enabled!, active!];
    }
    assert.deepEqual(answers, fromSystemd);
    // The cases are real: each state systemd reports is there, not a host where everything is
    // enabled.
    const states = await fleet.exec(
      HOST,
      `for u in ${UNITS.join(" ")}; do systemctl is-enabled $u; done 2>&1`,
    );
    assert.deepEqual([...new Set(states.trim().split("\n"))].sort(), [
      "alias",
      "disabled",
      "enabled",
      "indirect",
      "masked",
      "static",
    ]);
    assert.equal(
      node.drift.find((d) => d.key === "qm-static.service:active")?.detail,
      "ActiveState=inactive SubState=dead",
    );
    assert.equal(
      node.drift.find((d) => d.key === "qm-masked.service:enabled")?.detail,
      "systemctl is-enabled: masked",
    );
  });

  test("unit file and drop-in drift, read from disk as systemd loads them", async () => {
    const node = await audit([
      {
        name: "qm-app.service",
        contents: APP.replace("sleep infinity", "sleep 3600"),
        dropins: { "override.conf": "[Service]\nEnvironment=MODE=dev\n" },
      },
      { name: "qm-worker@1.service", contents: service("worker %i", "WantedBy=multi-user.target") },
    ]);
    assert.deepEqual(
      node.drift.map((d) => [d.key, d.detail]),
      [
        ["qm-app.service:contents", "in effect: /etc/systemd/system/qm-app.service"],
        ["qm-app.service.d/override.conf", "/etc/systemd/system/qm-app.service.d/override.conf"],
      ],
    );
    assert.match(node.drift[0]!.diff!, /^-ExecStart=\/bin\/sleep 3600$/m);
  });

  test("a unit stopped and disabled on the host is drift on the next audit", async () => {
    await fleet.exec(HOST, "systemctl disable --quiet --now qm-app.service");
    const node = await audit([{ name: "qm-app.service", enabled: true, active: true }]);
    assert.deepEqual(
      node.drift.map((d) => [d.key, d.live]),
      [
        ["qm-app.service:enabled", false],
        ["qm-app.service:active", false],
      ],
    );
    await fleet.exec(HOST, "systemctl enable --quiet --now qm-app.service");
  });

  test("latent drift: files changed since a unit was loaded or started, gone after daemon-reload and restart", async () => {
    const units = [
      { name: "qm-app.service", active: true }, // the control: untouched since it started
      { name: "qm-vendor.service", active: true }, // its unit file edited, a drop-in added, running
    ];
    const dropin = "/etc/systemd/system/qm-vendor.service.d/latent.conf";
    const unitFile = `${VENDOR}/qm-vendor.service`;
    // The wait outlasts the audit's allowance for whole-second clocks.
    await fleet.exec(
      HOST,
      [
        "sleep 3",
        `mkdir -p ${path.dirname(dropin)}`,
        `printf '[Service]\\nEnvironment=QM_LATENT=1\\n' > ${dropin}`,
        `printf '# edited\\n' >> ${unitFile}`,
      ].join(" && "),
    );
    const latent = (node: NodeResult) =>
      node.drift.map((d) => [d.key, d.declared === d.live, d.latentPolicy, d.latent?.after]);
    const needReload = async () =>
      (
        await fleet.exec(
          HOST,
          `systemctl show -p NeedDaemonReload --value ${units.map((u) => u.name).join(" ")}`,
        )
      )
        .trim()
        .split("\n")
        .filter((line) => line !== "");
    try {
      const first = await audit(units);
      assert.equal(first.status, "clean", JSON.stringify(first));
      assert.deepEqual(latent(first), [
        ["qm-vendor.service:loaded", true, "ticket", "daemon-reload"],
        ["qm-vendor.service:running", true, "ticket", "restart"],
      ]);
      assert.deepEqual(await needReload(), ["no", "yes"]);
      for (const file of [unitFile, dropin])
        assert.match(
          first.drift[1]!.latent!.because,
          new RegExp(`(^|, )${file.replaceAll(".", "\\.")} changed at \\d{4}-`),
        );

      // The events happen: what each item said it would become is what the next audit sees.
      await fleet.exec(HOST, "systemctl daemon-reload");
      assert.deepEqual(await needReload(), ["no", "no"]);
      const reloaded = await audit(units);
      assert.deepEqual(latent(reloaded), [
        ["qm-vendor.service:running", true, "ticket", "restart"],
      ]);
      await fleet.exec(HOST, "systemctl restart qm-vendor.service");
      const restarted = await audit(units);
      assert.deepEqual(latent(restarted), []);
      assert.match(
        await fleet.exec(HOST, "systemctl show -p Environment --value qm-vendor.service"),
        /QM_LATENT=1/,
      );
    } finally {
      await fleet.exec(
        HOST,
        `rm -f ${dropin} && sed -i '/^# edited$/d' ${unitFile} && systemctl daemon-reload && systemctl restart qm-vendor.service`,
      );
    }
  });

  test("latent drift: a unit started before its EnvironmentFile changed, until it restarts", async () => {
    const unit = "qm-env.service";
    const env = "/etc/default/qm-env";
    const unitFile = `/etc/systemd/system/${unit}`;
    const contents = service("env").replace("[Service]\n", `[Service]\nEnvironmentFile=-${env}\n`);
    const units = [{ name: unit, active: true }];
    const latent = (node: NodeResult) =>
      node.drift.map((d) => [d.key, d.declared === d.live, d.latent?.after, d.latent?.because]);
    await fleet.exec(
      HOST,
      [
        `printf 'MODE=old\\n' > ${env}`,
        `printf '%s' '${contents}' > ${unitFile}`,
        "systemctl daemon-reload",
        `systemctl start ${unit}`,
      ].join(" && "),
    );
    try {
      const started = await audit(units);
      assert.deepEqual([started.status, latent(started)], ["clean", []]);
      // The wait outlasts the audit's allowance for whole-second clocks.
      await fleet.exec(HOST, `sleep 3 && printf 'MODE=new\\n' > ${env}`);
      const edited = await audit(units);
      assert.equal(edited.status, "clean", JSON.stringify(edited));
      assert.deepEqual(
        latent(edited).map(([key, same, after]) => [key, same, after]),
        [[`${unit}:running`, true, "restart"]],
      );
      assert.match(String(latent(edited)[0]![3]), new RegExp(`^${env} changed at \\d{4}-`));
      // systemd itself needs no reload for it: only a restart reads the file again.
      assert.equal(
        (await fleet.exec(HOST, `systemctl show -p NeedDaemonReload --value ${unit}`)).trim(),
        "no",
      );
      await fleet.exec(HOST, `systemctl restart ${unit}`);
      assert.deepEqual(latent(await audit(units)), []);
    } finally {
      await fleet.exec(
        HOST,
        `systemctl stop ${unit}; rm -f ${unitFile} && systemctl daemon-reload`,
      );
    }
  });

  test("latent drift: a unit mapping a library replaced on disk (as dpkg does) until it restarts", async () => {
    let built: TestLibrary | undefined;
    const unit = "/etc/systemd/system/qm-lib.service";
    const units = [
      { name: "qm-app.service", active: true }, // the control: maps nothing deleted
      { name: "qm-lib.service", active: true },
    ];
    const sudo = { become: "sudo" };
    const latent = (node: NodeResult) =>
      node.drift.map((d) => [d.key, d.declared === d.live, d.latent?.after, d.latent?.because]);
    try {
      built = await buildLibrary(fleet.dir);
      const library = built.path;
      await writeFile(
        path.join(fleet.dir, "qm-lib.service"),
        `[Unit]\nDescription=lib\nDefaultDependencies=no\n\n[Service]\nEnvironment=LD_PRELOAD=${library}\nExecStart=/bin/sleep infinity\n`,
      );
      await fleet.exec(
        HOST,
        `cp ${path.join(fleet.dir, "qm-lib.service")} ${unit} && systemctl daemon-reload && systemctl start qm-lib.service`,
      );
      const pid = (
        await fleet.exec(HOST, "systemctl show -p MainPID --value qm-lib.service")
      ).trim();
      assert.match(await fleet.exec(HOST, `cat /proc/${pid}/maps`), new RegExp(`${library}$`, "m"));

      const fresh = await audit(units, sudo);
      assert.deepEqual([fresh.status, latent(fresh), fresh.unknown ?? []], ["clean", [], []]);

      // Replaced as a package manager replaces a file: written beside it, renamed over it.
      await built.replace();
      const replaced = await audit(units, sudo);
      assert.equal(replaced.status, "clean", JSON.stringify(replaced));
      assert.deepEqual(latent(replaced), [
        ["qm-lib.service:libraries", true, "restart", `qm-lib.service maps deleted ${library}`],
      ]);
      assert.equal(
        replaced.drift[0]!.detail,
        `process ${pid} maps files deleted or replaced since it started`,
      );

      // Without become: sudo, root's processes' maps are unreadable: unknown, not clean.
      const unprivileged = await audit(units);
      assert.deepEqual(latent(unprivileged), []);
      assert.deepEqual(
        (unprivileged.unknown ?? []).map((u) => [
          u.domain,
          u.reason.replace(/\/proc\/\d+\//, "/proc/PID/"),
        ]),
        ["qm-app.service", "qm-lib.service"].map((name) => [
          "systemd",
          `${name}: cannot read /proc/PID/maps (Permission denied): whether it maps a deleted library is unknown (another user's processes need become: sudo)`,
        ]),
      );

      // The event happens: after the restart the unit maps the library on disk.
      await fleet.exec(HOST, "systemctl restart qm-lib.service");
      const restarted = await audit(units, sudo);
      assert.deepEqual([restarted.status, latent(restarted)], ["clean", []]);
    } finally {
      await fleet.exec(
        HOST,
        `systemctl stop qm-lib.service; rm -f ${unit} && systemctl daemon-reload`,
      );
      await built?.remove();
    }
  });

  test("watch on the host: a unit file edit and a unit stop are each one drift that resolves", async () => {
    // The host sees the fleet's directory at the same path (its /tmp is private): the spec goes
    // there.
    const spec = path.join(fleet.dir, "watch-node-spec.yaml");
    await writeFile(
      spec,
      stringify({ systemd: { units: [{ name: "qm-app.service", contents: APP, active: true }] } }),
    );
    const edited = path.join(fleet.dir, "qm-app.service.edited");
    await writeFile(edited, APP.replace("Description=app", "Description=app, edited on the host"));
    const original = path.join(fleet.dir, "qm-app.service.original");
    await writeFile(original, APP);
    await ensureBuilt();
    const watcher = Watcher.start(["--manifest", spec, "--interval", "1"], fleet.enter(HOST));
    try {
      await watcher.waitFor("the started event", (e) => e.event === "started");
      const of = (event: string, key: string) => (e: { event: string; key?: string }) =>
        e.event === event && e.key === key;
      const unitFile = "/etc/systemd/system/qm-app.service";
      await fleet.exec(HOST, `cp ${edited} ${unitFile}`);
      await watcher.waitFor(
        "a drift event for the unit file",
        of("drift", "qm-app.service:contents"),
      );
      await fleet.exec(HOST, `cp ${original} ${unitFile}`);
      await watcher.waitFor(
        "a resolved event for the unit file",
        of("resolved", "qm-app.service:contents"),
      );
      await fleet.exec(HOST, "systemctl stop qm-app.service");
      await watcher.waitFor(
        "a drift event for the stopped unit",
        of("drift", "qm-app.service:active"),
      );
      await fleet.exec(HOST, "systemctl start qm-app.service");
      await watcher.waitFor(
        "a resolved event for the started unit",
        of("resolved", "qm-app.service:active"),
      );
      // nsenter forks into the pid namespace and passes on its child's exit status, not signals:
      // stop the watcher itself.
      const watch = Number(
        (await readFile(`/proc/${watcher.pid}/task/${watcher.pid}/children`, "utf8")).trim(),
      );
      process.kill(watch, "SIGTERM");
      const exit = await watcher.exit();
      assert.equal(exit.code, 0, watcher.stderr);
      for (const event of ["drift", "resolved"]) {
        for (const key of ["qm-app.service:contents", "qm-app.service:active"])
          assert.equal(watcher.count(of(event, key)), 1, `${event} ${key}`);
      }
    } finally {
      await watcher.stop();
      // The unit file was rewritten on disk: without a reload it would stay latent drift.
      await fleet.exec(HOST, "systemctl daemon-reload");
    }
  });

  test("accept round trip for units: merging each accept PR makes the next audit clean", async () => {
    const token = "ghs_systemd_e2e";
    const work = await writeTree({}, "qm-systemd-accept-");
    // One node per drift, all on the one host, so the PRs edit different files and merge in any
    // order.
    const node = (unit: object) => stringify({ host: HOST, systemd: { units: [unit] } });
    const { server, double } = await startForge({
      token,
      owner: "acme",
      repo: "fleet",
      files: {
        "fleet-manifests/fleet.yaml": "{}\n",
        "fleet-manifests/nodes/sd-contents.yaml": node({
          name: "qm-app.service",
          contents: APP.replace("=app", "=the app"),
        }),
        "fleet-manifests/nodes/sd-dropin.yaml": node({
          name: "qm-app.service",
          dropins: { "override.conf": "[Service]\nNice=5\n" },
        }),
        "fleet-manifests/nodes/sd-active.yaml": node({ name: "qm-static.service", active: true }),
        "fleet-manifests/nodes/sd-enabled.yaml": node({
          name: "qm-disabled.service",
          enabled: true,
        }),
      },
    });
    try {
      const env = double.cliEnv();
      const repo = [
        "--repo",
        server.repoUrl("acme", "fleet"),
        "--cache-dir",
        path.join(work, "cache"),
      ];
      const auditRepo = async (name: string) => {
        const out = path.join(work, `${name}.json`);
        const result = await runCli(
          ["audit", ...repo, "--ssh-config", fleet.sshConfig, "--format", "json", "--out", out],
          { env },
        );
        return { result, report: JSON.parse(await readFile(out, "utf8")) as Report, out };
      };
      const before = await auditRepo("before");
      assert.equal(before.result.exitCode, 1, before.result.stderr);
      assert.deepEqual(
        before.report.nodes.map((n) => [n.name, n.drift.map((d) => d.key)]),
        [
          ["sd-active", ["qm-static.service:active"]],
          ["sd-contents", ["qm-app.service:contents"]],
          ["sd-dropin", ["qm-app.service.d/override.conf"]],
          ["sd-enabled", ["qm-disabled.service:enabled"]],
        ],
      );
      const proposed = await runCli(["propose", "--report", before.out, ...repo], { env });
      assert.equal(proposed.exitCode, 0, proposed.stderr);
      const pulls = double.pulls().filter((p) => p.state === "open");
      assert.deepEqual(pulls.map((p) => p.title.split(" ")[0]).sort(), [
        "Accept",
        "Accept",
        "Accept",
        "Accept",
      ]);
      for (const pull of pulls) await double.mergePull(pull.number);
      const after = await auditRepo("after");
      assert.equal(
        after.result.exitCode,
        0,
        `${after.result.stderr}\n${JSON.stringify(after.report.nodes, null, 2)}`,
      );
      assert.deepEqual(
        after.report.nodes.map((n) => n.status),
        ["clean", "clean", "clean", "clean"],
      );
    } finally {
      await double.stop();
      await server.stop();
      await removeTree(work);
    }
  });

  test("stopping the host ends every process it started and leaves the machine's /tmp alone", async () => {
    const netns = fleet.hosts[0]!.netns;
    await fleet.stop();
    assert.equal(existsSync(`/run/netns/${netns}`), false);
    assert.equal(await readFile(CANARY, "utf8"), "still here\n");
  });
});
