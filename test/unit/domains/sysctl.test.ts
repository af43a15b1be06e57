import assert from "node:assert/strict";
import { execSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, symlink } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { contentTimes, parseStated } from "../../../src/domains/file-times.js";
import { parseNameValue } from "../../../src/domains/list-form.js";
import { sysctl } from "../../../src/domains/sysctl/index.js";
import {
  parsePersistedSysctl,
  parseRuntimeSysctl,
  type SysctlLive,
} from "../../../src/domains/sysctl/parse.js";
import { scratchTrees } from "../../support/tree.js";
import { runProbe } from "./live-probe.js";
import { sample } from "../../support/samples/sysctl.js";

describe("sysctl", () => {
  it("reads runtime values from grep -H output, joining vector values with spaces", () => {
    const live = parseRuntimeSysctl(
      "/proc/sys/net/core/somaxconn:4096\n/proc/sys/net/ipv4/ip_local_port_range:32768\t60999\n",
    );
    assert.deepEqual(
      [...live],
      [
        ["net.core.somaxconn", "4096"],
        ["net.ipv4.ip_local_port_range", "32768 60999"],
      ],
    );
  });

  it("applies persisted files like sysctl --system: /etc masks same-named files, name order, sysctl.conf last", () => {
    const persisted = parsePersistedSysctl(
      [
        "/usr/lib/sysctl.d/50-default.conf:1:net.core.somaxconn = 128",
        "/etc/sysctl.d/50-default.conf:2:net.core.somaxconn = 1024",
        "/usr/lib/sysctl.d/99-late.conf:1:vm.swappiness=30",
        "/etc/sysctl.d/10-early.conf:1:# a comment",
        "/etc/sysctl.d/10-early.conf:2:vm.swappiness = 10",
        "/etc/sysctl.conf:4:-fs.file-max = 1000",
        "/etc/sysctl.conf:5:net/ipv4/ip_forward = 1",
        "/etc/sysctl.conf:6:net.ipv4.conf.*.rp_filter = 2",
      ].join("\n"),
    );
    assert.deepEqual(
      Object.fromEntries([...persisted].map(([k, v]) => [k, `${v.value} (${v.file}:${v.line})`])),
      {
        "net.core.somaxconn": "1024 (/etc/sysctl.d/50-default.conf:2)",
        "vm.swappiness": "30 (/usr/lib/sysctl.d/99-late.conf:1)",
        "fs.file-max": "1000 (/etc/sysctl.conf:4)",
        "net.ipv4.ip_forward": "1 (/etc/sysctl.conf:5)",
      },
    );
  });

  const BOOT = 1_764_633_600; // 2025-12-02T00:00:00Z
  const TUNING = "/etc/sysctl.d/99-tuning.conf";
  const live = (
    runtime: Record<string, string>,
    persisted: Record<string, string> = {},
    changed = BOOT - 60,
  ): SysctlLive => ({
    runtime: new Map(Object.entries(runtime)),
    persisted: new Map(
      Object.entries(persisted).map(([k, v]) => [k, { value: v, file: TUNING, line: 3 }]),
    ),
    changed: new Map([[TUNING, changed]]),
    bootedAt: BOOT,
  });

  const NOT_PERSISTED =
    "no sysctl.conf or sysctl.d file sets it (the live value is the kernel default or a runtime change): " +
    "persist the declared value in sysctl.d to keep it across reboots";

  it("reports a runtime value that differs: a runtime cause, and the value it reverts to at reboot", () => {
    const findings = sysctl.compare(
      { "net.core.somaxconn": "4096", "vm.swappiness": "10", "net.ipv4.tcp_syncookies": "1" },
      live(
        { "net.core.somaxconn": "1024", "vm.swappiness": "60", "net.ipv4.tcp_syncookies": "1" },
        { "net.core.somaxconn": "4096" },
      ),
    );
    assert.deepEqual(
      findings.map((f) => [f.key, f.declared, f.live, f.detail, f.latent, f.cause?.kind]),
      [
        [
          "net.core.somaxconn",
          "4096",
          "1024",
          undefined,
          { after: "reboot", becomes: "4096", because: `${TUNING}:3` },
          "runtime",
        ],
        ["vm.swappiness", "10", "60", NOT_PERSISTED, undefined, undefined],
      ],
    );
    assert.equal(findings[0]!.cause!.group, undefined, "one node's sysctl -w groups as today");
    assert.deepEqual(findings[0]!.path, ["system", "sysctl_parameters", "net.core.somaxconn"]);
  });

  it("says a value reverts at reboot only when a file persists another one: never for a value not changed at runtime", () => {
    const findings = sysctl.compare(
      { "vm.swappiness": "10", "net.core.somaxconn": "4096" },
      live(
        { "vm.swappiness": "60", "net.core.somaxconn": "1024" },
        { "net.core.somaxconn": "1024" },
      ),
    );
    assert.deepEqual(
      findings.map((f) => [f.key, f.detail]),
      [
        ["vm.swappiness", NOT_PERSISTED],
        // Live is what /etc/sysctl.d sets: the drift survives a reboot, so there is no hint.
        ["net.core.somaxconn", undefined],
      ],
    );
    assert.ok(findings.every((f) => !f.latent));
    // The persisted file explains the live value: its line, when it changed, and the file as group.
    assert.deepEqual(findings[1]!.cause, {
      kind: "persisted",
      at: "2025-12-01T23:59:00.000Z",
      evidence: `${TUNING}:3 sets 1024`,
      group: TUNING,
    });
  });

  it("a live value equal to the declared one is latent drift when the boot sets another", () => {
    const findings = sysctl.compare(
      { "net.core.somaxconn": "4096", "vm.swappiness": "10" },
      live(
        { "net.core.somaxconn": "4096", "vm.swappiness": "10" },
        { "net.core.somaxconn": "1024", "vm.swappiness": "10" },
      ),
    );
    assert.deepEqual(findings, [
      {
        key: "net.core.somaxconn",
        declared: "4096",
        live: "4096",
        path: ["system", "sysctl_parameters", "net.core.somaxconn"],
        latent: { after: "reboot", becomes: "1024", because: `${TUNING}:3` },
      },
    ]);
  });

  it("reads a link's content time from its target's line, lexically against the link's folder; unknown where no line gives it", () => {
    const stated = (lines: string[]) => contentTimes(parseStated(`${lines.join("\n")}\n`));
    const debian = stated([
      "100 root f /etc/sysctl.conf",
      "50 root l /etc/sysctl.d/99-sysctl.conf",
      "-> ../sysctl.conf",
      "60 root l /etc/sysctl.d/70-abs.conf",
      "-> /etc/./sysctl.conf",
      "70 root l /etc/sysctl.d/71-chain.conf",
      "-> 70-abs.conf",
      "80 root f /etc/sysctl.d/80 space.conf",
    ]);
    assert.deepEqual(Object.fromEntries(debian.changed), {
      "/etc/sysctl.conf": 100,
      "/etc/sysctl.d/99-sysctl.conf": 100,
      "/etc/sysctl.d/70-abs.conf": 100,
      "/etc/sysctl.d/71-chain.conf": 100,
      "/etc/sysctl.d/80 space.conf": 80,
    });
    assert.equal(debian.untimed, undefined);
    // A target no line gives (outside the lists), a loop, a name the host could not send.
    for (const lines of [
      ["100 root f /etc/sysctl.conf", "50 root l /etc/sysctl.d/72-out.conf", "-> /opt/app.conf"],
      ["1 root l /etc/sysctl.d/a.conf", "-> b.conf", "1 root l /etc/sysctl.d/b.conf", "-> a.conf"],
      ["100 root f /etc/sysctl.conf", "?"],
      ["100 root l /etc/sysctl.conf"],
    ]) {
      const times = stated(lines);
      assert.equal(times.untimed, true, lines.join(" | "));
      assert.equal(times.changed.get("/etc/sysctl.conf") ?? 100, 100);
    }
  });

  it("claims no runtime write where a persisted file's time is unknown", () => {
    const declared = { "net.core.somaxconn": "4096" };
    const timed = live({ "net.core.somaxconn": "1024" }, { "net.core.somaxconn": "2048" });
    assert.equal(sysctl.compare(declared, timed)[0]!.cause?.kind, "runtime");
    assert.equal(sysctl.compare(declared, { ...timed, untimed: true })[0]!.cause, undefined);
    const unset = { ...live({ "net.core.somaxconn": "1024" }), auditedAt: BOOT + 3600 };
    assert.equal(sysctl.compare(declared, unset)[0]!.cause?.kind, "runtime");
    assert.equal(sysctl.compare(declared, { ...unset, untimed: true })[0]!.cause, undefined);
  });

  it("never names a runtime write when a persisted file changed since boot: that is no proof", () => {
    const [finding] = sysctl.compare(
      { "net.core.somaxconn": "4096" },
      live({ "net.core.somaxconn": "1024" }, { "net.core.somaxconn": "2048" }, BOOT + 60),
    );
    assert.equal(finding!.cause, undefined);
    assert.equal(finding!.latent?.becomes, "2048");
  });

  it("a file changed since boot but not since the node's last audit leaves a sysctl -w a runtime write", () => {
    const changed = {
      ...live({ "net.core.somaxconn": "1024" }, { "net.core.somaxconn": "2048" }, BOOT + 60),
    };
    const [finding] = sysctl.compare(
      { "net.core.somaxconn": "4096" },
      { ...changed, auditedAt: BOOT + 3600 },
    );
    assert.equal(finding!.cause?.kind, "runtime");
    assert.match(
      finding!.cause.evidence,
      /none changed since this node's last audit at 2025-12-02T01:00:00(\.000)?Z: a runtime write/,
    );
    // Changed since that audit too: no guess.
    const [later] = sysctl.compare(
      { "net.core.somaxconn": "4096" },
      { ...changed, auditedAt: BOOT + 30 },
    );
    assert.equal(later!.cause, undefined);
  });

  it("a key no file sets reads runtime only when neither a boot nor a file's change happened since the node's last audit", () => {
    const declared = { "net.core.somaxconn": "4096" };
    // A file changed after the boot, before the last audit: configuration management's push.
    const base = live({ "net.core.somaxconn": "2048" }, {}, BOOT + 60);
    const [finding] = sysctl.compare(declared, { ...base, auditedAt: BOOT + 3600 });
    assert.equal(finding!.cause?.kind, "runtime");
    assert.match(
      finding!.cause.evidence,
      /^live 2048 is set by no persisted file and neither a boot nor a persisted file's change happened since this node's last audit at 2025-12-02T01:00:00(\.000)?Z: a runtime write such as sysctl -w$/,
    );
    assert.equal(finding!.detail, NOT_PERSISTED);
    // No last audit: the live value may be the kernel's default.
    assert.equal(sysctl.compare(declared, base)[0]!.cause, undefined);
    // Booted since that audit: the kernel's default again.
    const booted = { ...base, auditedAt: BOOT - 3600 };
    assert.equal(sysctl.compare(declared, booted)[0]!.cause, undefined);
    // A file changed since that audit: it may hold the value applied since.
    const changed = { ...base, auditedAt: BOOT + 30 };
    assert.equal(sysctl.compare(declared, changed)[0]!.cause, undefined);
  });

  it("a key the kernel does not have is drift with live null", () => {
    const [finding] = sysctl.compare({ "net.ipv4.tcp_bogus": "1" }, live({}));
    assert.deepEqual(
      [finding!.live, finding!.detail],
      [null, "/proc/sys/net/ipv4/tcp_bogus does not exist on this host"],
    );
  });

  it("declared numbers and strings compare as the kernel prints them", () => {
    const declared = sysctl.schema.parse({
      "net.core.somaxconn": 4096,
      "net.ipv4.ip_local_port_range": "1024   65000",
    });
    assert.deepEqual(
      sysctl.compare(
        declared,
        live({ "net.core.somaxconn": "4096", "net.ipv4.ip_local_port_range": "1024 65000" }),
      ),
      [],
    );
  });

  it("a snapshot declares the persisted keys at their runtime values, and audits clean", () => {
    const state = live(
      { "vm.swappiness": "60", "net.core.somaxconn": "4096" },
      { "vm.swappiness": "10" },
    );
    const declared = sysctl.snapshot(state)!;
    assert.deepEqual(declared, { "vm.swappiness": "60" });
    // Clean now; the boot's 10 is latent, which snapshot writes beside the value it declares.
    assert.deepEqual(
      sysctl.compare(declared, state).map((f) => [f.declared === f.live, f.latent?.becomes]),
      [[true, "10"]],
    );
  });

  it("the list form parses `name = value` items", () => {
    assert.ok(sysctl.listForm);
    assert.deepEqual(parseNameValue("net.ipv4.tcp_syncookies = 1"), [
      "net.ipv4.tcp_syncookies",
      "1",
    ]);
    assert.equal(parseNameValue("net.ipv4.tcp_syncookies 1"), undefined);
  });
});

