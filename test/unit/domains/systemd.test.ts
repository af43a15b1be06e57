import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  chmodSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { systemd, type SystemdDeclared } from "../../../src/domains/systemd/index.js";
import {
  parseSystemctlShow,
  parseSystemd,
  type SystemdLive,
  type UnitLive,
} from "../../../src/domains/systemd/parse.js";
import { NOBODY, runProbe } from "./live-probe.js";

const fixture = (name: string) =>
  readFileSync(new URL(`../../fixtures/systemd/${name}`, import.meta.url), "latin1");
const declare = (items: unknown[]) => systemd.schema.parse(items);
const unitLive = (over: Partial<UnitLive>): UnitLive => ({
  masked: false,
  wantedBy: [],
  dropins: new Map(),
  dropinLinks: new Map(),
  changed: new Map(),
  ...over,
});
const liveOf = (units: Record<string, UnitLive>, unknown: string[] = []): SystemdLive => ({
  cap: 1024,
  units: new Map(Object.entries(units)),
  unknown,
});

describe("systemd: manifest", () => {
  it("accepts unit names with a unit type, templates and instances", () => {
    const names = [
      "nginx.service",
      "getty@tty1.service",
      "worker@.service",
      "-.mount",
      "backup.timer",
      "docker.socket",
    ];
    assert.equal(systemd.schema.safeParse(names.map((name) => ({ name }))).success, true);
  });

  it("rejects names without a unit type, or that hold a path", () => {
    for (const name of ["nginx", "nginx.conf", "../x.service", "a b.service"]) {
      const result = systemd.schema.safeParse([{ name }]);
      assert.equal(result.success, false, name);
      assert.match(result.error.issues[0]!.message, /a unit name ending in \.service/);
    }
  });

  it("rejects drop-ins not named *.conf and units declared twice", () => {
    assert.match(
      systemd.schema.safeParse([{ name: "a.service", dropins: { "x.txt": "" } }]).error!.issues[0]!
        .message,
      /ending in \.conf/,
    );
    assert.match(
      systemd.schema.safeParse([{ name: "a.service" }, { name: "a.service" }]).error!.issues[0]!
        .message,
      /declared twice/,
    );
  });
});

