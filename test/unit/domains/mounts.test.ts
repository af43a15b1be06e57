import assert from "node:assert/strict";
import { chmod } from "node:fs/promises";
import { describe, it } from "node:test";
import { mounts, MountsDeclared } from "../../../src/domains/mounts/index.js";
import { fstabCause, NOT_AT_BOOT } from "../../../src/domains/mounts/cause.js";
import {
  parseMountinfo,
  unescapeField,
  type MountsLive,
} from "../../../src/domains/mounts/parse.js";
import type { HostRecord } from "../../../src/domains/host-record.js";
import { ProbeParseError } from "../../../src/errors.js";
import { parseContext } from "../../../src/probe/script.js";
import { marked } from "../../support/probe-output.js";
import { scratchTrees } from "../../support/tree.js";
import { fixture, liveFrom } from "./fixtures.js";
import { NOBODY, runProbe } from "./live-probe.js";

// private-namespace.txt: the snapshot probe as nobody on a Debian 12 machine, in a private mount
// namespace with tmpfs mounts at /srv/data, "/srv/my data", /srv/cache (an enabled mount unit)
// and /srv/hand (by hand, source `by\hand`), its own fstab bind-mounted over /etc/fstab (the
// bind's source path renamed) and the machine's network-namespace mounts left out.
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

  it("reads what the next boot mounts: fstab lines (not swap, not noauto) and enabled mount units", () => {
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
        "/srv/cache": "tmpfs nosuid,nodev,noexec (/etc/systemd/system/srv-cache.mount)",
      },
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
      () => mounts.parse(marked("N", [["fstab", ""]]), parseContext("N")),
      ProbeParseError,
    );
  });

  const tree = scratchTrees();
  const hostFiles = async () => {
    const text = fixture("mounts", "private-namespace.txt");
    const part = (label: string) =>
      text.split(`QMfixture mark ${label}\n`)[1]!.split("\n\n")[0]! + "\n";
    const dir = await tree({
      "proc/self/mountinfo": part("mountinfo"),
      // The captured lines at their own numbers, after three comment lines.
      "etc/fstab": `#\n#\n#\n${part("fstab").replace(/^\d+:/gm, "")}`,
      "etc/systemd/system/srv-cache.mount":
        "[Mount]\nWhat=tmpfs\nWhere=/srv/cache\nType=tmpfs\nOptions=nosuid,nodev,noexec\n",
      "etc/systemd/system/local-fs.target.wants/srv-cache.mount": "",
      "etc/systemd/system/srv-off.mount": "[Mount]\nWhat=tmpfs\nWhere=/srv/off\n",
    });
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
    assert.doesNotMatch(run.stdout, /\/srv\/data|\/dev\/vda|srv-off/);
  });

  it("probes for real for a snapshot: every line, and the boot's units only where enabled", async () => {
    const dir = await hostFiles();
    const run = await runProbe<MountsLive>(mounts, undefined, { root: { dir } });
    assert.deepEqual(run.live, captured());
  });

  it("is unknown on a host without /proc/self/mountinfo", async () => {
    const dir = await tree({ "etc/fstab": "" });
    const run = await runProbe(mounts, declared([{ path: "/srv" }]), { root: { dir } });
    assert.equal(run.unknown, "no /proc/self/mountinfo: /proc is not mounted");
  });

  describe("cause", () => {
    const BOOT = 1_764_633_600_000;
    const record = (fstabAt: number): HostRecord => ({
      bootTime: BOOT,
      owned: new Map(),
      digest: new Map(),
      stat: new Map([["/etc/fstab", { mtime: fstabAt, owner: "root" }]]),
      packages: [],
      conffiles: [],
      apt: [],
    });
    const item = {
      key: "/srv/data:options",
      declared: ["rw", "nosuid"],
      live: ["rw", "noexec"],
      path: ["storage", "mounts", "/srv/data", "options"],
    };
    const latent = { after: "reboot" as const, becomes: ["rw", "nosuid"], because: "/etc/fstab:6" };

    it("a mount the boot would not make, fstab unchanged since boot: mounted by hand", () => {
      assert.deepEqual(fstabCause({ ...item, latent }, record(BOOT - 60_000), { node: "n" }), {
        kind: "runtime",
        evidence:
          "the live mount is not what /etc/fstab:6 mounts, and /etc/fstab has not changed since boot at 2025-12-02T00:00:00.000Z: mounted or remounted since, by hand or by a program",
      });
      // fstab changed since: its line may be newer than the mount.
      assert.equal(
        fstabCause({ ...item, latent }, record(BOOT + 60_000), { node: "n" }),
        undefined,
      );
    });

    it("a mount as fstab says, fstab changed since the last audit: that edit", () => {
      const same = { ...item, detail: "/etc/fstab:6 mounts the same at boot" };
      assert.deepEqual(
        fstabCause(same, record(BOOT + 120_000), { node: "n", since: BOOT + 60_000 }),
        {
          kind: "persisted",
          at: "2025-12-02T00:02:00Z",
          evidence: "/etc/fstab:6 mounts it so; /etc/fstab changed since this node's last audit",
          group: "persisted: n /etc/fstab",
        },
      );
      assert.equal(fstabCause(same, record(BOOT), { node: "n", since: BOOT + 60_000 }), undefined);
    });
  });
});