describe("sysctl: probe of captured sysctl files", () => {
  const trees = scratchTrees();
  // The persisted files are the tree's; runtime values and the boot time this machine's own /proc.
  const PATHS = sample.reads.filter((read) => !read.startsWith("/proc/"));
  const FILES = {
    "etc/sysctl.conf": [
      "# /etc/sysctl.conf - Configuration file for setting system variables",
      "#vm.swappiness = 1",
      "; vm.swappiness = 2",
      "vm.swappiness=10",
      " - net/ipv4/ip_forward = 1",
      "vm.swappiness_extra = 3",
      "kernel.unrelated = 5",
      "net.ipv4.conf.*.rp_filter = 2",
      "",
    ].join("\n"),
    // Sets nothing, yet masks the vendor file of the same name.
    "etc/sysctl.d/99-mask.conf": "# emptied by the operator\n",
    "usr/lib/sysctl.d/60-vendor.conf": "vm.dirty_ratio = 7\nnet.core.somaxconn=1024\n",
    "usr/lib/sysctl.d/99-mask.conf": "vm.dirty_ratio = 5\n",
    "lib/sysctl.d/10-early.conf": "\tnet.core.somaxconn\t=\t512\nfs.other = 1\n",
  };
  const DECLARED = {
    "vm.swappiness": "60",
    "net.ipv4.ip_forward": "1",
    "vm.dirty_ratio": "7",
    "net.core.somaxconn": "1024",
    "net.ipv4.conf.all.rp_filter": "2",
  };

  it("with keys declared, the host sends only lines that can set them, and they read as from every line", async () => {
    const root = { dir: await trees(FILES), paths: PATHS };
    const filtered = await runProbe<SysctlLive>(sysctl, DECLARED, { root });
    const everything = await runProbe<SysctlLive>(sysctl, undefined, { root });
    const declaredOnly = (live: SysctlLive) =>
      Object.fromEntries(
        Object.keys(DECLARED).map((name) => [name, live.persisted.get(name) ?? null]),
      );
    assert.deepEqual(declaredOnly(filtered.live!), declaredOnly(everything.live!));
    assert.deepEqual(declaredOnly(filtered.live!), {
      "vm.swappiness": { value: "10", file: "/etc/sysctl.conf", line: 4 },
      "net.ipv4.ip_forward": { value: "1", file: "/etc/sysctl.conf", line: 5 },
      "vm.dirty_ratio": { value: "7", file: "/usr/lib/sysctl.d/60-vendor.conf", line: 1 },
      "net.core.somaxconn": { value: "1024", file: "/usr/lib/sysctl.d/60-vendor.conf", line: 2 },
      "net.ipv4.conf.all.rp_filter": null,
    });
    for (const unsent of ["kernel.unrelated", "swappiness_extra", "fs.other", "# ", "; "])
      assert.ok(!filtered.stdout.includes(unsent), `${unsent} sent`);
    assert.ok(!everything.stdout.includes("# "), "comments are never sent");
    assert.deepEqual(
      sysctl.compare(DECLARED, filtered.live!),
      sysctl.compare(DECLARED, everything.live!),
    );
    // The host says when each file changed and when it booted: what a cause is read from.
    const now = Date.now() / 1000;
    assert.ok(Math.abs(filtered.live!.changed.get("/etc/sysctl.conf")! - now) < 3600);
    assert.ok(filtered.live!.bootedAt! < now);
  });

  it("a snapshot still takes every persisted key", async () => {
    const root = { dir: await trees(FILES), paths: PATHS };
    const { live } = await runProbe<SysctlLive>(sysctl, undefined, { root });
    assert.deepEqual([...live!.persisted.keys()].sort(), [
      "fs.other",
      "kernel.unrelated",
      "net.core.somaxconn",
      "net.ipv4.ip_forward",
      "vm.dirty_ratio",
      "vm.swappiness",
      "vm.swappiness_extra",
    ]);
    assert.ok(live!.runtime.size > 100, "every runtime value under /proc/sys");
  });

  it("with keys declared, the host starts awk and stat only, and passes over directories", async () => {
    const dir = await trees({ ...FILES, "etc/sysctl.d/50-dir.conf/inner": "vm.swappiness = 99\n" });
    const root = { dir, paths: PATHS };
    const bin = path.join(await trees(), "bin");
    await mkdir(bin);
    for (const program of ["awk", "stat"])
      await symlink(
        execSync(`command -v ${program}`, { encoding: "utf8" }).trim(),
        path.join(bin, program),
      );
    // A directory as a declared key: no runtime value, as grep gave none.
    const declared = { ...DECLARED, "net.ipv4": "1" };
    const full = await runProbe<SysctlLive>(sysctl, declared, { root });
    const onlyAwkAndStat = await runProbe<SysctlLive>(sysctl, declared, {
      root,
      edit: (script) => script.replace(/^PATH=.*$/m, `PATH=${bin}`),
    });
    assert.deepEqual(onlyAwkAndStat.live, full.live);
    assert.equal(full.live!.persisted.get("vm.swappiness")?.value, "10");
    assert.ok(!full.live!.runtime.has("net.ipv4"));
    assert.equal(
      full.live!.runtime.get("vm.swappiness"),
      readFileSync("/proc/sys/vm/swappiness", "utf8").trim(),
    );
    assert.ok(full.live!.changed.has(`/etc/sysctl.d/50-dir.conf`), "a directory is still named");
  });

  it("nothing declared and no sysctl file: nothing is read, nothing hangs on stdin", async () => {
    const root = { dir: await trees(), paths: PATHS };
    const none = await runProbe<SysctlLive>(sysctl, {}, { root });
    assert.deepEqual([none.live!.runtime.size, none.live!.persisted.size], [0, 0]);
    const noFiles = await runProbe<SysctlLive>(sysctl, { "vm.swappiness": "1" }, { root });
    assert.deepEqual([...noFiles.live!.persisted], []);
    assert.equal(noFiles.live!.runtime.size, 1);
  });
});