describe("systemd: systemctl show parser", () => {
  it("maps blocks to units in argument order", () => {
    const states = parseSystemctlShow(fixture("systemctl-show.txt"), [
      "nginx.service",
      "backup.service",
      "ghost.service",
    ])!;
    assert.deepEqual(states.get("backup.service"), {
      load: "loaded",
      active: "failed",
      sub: "failed",
    });
    assert.equal(states.get("ghost.service")!.load, "not-found");
  });

  it("gives up on the output of a systemctl that cannot reach systemd, or on a cut output", () => {
    assert.equal(
      parseSystemctlShow(fixture("systemctl-show-no-systemd.txt"), ["ssh.service", "cron.service"]),
      undefined,
    );
    const cut = fixture("systemctl-show.txt").split("\n").slice(0, 6).join("\n");
    assert.equal(
      parseSystemctlShow(cut, ["nginx.service", "backup.service", "ghost.service"]),
      undefined,
    );
    assert.equal(parseSystemctlShow("", ["nginx.service"]), undefined);
  });

  it("reports a failed systemctl as unknown active state, not as drift", () => {
    const live = parseSystemd([
      ["cap 1024", ""],
      ["active ssh.service", fixture("systemctl-show-no-systemd.txt")],
      ["unit ssh.service", "file /usr/lib/systemd/system/ssh.service\n"],
    ]);
    assert.equal(live.units.get("ssh.service")!.state, undefined);
    assert.match(
      live.unknown[0]!,
      /^ssh.service: systemctl show failed \(System has not been booted with systemd/,
    );
    assert.deepEqual(systemd.compare(declare([{ name: "ssh.service", active: true }]), live), []);
  });

  it("reads NeedDaemonReload and the start time since boot; a unit never started has none", () => {
    const states = parseSystemctlShow(fixture("systemctl-show-latent.txt"), [
      "app.service",
      "idle.service",
    ])!;
    assert.deepEqual(states.get("app.service"), {
      load: "loaded",
      active: "active",
      sub: "running",
      needDaemonReload: true,
      activeSinceUs: 5_000_000,
    });
    assert.deepEqual(states.get("idle.service"), {
      load: "loaded",
      active: "inactive",
      sub: "dead",
      needDaemonReload: false,
    });
  });

  it("rejects output without its cap part", () => {
    assert.throws(() => parseSystemd([]), /lacks the cap part/);
  });
});

describe("systemd: compare", () => {
  it("reports a stopped unit with its systemd states", () => {
    const live = liveOf({
      "nginx.service": unitLive({
        file: "/usr/lib/systemd/system/nginx.service",
        state: { load: "loaded", active: "failed", sub: "failed" },
      }),
    });
    assert.deepEqual(systemd.compare(declare([{ name: "nginx.service", active: true }]), live), [
      {
        key: "nginx.service:active",
        declared: true,
        live: false,
        path: ["systemd", "units", "nginx.service", "active"],
        detail: "ActiveState=failed SubState=failed",
      },
    ]);
  });

  it("trusts systemd's load state for a unit with no file in the unit directories", () => {
    const loaded = liveOf({
      "home.mount": unitLive({ state: { load: "loaded", active: "active", sub: "mounted" } }),
    });
    assert.deepEqual(systemd.compare(declare([{ name: "home.mount", active: true }]), loaded), []);
    const notFound = liveOf({
      "ghost.service": unitLive({ state: { load: "not-found", active: "inactive", sub: "dead" } }),
    });
    assert.equal(
      systemd.compare(declare([{ name: "ghost.service", active: true }]), notFound)[0]!.key,
      "ghost.service",
    );
  });
});

describe("systemd: latent drift (files changed since the unit was loaded or started)", () => {
  const BOOT = 1_700_000_000;
  const FILE = "/etc/systemd/system/app.service";
  const DROPIN = "/etc/systemd/system/app.service.d/override.conf";
  const latentOf = (state: UnitLive["state"], changed: [string, number][]) =>
    systemd
      .compare(declare([{ name: "app.service" }]), {
        ...liveOf({ "app.service": unitLive({ file: FILE, state, changed: new Map(changed) }) }),
        bootedAt: BOOT,
      })
      .map((f) => [f.key, f.declared === f.live, f.latent]);
  const running = { load: "loaded", active: "active", sub: "running", activeSinceUs: 10e6 };

  it("a unit needing a daemon reload takes its files on disk at the next daemon-reload", () => {
    assert.deepEqual(latentOf({ ...running, needDaemonReload: true }, []), [
      [
        "app.service:loaded",
        true,
        {
          after: "daemon-reload",
          becomes: "reloaded from disk",
          because: `NeedDaemonReload=yes: ${FILE} or a drop-in changed since systemd loaded it`,
        },
      ],
    ]);
  });

  it("an active unit started before a drop-in changed runs the new one only after a restart", () => {
    const at = BOOT + 10 + 60;
    assert.deepEqual(
      latentOf(running, [
        [FILE, BOOT - 3600],
        [DROPIN, at],
      ]),
      [
        [
          "app.service:running",
          true,
          {
            after: "restart",
            becomes: "restarted with the files on disk",
            because: `${DROPIN} changed at ${new Date(at * 1000).toISOString()}`,
          },
        ],
      ],
    );
  });

  it("an active unit started before one of its EnvironmentFiles changed reads it again only at a restart", () => {
    const env = "/etc/default/app env";
    const show = (mtime: number) =>
      parseSystemd([
        ["cap 1024", ""],
        [
          "active app.service",
          "LoadState=loaded\nActiveState=active\nSubState=running\nNeedDaemonReload=no\n" +
            "ActiveEnterTimestampMonotonic=10000000\n" +
            `EnvironmentFiles=${env} (ignore_errors=yes)\nEnvironmentFiles=/etc/default/gone (ignore_errors=yes)\n`,
        ],
        ["boot", `btime ${BOOT}\n`],
        ["environment", `${mtime} ${env}\n`],
        ["unit app.service", `file ${FILE}\n`],
        ["changed app.service", `${BOOT - 3600} ${FILE}\n`],
      ]);
    const live = show(BOOT + 70);
    assert.deepEqual(live.units.get("app.service")!.state!.environmentFiles, [
      env,
      "/etc/default/gone",
    ]);
    const findings = systemd.compare(declare([{ name: "app.service" }]), live);
    assert.deepEqual(
      findings.map((f) => [f.key, f.detail, f.latent]),
      [
        [
          "app.service:running",
          `the running process started before ${env} changed`,
          {
            after: "restart",
            becomes: "restarted with the files on disk",
            because: `${env} changed at ${new Date((BOOT + 70) * 1000).toISOString()}`,
          },
        ],
      ],
    );
    // Changed before the unit started: what it runs with.
    assert.deepEqual(systemd.compare(declare([{ name: "app.service" }]), show(BOOT + 5)), []);
  });

  it("nothing for a file changed within the clocks' slack of the start, or a stopped unit", () => {
    assert.deepEqual(latentOf(running, [[DROPIN, BOOT + 12]]), []);
    assert.deepEqual(
      latentOf({ ...running, active: "inactive", sub: "dead" }, [[DROPIN, BOOT + 99]]),
      [],
    );
    assert.deepEqual(latentOf({ ...running, needDaemonReload: false }, []), []);
  });
});

describe("systemd: probe and compare on a unit tree", () => {
  let root: string;
  const etc = () => join(root, "etc");
  const vendor = () => join(root, "vendor");
  const APP =
    "[Unit]\nDescription=App\n\n[Service]\nExecStart=/usr/bin/app\n\n[Install]\nWantedBy=multi-user.target\n";
  const VENDOR = "[Service]\nExecStart=/usr/bin/vendor\n";
  const WORKER = "[Service]\nExecStart=/usr/bin/worker %i\n";
  const OVERRIDE = "[Service]\nEnvironment=MODE=prod\n";
  // The unit directories of this machine are replaced, in a private mount namespace, by a known
  // tree.
  const inTree = (command: string[]) => [
    "unshare",
    "-m",
    "sh",
    "-c",
    `mount --bind "$1" /etc/systemd/system && mount --bind "$2" /usr/lib/systemd/system && shift 2 && exec "$@"`,
    "unit-tree",
    etc(),
    vendor(),
    ...command,
  ];
  const audit = async (items: unknown[], asNobody = false) => {
    const declared = declare(items);
    const run = await runProbe<SystemdLive>(systemd, declared, {
      maxFileBytes: 1024,
      command: inTree(asNobody ? NOBODY : ["sh", "-s"]),
    });
    const live = run.live!;
    return { ...run, live, findings: systemd.compare(declared, live) };
  };

  before(() => {
    root = mkdtempSync(join(tmpdir(), "qm-systemd-"));
    chmodSync(root, 0o755);
    mkdirSync(join(etc(), "multi-user.target.wants"), { recursive: true });
    mkdirSync(join(etc(), "app.service.d"));
    mkdirSync(join(etc(), "locked.service.d"));
    mkdirSync(vendor());
    writeFileSync(join(etc(), "app.service"), APP);
    symlinkSync(
      "/etc/systemd/system/app.service",
      join(etc(), "multi-user.target.wants", "app.service"),
    );
    writeFileSync(
      join(etc(), "app.service.d", "override.conf"),
      "[Service]\nEnvironment=MODE=prod\n",
    );
    writeFileSync(join(vendor(), "vendor.service"), VENDOR);
    writeFileSync(join(vendor(), "masked.service"), VENDOR);
    symlinkSync("/dev/null", join(etc(), "masked.service"));
    symlinkSync(
      "/usr/lib/systemd/system/masked.service",
      join(etc(), "multi-user.target.wants", "masked.service"),
    );
    writeFileSync(join(vendor(), "worker@.service"), WORKER);
    symlinkSync(
      "/usr/lib/systemd/system/worker@.service",
      join(etc(), "multi-user.target.wants", "worker@1.service"),
    );
    writeFileSync(join(vendor(), "locked.service"), VENDOR);
    writeFileSync(join(vendor(), "vendor-wanted.service"), VENDOR);
    mkdirSync(join(vendor(), "sockets.target.wants"));
    symlinkSync(
      "../vendor-wanted.service",
      join(vendor(), "sockets.target.wants", "vendor-wanted.service"),
    );
    writeFileSync(
      join(etc(), "locked.service.d", "secret.conf"),
      "[Service]\nEnvironment=TOKEN=x\n",
      { mode: 0o600 },
    );
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("finds no drift when units match", async () => {
    const { findings } = await audit([
      {
        name: "app.service",
        enabled: true,
        contents: APP,
        dropins: { "override.conf": "[Service]\nEnvironment=MODE=prod\n" },
      },
      { name: "vendor.service", enabled: false, contents: VENDOR },
      { name: "worker@1.service", enabled: true, contents: WORKER },
      { name: "ghost.service", enabled: false },
    ]);
    assert.deepEqual(findings, []);
  });

  it("reports enabled drift, reading symlinks rather than asking systemd", async () => {
    const { findings } = await audit([
      { name: "vendor.service", enabled: true },
      { name: "masked.service", enabled: true },
      { name: "app.service", enabled: false },
    ]);
    assert.deepEqual(
      findings.map((f) => [f.key, f.declared, f.live, f.detail]),
      [
        [
          "vendor.service:enabled",
          true,
          false,
          "no symlink to it in a *.wants or *.requires directory of /etc/systemd/system or the vendor's",
        ],
        ["masked.service:enabled", true, false, "masked: masked.service links to /dev/null"],
        [
          "app.service:enabled",
          false,
          true,
          "enabled by /etc/systemd/system/multi-user.target.wants/app.service",
        ],
      ],
    );
  });

  it("shows a unit file drift as a -want +got diff of the file in effect", async () => {
    const { findings } = await audit([
      { name: "vendor.service", contents: "[Service]\nExecStart=/usr/bin/vendor --safe\n" },
    ]);
    assert.deepEqual(findings, [
      {
        key: "vendor.service:contents",
        declared: "[Service]\nExecStart=/usr/bin/vendor --safe\n",
        live: VENDOR,
        path: ["systemd", "units", "vendor.service", "contents"],
        detail: "in effect: /usr/lib/systemd/system/vendor.service",
        diff: "--- want\n+++ got\n@@ -1,2 +1,2 @@\n [Service]\n-ExecStart=/usr/bin/vendor --safe\n+ExecStart=/usr/bin/vendor\n",
      },
    ]);
  });

  it("reports a missing unit once", async () => {
    const { findings } = await audit([
      { name: "ghost.service", enabled: true, contents: "[Service]\n" },
    ]);
    assert.deepEqual(
      findings.map((f) => [f.key, f.declared, f.live, f.path]),
      [["ghost.service", "present", null, ["systemd", "units", "ghost.service"]]],
    );
  });

  it("reports missing, changed and undeclared drop-ins", async () => {
    const { findings } = await audit([
      { name: "app.service", dropins: { "limits.conf": "[Service]\nLimitNOFILE=65536\n" } },
    ]);
    assert.deepEqual(
      findings.map((f) => [f.key, f.declared, f.live]),
      [
        ["app.service.d/limits.conf", "[Service]\nLimitNOFILE=65536\n", null],
        ["app.service.d/override.conf", null, "[Service]\nEnvironment=MODE=prod\n"],
      ],
    );
    assert.match(findings[1]!.detail!, /is not in the manifest/);
  });

  it(
    "says the active state is unknown when systemd is not running, and compares the rest",
    { skip: existsSync("/run/systemd/system") && "systemd runs here" },
    async () => {
      const { findings, live, script } = await audit([
        { name: "app.service", active: true, enabled: false },
      ]);
      assert.deepEqual(
        findings.map((f) => f.key),
        ["app.service:enabled"],
      );
      assert.deepEqual(live.unknown, [
        "systemd is not running on this host (no /run/systemd/system): active state unknown",
      ]);
      assert.equal(script.match(/systemctl show/g)!.length, 1);
    },
  );

  it("as an unprivileged user, reports an unreadable drop-in as unknown, never as drift", async () => {
    const { findings, live } = await audit(
      [{ name: "locked.service", dropins: { "secret.conf": "[Service]\nEnvironment=TOKEN=y\n" } }],
      true,
    );
    assert.deepEqual(findings, []);
    assert.deepEqual(live.unknown, [
      "locked.service: cannot read /etc/systemd/system/locked.service.d/secret.conf",
    ]);
  });

  it("never reads a unit file or drop-in through a symlink, the file's own or a folder's: drift naming the link", async () => {
    const SECRET = "[Service]\nEnvironment=DB_PASSWORD=hunter2\n";
    const vault = join(root, "vault");
    mkdirSync(vault, { mode: 0o700 });
    writeFileSync(join(vault, "secret.conf"), SECRET, { mode: 0o600 });
    symlinkSync(join(vault, "secret.conf"), join(etc(), "linked.service"));
    mkdirSync(join(etc(), "linked.service.d"));
    symlinkSync(join(vault, "secret.conf"), join(etc(), "linked.service.d", "extra.conf"));
    writeFileSync(join(vendor(), "swapped.service"), VENDOR);
    symlinkSync(vault, join(etc(), "swapped.service.d"));
    const { findings, stdout } = await audit([
      { name: "linked.service", contents: APP, dropins: { "extra.conf": OVERRIDE } },
      { name: "swapped.service", dropins: {} },
    ]);
    assert.equal(stdout.includes("hunter2"), false, "a symlink was followed");
    assert.deepEqual(
      findings.map((f) => [f.key, f.declared, f.live]),
      [
        [
          "linked.service:contents",
          APP,
          `symlink /etc/systemd/system/linked.service -> ${vault}/secret.conf`,
        ],
        [
          "linked.service.d/extra.conf",
          OVERRIDE,
          `symlink /etc/systemd/system/linked.service.d/extra.conf -> ${vault}/secret.conf`,
        ],
        ["swapped.service.d/*", null, `symlink /etc/systemd/system/swapped.service.d -> ${vault}`],
      ],
    );
    for (const finding of findings)
      assert.throws(
        () => systemd.accept!(declare([{ name: "linked.service" }]), finding),
        /cannot be written/,
      );
  });

  it("asks systemd whether a unit is enabled only where systemd runs, else reads symlinks without a process", async () => {
    const { script } = await audit([{ name: "app.service", enabled: true }]);
    const asking = script
      .split("\n")
      .filter((line) => /\b(head|cat|readlink|ls|find|systemctl) /.test(line));
    assert.deepEqual(asking, [
      // Inside `if [ -d /run/systemd/system ]`: what systemd loaded and when the unit started.
      "  qm_show=$(systemctl show -p LoadState,ActiveState,SubState,NeedDaemonReload,ActiveEnterTimestampMonotonic,MainPID,ControlGroup,EnvironmentFiles -- 'app.service' 2>&1)",
      `[ -d /run/systemd/system ] && printf 'is-enabled %s\\n' "$(systemctl is-enabled -- 'app.service' 2>/dev/null)"`,
      // readlink runs only for a symlink on the way to the unit file.
      `qm_l=; [ -n "$qm_f" ] && qm_linked "$qm_f" && { qm_l=1; printf '\\n%s mark %s\\n' "$QM_N" 'unit-link app.service'; printf '%s\\n' "$qm_link"; readlink -- "$qm_link"; }`,
    ]);
  });

  it("counts a vendor's enablement link (a *.wants directory beside the vendor's units)", async () => {
    const { findings } = await audit([{ name: "vendor-wanted.service", enabled: true }]);
    assert.deepEqual(findings, []);
  });
});

describe("systemd: snapshot", () => {
  it("has nothing to declare unasked, and probes nothing when nothing is declared", () => {
    assert.equal(systemd.snapshot(liveOf({})), undefined);
    assert.equal(
      systemd.probe([] as SystemdDeclared, {
        quote: String,
        mark: (label) => `mark ${label}`,
        unknown: String,
        maxFileBytes: 1,
        lastAudit: "",
        awk: String,
        stat: String,
      }),
      "mark cap 1",
    );
  });
});

describe("systemd: a declared unit's processes mapping deleted libraries (latent, at restart)", () => {
  const CGROUP = "/sys/fs/cgroup/systemd/system.slice/app.service/cgroup.procs";
  const SHOW = (main: number, active = "active") =>
    `LoadState=loaded\nActiveState=${active}\nSubState=running\nMainPID=${main}\nControlGroup=/system.slice/app.service\n`;
  const parsed = (parts: [string, string][], active = "active") =>
    parseSystemd([
      ["cap 1024", ""],
      ["active app.service", SHOW(4242, active)],
      ["unit app.service", "file /etc/systemd/system/app.service\n"],
      ...parts,
    ]);
  const findings = (live: SystemdLive) => systemd.compare(declare([{ name: "app.service" }]), live);

  it("names the deleted libraries under /lib and /usr/lib, none of the false positives needrestart users hit", () => {
    const live = parsed([
      // 0: a process of another pid namespace in the same cgroup, which this host cannot see.
      ["procs", `${CGROUP}\n4242\n4243\n0\n`],
      ["maps", fixture("maps-deleted.txt")],
      ["maps-errors", "\n"],
    ]);
    assert.deepEqual(live.unknown, []);
    assert.deepEqual(
      [...live.units.get("app.service")!.deletedLibraries!],
      [
        ["/usr/lib/x86_64-linux-gnu/libssl.so.3", [4242]],
        ["/lib/x86_64-linux-gnu/libz.so.1.2.13", [4242]],
        // A newline in a path comes escaped by the kernel: one line, shown as the kernel wrote it.
        ["/usr/lib/qm/lib\\012@::<!--x.so", [4242]],
      ],
    );
    assert.deepEqual(findings(live), [
      {
        key: "app.service:libraries",
        declared: "active with the libraries it started with",
        live: "active with the libraries it started with",
        path: ["systemd", "units", "app.service"],
        detail: "process 4242 maps files deleted or replaced since it started",
        latent: {
          after: "restart",
          becomes: "restarted with the libraries on disk",
          because:
            "/usr/lib/x86_64-linux-gnu/libssl.so.3, /lib/x86_64-linux-gnu/libz.so.1.2.13, /usr/lib/qm/lib\\012@::<!--x.so",
        },
      },
    ]);
  });

  it("a process whose maps cannot be read (another user's, without become: sudo) makes it unknown, not clean", () => {
    const live = parsed([
      ["procs", `${CGROUP}\n4242\n4243\n`],
      ["maps", ""],
      ["maps-errors", "grep: /proc/4243/maps: Permission denied\n"],
    ]);
    assert.deepEqual(findings(live), []);
    assert.deepEqual(live.unknown, [
      "app.service: cannot read /proc/4243/maps (Permission denied): whether it maps a deleted library is unknown (another user's processes need become: sudo)",
    ]);
  });

  it("checks the main PID of a unit without a cgroup file, and nothing of an inactive unit", () => {
    const main = parsed([
      ["procs", ""],
      ["maps", fixture("maps-deleted.txt")],
      ["maps-errors", ""],
    ]);
    assert.equal(findings(main)[0]!.key, "app.service:libraries");
    const inactive = parsed(
      [
        ["procs", ""],
        ["maps", fixture("maps-deleted.txt")],
        ["maps-errors", "grep: /proc/4242/maps: Permission denied\n"],
      ],
      "inactive",
    );
    assert.deepEqual([findings(inactive), inactive.unknown], [[], []]);
  });

  it("parses a hostile maps part in linear time", () => {
    const line = `/proc/1/maps:0-1 r--p 0 0:0 1${" ".repeat(200_000)}/usr/lib/${"a (deleted)".repeat(20_000)}x\n`;
    const live = parsed([
      ["procs", `${CGROUP}\n${"1\n".repeat(10_000)}`],
      ["maps", line.repeat(5) + "grep: /proc/".repeat(50_000)],
      ["maps-errors", `grep: /proc/1/maps: ${"x".repeat(100_000)}`],
    ]);
    assert.equal(live.unknown.length, 1);
  });
});

describe("systemd: the maps probe, run by sh against this machine's /proc", () => {
  let root: string;
  let sleeper: ReturnType<typeof spawn>;
  // systemd seems to run (a private /run/systemd/system) and systemctl answers with the main PID of
  // a process of ours and a cgroup whose cgroup.procs lists it.
  const withSystemd = (show: string, asNobody: boolean) => [
    "unshare",
    "-m",
    "sh",
    "-c",
    `mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/system && mount --bind "$1" /usr/bin/systemctl && mount --bind "$1" /bin/systemctl && mount --bind "$2" /sys/fs/cgroup && shift 2 && exec "$@"`,
    "fake-systemd",
    join(root, "systemctl"),
    join(root, "cgroup"),
    ...(asNobody ? NOBODY : ["sh", "-s"]),
  ];
  const probe = async (asNobody: boolean) => {
    const declared = declare([{ name: "app.service" }]);
    const run = await runProbe<SystemdLive>(systemd, declared, {
      command: withSystemd("", asNobody),
    });
    return { ...run, findings: systemd.compare(declared, run.live!) };
  };

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "qm-systemd-maps-"));
    chmodSync(root, 0o755);
    sleeper = spawn("sleep", ["600"], { stdio: "ignore" });
    await once(sleeper, "spawn");
    writeFileSync(
      join(root, "systemctl"),
      `#!/bin/sh\nprintf 'LoadState=loaded\\nActiveState=active\\nSubState=running\\nMainPID=${sleeper.pid}\\nControlGroup=/system.slice/app.service\\n'\n`,
      { mode: 0o755 },
    );
    mkdirSync(join(root, "cgroup", "system.slice", "app.service"), { recursive: true });
    writeFileSync(
      join(root, "cgroup", "system.slice", "app.service", "cgroup.procs"),
      `${sleeper.pid}\n`,
    );
  });
  after(() => {
    sleeper.kill();
    rmSync(root, { recursive: true, force: true });
  });

  it("reads the cgroup's processes' maps: a process mapping nothing deleted is clean", async () => {
    const { findings, live, script } = await probe(false);
    assert.deepEqual([findings, live!.unknown], [[], []]);
    assert.deepEqual(live!.units.get("app.service")!.deletedLibraries, new Map());
    assert.equal(script.match(/systemctl show/g)!.length, 1);
  });

  it("as another user, says unknown: root's process maps are unreadable", async () => {
    const { findings, live } = await probe(true);
    assert.deepEqual(findings, []);
    assert.deepEqual(live!.unknown, [
      `app.service: cannot read /proc/${sleeper.pid}/maps (Permission denied): whether it maps a deleted library is unknown (another user's processes need become: sudo)`,
    ]);
  });
});
