import assert from "node:assert/strict";
import { chmod, mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { mounts, MountsDeclared } from "../../../src/domains/mounts/index.js";
import { mountCause, mountLatentCause, NOT_AT_BOOT } from "../../../src/domains/mounts/cause.js";
import {
  parseMountinfo,
  unescapeField,
  type MountsLive,
} from "../../../src/domains/mounts/parse.js";
import type { HostRecord } from "../../../src/domains/host-record.js";
import { latentTitle, type LatentItem } from "../../../src/domains/latent-words.js";
import { ProbeParseError } from "../../../src/errors.js";
import { parseContext } from "../../../src/probe/script.js";
import { marked } from "../../support/probe-output.js";
import { scratchTrees } from "../../support/tree.js";
import { fixture, liveFrom } from "./fixtures.js";
import { NOBODY, runProbe } from "./live-probe.js";

// private-namespace.txt: the snapshot probe as nobody on a Debian 12 machine, in a private mount
// namespace with tmpfs mounts at /srv/data, "/srv/my data", /srv/cache (a mount unit in
// /etc/systemd/system that local-fs.target wants) and /srv/hand (by hand, source `by\hand`), an
// ext4 on /dev/loop1 at /srv/disk, its own fstab bind-mounted over /etc/fstab (the bind's source
// path renamed; `/` by LABEL=, /srv/disk by the UUID of /dev/loop0), a private /dev with the
// /dev/disk/by-label and by-uuid links udev would make, dev-hugepages.mount masked, and the
// machine's network-namespace and sandbox mounts left out.
const captured = (): MountsLive => liveFrom(mounts, "private-namespace.txt");

const live = (mountinfo: string, fstab = "", units = ""): MountsLive =>
  mounts.parse(
    marked("N", [
      ["mountinfo", mountinfo],
      ["fstab", fstab],
      ["units", units],
    ]),
    parseContext("N"),
  );
const declared = (value: unknown) => MountsDeclared.parse(value);

describe("mounts", () => {
  it("reads mountinfo as the kernel writes it: octal escapes, the top mount of a stack, ro from either side", () => {
    const got = captured();
    assert.deepEqual(got.mounted.get("/srv/my data"), {
      source: "tmpfs",
      fstype: "tmpfs",
      options: ["rw", "nosuid", "relatime"],
      flags: { ro: false, nosuid: true, nodev: false, noexec: false },
    });
    assert.equal(got.mounted.get("/srv/hand")?.source, "by\\hand");
    assert.equal(got.mounted.get("/srv/data")?.options.includes("size=65536k"), true);
    const stacked = parseMountinfo(
      "40 1 0:40 / /srv rw - tmpfs a rw\n41 40 0:41 / /srv rw - tmpfs b ro\n",
    );
    assert.deepEqual(stacked.get("/srv")?.source, "b");
    assert.equal(stacked.get("/srv")?.flags.ro, true);
    assert.equal(unescapeField("/a\\040b\\134c\\303\\251"), "/a b\\cé");
  });

  it("reads what the next boot mounts: fstab lines (not swap, not noauto) and the mount units a target wants, from every unit folder", () => {
    const got = captured();
    assert.deepEqual(
      Object.fromEntries(
        [...got.boot].map(([path, b]) => [
          path,
          `${b.fstype} ${b.options.join(",")} (${b.because})`,
        ]),
      ),
      {
        "/": "ext4 rw,discard,errors=remount-ro (/etc/fstab:4)",
        "/boot": "ext2 defaults (/etc/fstab:5)",
        "/srv/data": "tmpfs nosuid,nodev,size=64m (/etc/fstab:6)",
        "/srv/my data": "tmpfs ro,nosuid (/etc/fstab:7)",
        "/proc": "proc defaults (/etc/fstab:10)",
        "/srv/disk": "ext4 nodev,nosuid (/etc/fstab:11)",
        // Where= of [Unit] is no mount point; srv-off.mount is wanted by nothing, and
        // dev-hugepages.mount is masked in /etc.
        "/srv/cache": "tmpfs nosuid,nodev,noexec (/etc/systemd/system/srv-cache.mount)",
        "/dev/mqueue": "mqueue nosuid,nodev,noexec (/usr/lib/systemd/system/dev-mqueue.mount)",
        "/sys/fs/fuse/connections":
          "fusectl nosuid,nodev,noexec (/usr/lib/systemd/system/sys-fs-fuse-connections.mount)",
        "/sys/kernel/config":
          "configfs nosuid,nodev,noexec (/usr/lib/systemd/system/sys-kernel-config.mount)",
        "/sys/kernel/debug":
          "debugfs nosuid,nodev,noexec (/usr/lib/systemd/system/sys-kernel-debug.mount)",
        "/sys/kernel/tracing":
          "tracefs nosuid,nodev,noexec (/usr/lib/systemd/system/sys-kernel-tracing.mount)",
      },
    );
    assert.deepEqual(
      [...got.boot]
        .filter(([, b]) => b.sameDevice !== undefined)
        .map(([p, b]) => [p, b.source, b.sameDevice]),
      [
        ["/", "LABEL=root", true],
        ["/srv/disk", 'UUID="7d1e0c52-93a4-4b8e-a0f1-5c6d7e8f9a0b"', false],
      ],
    );
  });

  it("compares declared mount points: drift per attribute, flags exactly, other options by presence", () => {
    const findings = mounts.compare(
      declared([
        {
          path: "/srv/data",
          source: "tmpfs",
          fstype: "tmpfs",
          options: ["nosuid", "nodev", "size=65536k"],
        },
        { path: "/srv/cache", fstype: "ext4", options: ["nosuid", "noexec"] },
        { path: "/srv/gone", fstype: "tmpfs" },
      ]),
      captured(),
    );
    assert.deepEqual(findings, [
      {
        key: "/srv/cache:fstype",
        declared: "ext4",
        live: "tmpfs",
        path: ["storage", "mounts", "/srv/cache", "fstype"],
        detail: "/etc/systemd/system/srv-cache.mount mounts the same at boot",
      },
      {
        key: "/srv/cache:options",
        declared: ["rw", "nosuid", "noexec"],
        live: ["rw", "nosuid", "nodev", "noexec"],
        path: ["storage", "mounts", "/srv/cache", "options"],
        detail: "/etc/systemd/system/srv-cache.mount mounts the same at boot",
      },
      {
        key: "/srv/gone",
        declared: "mounted",
        live: null,
        path: ["storage", "mounts", "/srv/gone"],
      },
    ]);
  });

  it("is latent where the next boot mounts otherwise than now, both ways", () => {
    const findings = mounts.compare(
      declared([
        { path: "/srv/my data", options: ["nosuid"] },
        { path: "/srv/hand", options: ["noexec"] },
        { path: "/boot" },
      ]),
      captured(),
    );
    assert.deepEqual(findings, [
      {
        key: "/srv/my data:options",
        declared: ["rw", "nosuid"],
        live: ["rw", "nosuid"],
        path: ["storage", "mounts", "/srv/my data", "options"],
        latent: { after: "reboot", becomes: ["ro", "nosuid"], because: "/etc/fstab:7" },
      },
      {
        key: "/srv/hand",
        declared: "mounted",
        live: "mounted",
        path: ["storage", "mounts", "/srv/hand"],
        latent: { after: "reboot", becomes: null, because: NOT_AT_BOOT },
      },
      {
        key: "/boot",
        declared: "mounted",
        live: null,
        path: ["storage", "mounts", "/boot"],
        latent: { after: "reboot", becomes: "mounted", because: "/etc/fstab:5" },
      },
    ]);
    // A title says what the next boot mounts, as the kernel's and sysctl's say what it runs.
    assert.deepEqual(
      findings.slice(0, 2).map((f) => latentTitle(f as LatentItem)),
      ["reboot pending, becomes ro,nosuid", "reboot pending"],
    );
  });

  it("compares a source fstab names by UUID= or LABEL= by the device its link leads to", () => {
    const findings = mounts.compare(
      declared([
        { path: "/", source: "/dev/vda", fstype: "ext4" },
        { path: "/srv/disk", source: "/dev/loop1", fstype: "ext4" },
      ]),
      captured(),
    );
    assert.deepEqual(findings, [
      {
        key: "/srv/disk:source",
        declared: "/dev/loop1",
        live: "/dev/loop1",
        path: ["storage", "mounts", "/srv/disk", "source"],
        latent: {
          after: "reboot",
          becomes: 'UUID="7d1e0c52-93a4-4b8e-a0f1-5c6d7e8f9a0b"',
          because: "/etc/fstab:11",
        },
      },
    ]);
    // A source fstab names as mountinfo does is compared as it is.
    const byHand = live(
      "30 1 0:30 / /srv/x rw - tmpfs by\\040hand rw\n",
      "2:tmpfs /srv/x tmpfs defaults\n",
    );
    assert.deepEqual(
      mounts.compare(declared([{ path: "/srv/x", source: "by hand" }]), byHand)[0]?.latent,
      { after: "reboot", becomes: "tmpfs", because: "/etc/fstab:2" },
    );
    // A host that cannot tell (no link folder, a source that is no device): not compared.
    const unknown = live(
      "27 1 254:0 / / rw - ext4 /dev/root rw\n",
      "4:LABEL=root / ext4 defaults\n",
    );
    assert.deepEqual(mounts.compare(declared([{ path: "/", source: "/dev/root" }]), unknown), []);
  });

  it("never reads an automount point past mountinfo, and says so", () => {
    const got = live(
      "50 1 0:50 / /net rw,relatime - autofs systemd-1 rw,fd=40,pgrp=1,timeout=0,minproto=5,maxproto=5,direct\n",
      "1:server:/export /net nfs x-systemd.automount 0 0\n",
    );
    const [finding] = mounts.compare(declared([{ path: "/net", source: "server:/export" }]), got);
    assert.equal(finding?.live, "systemd-1");
    assert.match(finding?.detail ?? "", /automount point/);
  });

  it("snapshots the persistent mounts at their live state, not pseudo file systems or hand mounts", () => {
    const snapshot = mounts.snapshot(captured());
    assert.deepEqual(snapshot, [
      { path: "/", source: "/dev/vda", fstype: "ext4", options: ["rw"] },
      { path: "/srv/data", source: "tmpfs", fstype: "tmpfs", options: ["rw", "nosuid", "nodev"] },
      { path: "/srv/my data", source: "tmpfs", fstype: "tmpfs", options: ["rw", "nosuid"] },
      {
        path: "/srv/cache",
        source: "tmpfs",
        fstype: "tmpfs",
        options: ["rw", "nosuid", "nodev", "noexec"],
      },
      {
        path: "/srv/disk",
        source: "/dev/loop1",
        fstype: "ext4",
        options: ["rw", "nosuid", "nodev"],
      },
    ]);
    // Clean but for what the next boot changes.
    const findings = mounts.compare(declared(snapshot), captured());
    assert.deepEqual(
      findings.filter((f) => JSON.stringify(f.declared) !== JSON.stringify(f.live)),
      [],
    );
  });

  it("accepts each finding so that the live state audits clean", () => {
    let spec = declared([
      { path: "/srv/data", source: "other", fstype: "ext4", options: ["ro", "size=1k"] },
      { path: "/srv/gone", fstype: "tmpfs" },
    ]);
    for (const finding of mounts.compare(spec, captured())) spec = mounts.accept!(spec, finding)!;
    assert.deepEqual(spec, [
      { path: "/srv/data", source: "tmpfs", fstype: "tmpfs", options: ["rw", "nosuid", "nodev"] },
    ]);
    assert.deepEqual(mounts.compare(spec, captured()), []);
  });

  it("refuses declarations it cannot compare, saying what to write", () => {
    for (const [value, message] of [
      [[{ path: "srv/data" }], /absolute path/],
      [[{ path: "/srv/data/" }], /without a trailing slash/],
      [[{ path: "/srv", options: ["nosuid,nodev"] }], /one mount option/],
      [[{ path: "/srv", fstype: "ext4 ro" }], /file system type/],
      [[{ path: "/srv" }, { path: "/srv" }], /declared twice/],
    ] as const)
      assert.throws(() => MountsDeclared.parse(value), message);
  });

  it("refuses output the probe cannot have printed", () => {
    assert.throws(() => live("not mountinfo\n"), ProbeParseError);
    assert.throws(
      () =>
        mounts.parse(
          marked("N", [
            ["mountinfo", ""],
            ["dropins", "/etc/systemd/system/srv.mount:Options=ro\n"],
          ]),
          parseContext("N"),
        ),
      /not a drop-in line/,
    );
    assert.throws(
      () => mounts.parse(marked("N", [["fstab", ""]]), parseContext("N")),
      ProbeParseError,
    );
  });

  const tree = scratchTrees();
  // The captured host as a tree: its files, links and device nodes (regular files here: `-ef` compares
  // inodes), the mountinfo's device sources inside the tree.
  const hostFiles = async () => {
    const text = fixture("mounts", "private-namespace.txt");
    const part = (label: string) =>
      text.split(`QMfixture mark ${label}\n`)[1]!.split("\n\n")[0]! + "\n";
    const units = new Map<string, string[]>();
    for (const line of part("units").split("\n").filter(Boolean)) {
      const [file, rest] = [
        line.slice(0, line.indexOf(".mount:") + 6),
        line.slice(line.indexOf(".mount:") + 7),
      ];
      units.set(file, [...(units.get(file) ?? []), ...(rest ? [rest] : [])]);
    }
    const dir = await tree({
      // The captured lines at their own numbers, after three comment lines.
      "etc/fstab": `#\n#\n#\n${part("fstab").replace(/^\d+:/gm, "")}`,
      ...Object.fromEntries(
        [...units].map(([file, lines]) => [file.slice(1), `${lines.join("\n")}\n`]),
      ),
      "etc/systemd/system/srv-off.mount": "[Mount]\nWhat=tmpfs\nWhere=/srv/off\n",
      "etc/systemd/system/odd\nname.mount": "[Mount]\nWhat=tmpfs\nWhere=/srv/odd\n",
      "usr/lib/systemd/system/dev-hugepages.mount":
        "[Mount]\nWhat=hugetlbfs\nWhere=/dev/hugepages\n",
      ...Object.fromEntries(["null", "vda", "loop0", "loop1"].map((node) => [`dev/${node}`, ""])),
    });
    await mkdir(path.join(dir, "proc/self"), { recursive: true });
    await writeFile(
      path.join(dir, "proc/self/mountinfo"),
      part("mountinfo").replaceAll(/ (\/dev\/(?:vda|loop1)) /g, ` ${dir}$1 `),
    );
    const links: [string, string][] = [
      ["etc/systemd/system/local-fs.target.wants/srv-cache.mount", "../srv-cache.mount"],
      ["etc/systemd/system/dev-hugepages.mount", `${dir}/dev/null`],
      // A name a line cannot hold: never sent.
      ["etc/systemd/system/multi-user.target.wants/odd\nname.mount", "../odd\nname.mount"],
      ["dev/disk/by-label/root", "../../vda"],
      ["dev/disk/by-uuid/7d1e0c52-93a4-4b8e-a0f1-5c6d7e8f9a0b", "../../loop0"],
      ...[
        "dev-hugepages",
        "dev-mqueue",
        "sys-fs-fuse-connections",
        "sys-kernel-config",
        "sys-kernel-debug",
        "sys-kernel-tracing",
      ].map((unit): [string, string] => [
        `usr/lib/systemd/system/sysinit.target.wants/${unit}.mount`,
        `../${unit}.mount`,
      ]),
    ];
    for (const [link, target] of links) {
      await mkdir(path.dirname(path.join(dir, link)), { recursive: true });
      await symlink(target, path.join(dir, link));
    }
    // Readable by nobody, as a host's /etc and /proc are.
    await chmod(dir, 0o755);
    return dir;
  };

  it("probes for real, as nobody: only the declared mount points' lines leave the host", async () => {
    const dir = await hostFiles();
    const run = await runProbe<MountsLive>(
      mounts,
      declared([{ path: "/srv/my data", options: ["nosuid"] }, { path: "/srv/cache" }]),
      { root: { dir }, command: NOBODY },
    );
    assert.deepEqual([...run.live!.mounted.keys()], ["/srv/my data", "/srv/cache"]);
    assert.deepEqual([...run.live!.boot.keys()], ["/srv/my data", "/srv/cache"]);
    assert.doesNotMatch(run.stdout, /\/srv\/data|\/dev\/vda|srv-off|sys-kernel/);
  });

  it("probes for real for a snapshot: every line, and the boot's units only where enabled", async () => {
    const dir = await hostFiles();
    const run = await runProbe<MountsLive>(mounts, undefined, { root: { dir } });
    assert.deepEqual(run.live, captured());
  });

  it("applies the units' drop-ins in every unit folder, fstab's lines' too, as systemd does", async () => {
    const UNITS = "etc/systemd/system";
    const VENDOR = "usr/lib/systemd/system";
    const dir = await tree({
      "etc/fstab": "tmpfs /srv/data tmpfs nosuid,nodev 0 0\ntmpfs /srv/other tmpfs nosuid 0 0\n",
      "proc/self/mountinfo": [
        "30 1 0:30 / /srv/data rw,nosuid,nodev,relatime - tmpfs tmpfs rw",
        "31 1 0:31 / /srv/cache rw,nosuid,relatime - tmpfs tmpfs rw",
        "32 1 0:32 / /srv/other rw,nosuid,relatime - tmpfs tmpfs rw",
        "",
      ].join("\n"),
      // By name across the folders: /etc's 10-options.conf hides the vendor's.
      [`${UNITS}/srv-data.mount.d/10-options.conf`]:
        "[Unit]\nOptions=ro\n[Mount]\nOptions=ro,nosuid\n",
      [`${VENDOR}/srv-data.mount.d/10-options.conf`]: "[Mount]\nOptions=noexec\n",
      [`${VENDOR}/srv-data.mount.d/20-what.conf`]: "[Mount]\nWhat=other\nWhat = elsewhere \n",
      // Masked in /etc: the vendor's type is not applied.
      [`${VENDOR}/srv-data.mount.d/30-type.conf`]: "[Mount]\nType=ext4\n",
      // A unit file's drop-in; an empty Options= resets them.
      [`${UNITS}/srv-cache.mount`]:
        "[Mount]\nWhat=tmpfs\nWhere=/srv/cache\nType=tmpfs\nOptions=nosuid\n",
      [`${UNITS}/srv-cache.mount.d/override.conf`]: "[Mount]\nOptions=\n",
      // Not declared: never sent.
      [`${UNITS}/srv-other.mount.d/10-options.conf`]: "[Mount]\nOptions=noexec\n",
    });
    await symlink("/dev/null", path.join(dir, UNITS, "srv-data.mount.d/30-type.conf"));
    await mkdir(path.join(dir, UNITS, "local-fs.target.wants"));
    await symlink(
      "../srv-cache.mount",
      path.join(dir, UNITS, "local-fs.target.wants/srv-cache.mount"),
    );
    await chmod(dir, 0o755);
    const run = await runProbe<MountsLive>(
      mounts,
      declared([
        { path: "/srv/data", source: "tmpfs", options: ["nosuid", "nodev"] },
        { path: "/srv/cache", options: ["nosuid"] },
      ]),
      { root: { dir }, command: NOBODY },
    );
    assert.doesNotMatch(run.stdout, /srv-other/);
    assert.deepEqual(run.live!.boot.get("/srv/data"), {
      source: "elsewhere",
      fstype: "tmpfs",
      options: ["ro", "nosuid"],
      because: "/etc/fstab:1",
      setBy: {
        options: `/${UNITS}/srv-data.mount.d/10-options.conf`,
        source: `/${VENDOR}/srv-data.mount.d/20-what.conf`,
      },
    });
    assert.deepEqual(run.live!.boot.get("/srv/cache")?.options, []);
    // Each latent item names the file that says what the boot mounts.
    assert.deepEqual(
      mounts
        .compare(
          declared([
            { path: "/srv/data", source: "tmpfs", options: ["nosuid", "nodev"] },
            { path: "/srv/cache", options: ["nosuid"] },
          ]),
          run.live!,
        )
        .map((f) => [f.key, f.latent?.becomes, f.latent?.because]),
      [
        ["/srv/data:source", "elsewhere", `/${VENDOR}/srv-data.mount.d/20-what.conf`],
        ["/srv/data:options", ["ro", "nosuid"], `/${UNITS}/srv-data.mount.d/10-options.conf`],
        ["/srv/cache:options", ["rw"], `/${UNITS}/srv-cache.mount.d/override.conf`],
      ],
    );
  });

  it("is unknown on a host without /proc/self/mountinfo", async () => {
    const dir = await tree({ "etc/fstab": "" });
    const run = await runProbe(mounts, declared([{ path: "/srv" }]), { root: { dir } });
    assert.equal(run.unknown, "no /proc/self/mountinfo: /proc is not mounted");
  });

  describe("cause", () => {
    const BOOT = 1_764_633_600_000;
    const UNIT = "/usr/lib/systemd/system/tmp.mount";
    const record = (fstabAt: number, more: Partial<HostRecord> = {}): HostRecord => ({
      bootTime: BOOT,
      owned: new Map(),
      digest: new Map(),
      stat: new Map([
        ["/etc/fstab", { mtime: fstabAt, owner: "root" }],
        [UNIT, { mtime: BOOT - 9_000_000, owner: "root" }],
      ]),
      packages: [],
      conffiles: [],
      apt: [],
      ...more,
    });
    const item = {
      key: "/srv/data:options",
      declared: ["rw", "nosuid"],
      live: ["rw", "noexec"],
      path: ["storage", "mounts", "/srv/data", "options"],
    };
    const latent = { after: "reboot" as const, becomes: ["rw", "nosuid"], because: "/etc/fstab:6" };

    it("a mount the boot would not make, its file unchanged since boot: mounted by hand", () => {
      assert.deepEqual(mountCause({ ...item, latent }, record(BOOT - 60_000), { node: "n" }), {
        kind: "runtime",
        evidence:
          "the live mount is not what /etc/fstab:6 mounts, and /etc/fstab has not changed since boot at 2025-12-02T00:00:00.000Z: mounted or remounted since, by hand or by a program",
      });
      // fstab changed since: its line may be newer than the mount.
      assert.equal(
        mountCause({ ...item, latent }, record(BOOT + 60_000), { node: "n" }),
        undefined,
      );
      // A unit's own file decides, fstab's mtime aside.
      assert.match(
        mountCause({ ...item, latent: { ...latent, because: UNIT } }, record(BOOT + 60_000), {
          node: "n",
        })?.evidence ?? "",
        /^the live mount is not what \/usr\/lib\/systemd\/system\/tmp\.mount mounts, and \/usr\/lib\/systemd\/system\/tmp\.mount has not changed since boot/,
      );
      // Nothing mounts it at boot, fstab unchanged: by hand as well.
      assert.equal(
        mountCause({ ...item, detail: NOT_AT_BOOT }, record(BOOT - 60_000), { node: "n" })?.kind,
        "runtime",
      );
    });

    it("a mount as fstab says, fstab changed since the last audit: that edit, naming the file", () => {
      const same = { ...item, detail: "/etc/fstab:6 mounts the same at boot" };
      assert.deepEqual(
        mountCause(same, record(BOOT + 120_000), { node: "n", since: BOOT + 60_000 }),
        {
          kind: "file-edit",
          at: "2025-12-02T00:02:00Z",
          evidence:
            "/etc/fstab modified at 2025-12-02T00:02:00Z, owner root, since this node's last audit: /etc/fstab:6 mounts it so",
          group: "file-edit: n /etc/fstab",
        },
      );
      assert.equal(mountCause(same, record(BOOT), { node: "n", since: BOOT + 60_000 }), undefined);
    });

    it("a drop-in saying what the boot mounts is the file its cause names", () => {
      const DROPIN = "/etc/systemd/system/srv-data.mount.d/10-options.conf";
      const withDropin = (at: number) => {
        const base = record(BOOT - 60_000);
        base.stat.set(DROPIN, { mtime: at, owner: "alice" });
        return base;
      };
      const because = { ...latent, because: DROPIN };
      assert.match(
        mountCause({ ...item, latent: because }, withDropin(BOOT - 60_000), { node: "n" })
          ?.evidence ?? "",
        /^the live mount is not what \/etc\/systemd\/system\/srv-data\.mount\.d\/10-options\.conf mounts, and \/etc\/systemd\/system\/srv-data\.mount\.d\/10-options\.conf has not changed since boot/,
      );
      // Written since the boot: not a hand mount, whatever fstab's mtime.
      assert.equal(
        mountCause({ ...item, latent: because }, withDropin(BOOT + 60_000), { node: "n" }),
        undefined,
      );
      // Written since the last audit, and the live mount is as it says: that edit.
      assert.deepEqual(
        mountCause(
          { ...item, detail: `${DROPIN} mounts the same at boot` },
          withDropin(BOOT + 120_000),
          { node: "n", since: BOOT + 60_000 },
        ),
        {
          kind: "file-edit",
          at: "2025-12-02T00:02:00Z",
          evidence: `${DROPIN} modified at 2025-12-02T00:02:00Z, owner alice, since this node's last audit: ${DROPIN} mounts it so`,
          group: `file-edit: n ${DROPIN}`,
        },
      );
      assert.equal(
        mountLatentCause({ ...item, latent: because }, withDropin(BOOT + 120_000), {
          node: "n",
          since: BOOT + 60_000,
        })?.evidence,
        `${DROPIN} modified at 2025-12-02T00:02:00Z, owner alice, since this node's last audit: ${DROPIN} mounts it at the next boot`,
      );
    });

    it("a unit a package configured since the last audit ships (under either side of a merged /usr): that package, unless edited after", () => {
      const STEP = {
        name: "qm-mounts",
        version: "1.2",
        start: BOOT + 100_000,
        end: BOOT + 102_000,
      };
      const shipped = (unitAt: number) =>
        record(BOOT - 60_000, {
          // dpkg's list names the unit under /lib; the probe found it under /usr/lib.
          shippedBy: new Map([["/lib/systemd/system/tmp.mount", "qm-mounts"]]),
          steps: [STEP],
          stat: new Map([
            ["/etc/fstab", { mtime: BOOT - 60_000, owner: "root" }],
            [UNIT, { mtime: unitAt, owner: "root" }],
          ]),
          apt: [
            {
              start: BOOT + 99_000,
              end: BOOT + 103_000,
              commandline: "apt-get install qm-mounts",
              requestedBy: "alice (1000)",
            },
          ],
        });
      const ctx = { node: "n", since: BOOT + 60_000 };
      const unitLatent = { ...item, latent: { ...latent, because: UNIT } };
      // dpkg keeps the package's own mtime, from before the install.
      assert.deepEqual(mountLatentCause(unitLatent, shipped(BOOT - 9_000_000), ctx), {
        kind: "package",
        at: "2025-12-02T00:01:40Z",
        by: "apt-get (alice)",
        evidence: `${UNIT} shipped by qm-mounts 1.2, configured at 2025-12-02T00:01:40Z since this node's last audit: ${UNIT} mounts it at the next boot`,
        group: "package: qm-mounts 1.2 configured",
      });
      assert.equal(
        mountCause(
          { ...item, detail: `${UNIT} mounts the same at boot` },
          shipped(BOOT - 9_000_000),
          ctx,
        )?.kind,
        "package",
      );
      // The unit came after the boot: the mount that differs from it need not be a hand mount.
      assert.equal(mountCause(unitLatent, shipped(BOOT - 9_000_000), ctx), undefined);
      // Edited after the package put it there: that edit.
      assert.equal(mountLatentCause(unitLatent, shipped(BOOT + 200_000), ctx)?.kind, "file-edit");
      // No configure step since the last audit (or none known): no package.
      assert.equal(
        mountLatentCause(unitLatent, { ...shipped(BOOT - 9_000_000), steps: [] }, ctx),
        undefined,
      );
    });

    it("asks for fstab's mtime, each declared point's unit's and the drop-ins' in every unit folder, and which package configured since shipped the unit", () => {
      const UNIT_DIRS = [
        "/etc/systemd/system",
        "/usr/local/lib/systemd/system",
        "/usr/lib/systemd/system",
        "/lib/systemd/system",
      ];
      assert.deepEqual(mounts.records!(declared([{ path: "/srv/my data" }])), {
        shippedSince: UNIT_DIRS.map((dir) => `${dir}/srv-my\\x20data.mount`),
        stat: [
          { under: "/etc", entries: ["fstab"] },
          ...UNIT_DIRS.map((under) => ({ under, entries: ["srv-my\\x20data.mount"] })),
          ...UNIT_DIRS.map((dir) => ({ under: `${dir}/*.mount.d/*.conf` })),
        ],
      });
    });
  });
});
