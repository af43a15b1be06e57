import assert from "node:assert/strict";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { packages } from "../../../src/domains/packages/index.js";
import {
  liveVersion,
  parseApk,
  parseDpkg,
  parseRpm,
  type PackagesLive,
} from "../../../src/domains/packages/parse.js";
import { DEFAULT_SNAPSHOT_OPTIONS } from "../../../src/domains/snapshot-options.js";
import { ProbeParseError } from "../../../src/errors.js";
import {
  buildProbe,
  newNonce,
  parseContext,
  parseProbeOutput,
  probeContext,
} from "../../../src/probe/script.js";
import { execa } from "execa";
import { NOBODY, rooted, runProbe } from "./live-probe.js";

const fixture = (name: string) =>
  readFileSync(new URL(`../../fixtures/packages/${name}`, import.meta.url), "latin1");
const version = (live: PackagesLive, name: string) => {
  const instances = live.installed.get(name);
  return instances ? liveVersion(instances) : undefined;
};

describe("packages: dpkg parser", () => {
  it("reads a real Debian 12 status database", () => {
    const live = parseDpkg(fixture("dpkg-debian12.txt"));
    assert.ok(live.installed.size > 700, `only ${live.installed.size} packages`);
    assert.equal(version(live, "bsdutils"), "1:2.38.1-5+deb12u3");
    assert.equal(version(live, "adduser"), "3.134");
    assert.equal(live.notInstalled.size, 0);
  });

  it("counts only installed packages, and keeps why the others are not", () => {
    const live = parseDpkg(fixture("dpkg-states.txt"));
    assert.equal(live.installed.has("nginx"), false);
    assert.equal(live.notInstalled.get("nginx"), "config-files");
    assert.equal(live.installed.has("apache2"), false);
    assert.equal(live.notInstalled.get("apache2"), "half-installed");
    assert.equal(live.installed.has("telnet"), false);
    assert.equal(live.notInstalled.has("telnet"), false);
    assert.equal(version(live, "openssl"), "3.0.15-1~deb12u1", "a held package is installed");
    assert.equal(
      version(live, "man-db"),
      "2.11.2-2",
      "pending triggers leave the package installed",
    );
  });

  it("keys multi-arch packages by name, joining versions only when they differ", () => {
    const live = parseDpkg(fixture("dpkg-states.txt"));
    assert.equal(version(live, "libc6"), "2.36-9+deb12u7");
    assert.equal(version(live, "libssl3"), "3.0.14-1~deb12u2 (i386), 3.0.15-1~deb12u1 (amd64)");
  });

  it("reads an empty database as no packages", () => {
    assert.equal(parseDpkg("").installed.size, 0);
  });

  it("rejects output cut inside a stanza", () => {
    const text = fixture("dpkg-debian12.txt");
    const cut = text.slice(
      0,
      text.indexOf("Status: install ok installed", 200) + "Status: install ok inst".length,
    );
    assert.throws(() => parseDpkg(cut), ProbeParseError);
    assert.throws(() => parseDpkg("Package: vim\n"), /has no Status/);
    assert.throws(() => parseDpkg("Version: 1.0\n"), /before any Package/);
  });
});

describe("packages: rpm parser", () => {
  const live = parseRpm(fixture("rpm-rhel9.txt"));

  it("skips what `rpm -q` says of a declared package it does not find", () => {
    const queried = parseRpm("bash\t(none):5.1.8-9.el9\tx86_64\npackage telnet is not installed\n");
    assert.deepEqual([...queried.installed.keys()], ["bash"]);
    assert.throws(() => parseRpm("package telnet is not installed, really\n"), ProbeParseError);
  });

  it("writes epochs as dpkg does, dropping an unset or zero epoch", () => {
    assert.equal(version(live, "openssl"), "1:3.0.7-27.el9");
    assert.equal(version(live, "nginx"), "2:1.20.1-14.el9_2.1");
    assert.equal(version(live, "bash"), "5.1.8-9.el9");
    assert.equal(version(live, "zlib"), "1.2.11-40.el9");
  });

  it("joins multi-arch and side-by-side versions", () => {
    assert.equal(version(live, "glibc"), "2.34-100.el9_4.2");
    assert.equal(version(live, "libgcc"), "11.4.1-2.el9 (i686), 11.4.1-3.el9 (x86_64)");
    assert.equal(
      version(live, "kernel-core"),
      "5.14.0-427.13.1.el9_4 (x86_64), 5.14.0-427.20.1.el9_4 (x86_64)",
    );
  });

  it("leaves out imported signing keys", () => {
    assert.equal(live.installed.has("gpg-pubkey"), false);
    assert.equal(live.installed.size, 11);
  });

  it("rejects a cut line", () => {
    assert.throws(() => parseRpm("bash\t(none):5.1.8-9.el9\n"), ProbeParseError);
    assert.equal(parseRpm("").installed.size, 0);
  });
});

describe("packages: apk parser", () => {
  it("reads an Alpine database", () => {
    const live = parseApk(fixture("apk-alpine320.txt"));
    assert.equal(live.installed.size, 14);
    assert.equal(version(live, "busybox"), "1.36.1-r29");
    assert.equal(live.installed.get("musl")![0]!.arch, "x86_64");
  });

  it("rejects a package cut before its version", () => {
    assert.throws(() => parseApk("P:musl\nV:1.2.5-r0\nP:zlib\n"), /zlib has no V: line/);
    assert.equal(parseApk("").installed.size, 0);
  });
});

describe("packages: manifest", () => {
  it("accepts versions, * and absent", () => {
    const parsed = packages.schema.parse({
      openssl: "3.0.15-1~deb12u1",
      nginx: "*",
      telnet: "absent",
    });
    assert.deepEqual(parsed, { openssl: "3.0.15-1~deb12u1", nginx: "*", telnet: "absent" });
  });

  it("tells the user to quote a version YAML read as a number", () => {
    const result = packages.schema.safeParse({ jq: 1.6 });
    assert.equal(result.success, false);
    assert.match(result.error.issues[0]!.message, /quote the version \(write "1.6"\)/);
  });

  it("rejects blank versions and names that are not package names", () => {
    assert.equal(packages.schema.safeParse({ jq: " 1.6" }).success, false);
    assert.equal(packages.schema.safeParse({ jq: "" }).success, false);
    assert.equal(packages.schema.safeParse({ "jq; rm": "1.6" }).success, false);
  });
});

describe("packages: compare", () => {
  const live = parseDpkg(fixture("dpkg-states.txt"));

  it("finds nothing when every declaration holds", () => {
    const declared = {
      libc6: "2.36-9+deb12u7",
      openssl: "*",
      nginx: "absent",
      telnet: "absent",
      bsdutils: "1:2.38.1-5+deb12u3",
    };
    assert.deepEqual(packages.compare(declared, live), []);
  });

  it("reports a version drift with the live version", () => {
    const [finding] = packages.compare({ openssl: "3.0.11-1~deb12u2" }, live);
    assert.deepEqual(finding, {
      key: "openssl",
      declared: "3.0.11-1~deb12u2",
      live: "3.0.15-1~deb12u1",
      path: ["packages", "installed_manifest", "openssl"],
    });
  });

  it("reports a package that must be absent but is installed", () => {
    const [finding] = packages.compare({ libc6: "absent" }, live);
    assert.equal(finding!.declared, "absent");
    assert.equal(finding!.live, "2.36-9+deb12u7");
  });

  it("says why a package with leftover configuration is absent", () => {
    const findings = packages.compare({ nginx: "*", apache2: "2.4.62-1~deb12u1", vim: "*" }, live);
    assert.deepEqual(
      findings.map((f) => [f.key, f.live, f.detail]),
      [
        [
          "nginx",
          "absent",
          "dpkg state config-files (removed, only its configuration files remain): not counted as installed",
        ],
        [
          "apache2",
          "absent",
          "dpkg state half-installed (an installation or removal was interrupted): not counted as installed",
        ],
        ["vim", "absent", "not in /var/lib/dpkg/status"],
      ],
    );
  });

  it("treats an architecture left at another version as drift", () => {
    const [finding] = packages.compare({ libssl3: "3.0.15-1~deb12u1" }, live);
    assert.equal(finding!.live, "3.0.14-1~deb12u2 (i386), 3.0.15-1~deb12u1 (amd64)");
    assert.match(finding!.detail!, /2 instances installed side by side/);
  });

  it("matches a missing epoch to epoch 0", () => {
    assert.deepEqual(
      packages.compare({ zlib: "0:1.2.11-40.el9" }, parseRpm(fixture("rpm-rhel9.txt"))),
      [],
    );
  });
});

describe("packages: snapshot", () => {
  it("declares every installed package at its exact version, sorted, and round-trips clean", () => {
    const live = parseRpm(fixture("rpm-rhel9.txt"));
    const declared = packages.snapshot(live, {
      ...DEFAULT_SNAPSHOT_OPTIONS,
      packages: "versions",
    })!;
    assert.equal(Object.keys(declared)[0], "bash");
    assert.deepEqual(Object.keys(declared), Object.keys(declared).sort());
    assert.equal(declared.openssl, "1:3.0.7-27.el9");
    assert.deepEqual(packages.schema.parse(declared), declared);
    assert.deepEqual(packages.compare(declared, live), []);
  });

  it("declares names at any version by default, and nothing with packages: none", () => {
    const live = parseRpm(fixture("rpm-rhel9.txt"));
    const declared = packages.snapshot(live)!;
    assert.equal(declared.openssl, "*");
    assert.deepEqual(packages.compare(declared, live), []);
    const none = { ...DEFAULT_SNAPSHOT_OPTIONS, packages: "none" } as const;
    assert.equal(packages.snapshot(live, none), undefined);
    assert.equal(packages.skipsSnapshot!(none), true);
    assert.equal(packages.skipsSnapshot!(DEFAULT_SNAPSHOT_OPTIONS), false);
  });

  it("has nothing to declare for an empty database", () => {
    assert.equal(packages.snapshot(parseDpkg("")), undefined);
  });
});

describe("packages: parse framing", () => {
  const ctx = parseContext("QMtest");

  it("needs the marker naming the database", () => {
    assert.throws(() => packages.parse("", ctx), /does not name a package database/);
    assert.equal(packages.parse("\nQMtest mark apk\nP:musl\nV:1.2.5-r0\n", ctx).installed.size, 1);
  });
});

describe("packages: probe on this host", () => {
  it("with packages declared, the host sends only their entries; absent and * are still right", async () => {
    const declared = { dpkg: "*", bash: ">= 1", "no-such-package-qm": "absent" };
    const run = await runProbe<PackagesLive>(packages, declared);
    assert.equal(run.live!.format, "dpkg");
    assert.deepEqual([...run.live!.installed.keys()].sort(), ["bash", "dpkg"]);
    assert.deepEqual(packages.compare(declared, run.live!), []);
    assert.deepEqual(
      packages
        .compare({ dpkg: "absent", "no-such-package-qm": "*" }, run.live!)
        .map((f) => [f.key, f.live]),
      [
        ["dpkg", run.live!.installed.get("dpkg")![0]!.version],
        ["no-such-package-qm", "absent"],
      ],
    );
    assert.ok(run.stdout.length < 1024, `${run.stdout.length} bytes sent`);
  });

  it("a snapshot (nothing declared) reads the whole database with one grep, and apt's marks with another", async () => {
    const run = await runProbe<PackagesLive>(packages, undefined);
    assert.ok(run.live!.installed.size > 100);
    assert.equal(
      run.script.match(/grep .*(dpkg\/status|apk\/db\/installed)/g)!.length,
      2,
      "one grep per database, only one of which runs",
    );
    // What apt itself says was installed on purpose.
    const manual = (await execa("apt-mark", ["showmanual"])).stdout.split("\n").filter(Boolean);
    const chosen = run.live!.chosen;
    assert.ok(chosen && "names" in chosen, JSON.stringify(chosen));
    assert.deepEqual([...chosen.names].sort(), manual.sort());
  });

  it("reads dpkg's database a record at a time, sending what a read line by line sends, odd records included; the main input's RS is left as it was: under dash, bash --posix, busybox sh, mawk and busybox awk", async () => {
    // This machine's database, then records dpkg would not write: lines of no package (after a
    // wanted one: they are its), a package line not first, two in one record, CRLF, lines of
    // blanks, a trailing blank, a last line without its newline.
    const odd = [
      "\n\nPackage: bash\nStatus: install ok installed\nVersion: 5.2\nArchitecture: amd64",
      "Status: no package line\nVersion: 9",
      "Package: zzz\nVersion: 1\n \nVersion: after blanks\n\t\nPackage: sudo\nVersion: 1.9\nPackage: tzdata\nVersion: 2024",
      "Description: x\nPackage: coreutils\nVersion: 9.1",
      "Package: other\r\nVersion: 2\r",
      "Package: openssh-server\r\nVersion: 3\r",
      "Package: sudo \nVersion: trailing blank",
      "Package: tzdata\nStatus: install ok installed\nVersion: last, no newline",
    ].join("\n\n");
    const db = `${readFileSync("/var/lib/dpkg/status", "latin1")}\n${odd}`;
    const wanted = ["bash", "sudo", "tzdata", "coreutils", "openssh-server", "no-such"];
    let keep = false;
    const lines = db.split("\n").filter((line) => {
      if (line.startsWith("Package: ")) keep = wanted.includes(line.slice(9));
      return keep && /^(Package|Status|Version|Architecture):/.test(line);
    });
    for (const line of ["Version: 9", "Version: 1.9", "Version: last, no newline"])
      assert.ok(lines.includes(line), line);
    const dir = mkdtempSync(join(tmpdir(), "qm-dpkg-"));
    try {
      mkdirSync(join(dir, "var/lib/dpkg"), { recursive: true });
      writeFileSync(join(dir, "var/lib/dpkg/status"), db, "latin1");
      const nonce = newNonce();
      const ctx = probeContext(nonce, 1024);
      const declared = Object.fromEntries(wanted.map((name) => [name, "*"]));
      // A section after, through the same awk: its blank lines are lines of the main input.
      const after = {
        name: "after",
        script: `printf 'a\\n\\nb\\n'\n${ctx.awk("after_x")}\nprintf '\\n\\nc\\n'`,
        awk: 'function after_x() { print "x" }',
      };
      const sections = [
        { name: "packages", script: packages.probe(declared, ctx), awk: packages.awk },
        after,
      ];
      const script = rooted(buildProbe(nonce, sections).script, {
        dir,
        paths: ["/var/lib/dpkg/status"],
      });
      for (const shell of [["dash"], ["bash", "--posix"], ["busybox", "sh"]])
        for (const awk of ["", 'awk() { busybox awk "$@"; }\n']) {
          const { stdout } = await execa(shell[0]!, [...shell.slice(1), "-s"], {
            input: awk + script,
            encoding: "latin1",
            stripFinalNewline: false,
          });
          const out = parseProbeOutput(stdout, nonce);
          const what = `${shell.join(" ")}${awk && ", busybox awk"}`;
          assert.equal(
            out.get("packages")!.output,
            `\n${nonce} mark dpkg\n${lines.map((line) => `${line}\n`).join("")}`,
            what,
          );
          assert.equal(out.get("after")!.output, "a\n\nb\nx\n\n\nc\n", what);
        }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("filters an apk database on the host the same way (captured Alpine database)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-apk-"));
    try {
      mkdirSync(join(dir, "lib/apk/db"), { recursive: true });
      // As apk writes it: a record per package, its checksum line first, a blank line after.
      const records = fixture("apk-alpine320.txt").replaceAll(/^P:/gm, "\nC:Q1x=\nP:");
      writeFileSync(join(dir, "lib/apk/db/installed"), records, "latin1");
      const declared = { musl: "*", busybox: "absent", "no-such": "absent" };
      const run = await runProbe<PackagesLive>(packages, declared, {
        root: { dir, paths: ["/var/lib/dpkg/status", "/lib/apk/db/installed"] },
      });
      assert.equal(run.live?.format, "apk", run.stdout);
      assert.deepEqual([...run.live.installed.keys()].sort(), ["busybox", "musl"]);
      assert.deepEqual(
        packages.compare(declared, run.live).map((f) => f.key),
        ["busybox"],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a declared database the audit user cannot read is unknown, with the reason, not every package absent", async () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-dpkg-"));
    try {
      chmodSync(dir, 0o755);
      mkdirSync(join(dir, "var/lib/dpkg"), { recursive: true, mode: 0o755 });
      writeFileSync(join(dir, "var/lib/dpkg/status"), fixture("dpkg-debian12.txt"), {
        mode: 0o600,
      });
      const run = await runProbe<PackagesLive>(
        packages,
        { bash: "*" },
        { command: NOBODY, root: { dir, paths: ["/var/lib/dpkg/status"] } },
      );
      assert.equal(run.unknown, "cannot read /var/lib/dpkg/status", run.stdout);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("on a busybox userland, whose shell has an rpm applet, reads apk's database (a busybox chroot)", async () => {
    const root = mkdtempSync(join(tmpdir(), "qm-busybox-"));
    try {
      mkdirSync(join(root, "bin"));
      mkdirSync(join(root, "lib/apk/db"), { recursive: true });
      copyFileSync("/usr/bin/busybox", join(root, "bin/busybox"));
      chmodSync(join(root, "bin/busybox"), 0o755);
      // A link per applet, as Alpine has: /bin/sh, awk, grep ... and rpm.
      const { stdout: applets } = await execa("/usr/bin/busybox", ["--list"]);
      for (const applet of applets.split("\n").filter((a) => a && a !== "busybox"))
        symlinkSync("busybox", join(root, "bin", applet));
      mkdirSync(join(root, "dev"));
      await execa("mknod", ["-m", "666", join(root, "dev/null"), "c", "1", "3"]);
      writeFileSync(join(root, "lib/apk/db/installed"), fixture("apk-alpine320.txt"), "latin1");
      const run = await runProbe<PackagesLive>(
        packages,
        { musl: "*" },
        {
          command: ["chroot", root, "/bin/sh", "-s"],
        },
      );
      assert.equal(run.unknown, undefined);
      assert.equal(run.live?.format, "apk", run.stdout);
      assert.deepEqual(packages.compare({ musl: "*" }, run.live), []);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("asks rpm for the declared names only; absent and * read right from its answer (captured from an rpm database)", () => {
    const declared = {
      openssl: "*",
      nginx: "absent",
      bash: ">= 5",
      zlib: "1.2.11-40.el9",
      "telnet-server": "absent",
      "no-such-package": "*",
    };
    const probe = packages.probe(declared, {
      quote: (v) => `'${v}'`,
      mark: () => "",
      unknown: () => "exit 9",
      maxFileBytes: 1,
      lastAudit: "",
      awk: String,
      stat: String,
    });
    // rpm-q-declared.txt is what this command printed over a database holding openssl, nginx,
    // bash and zlib; rpm's exit status 2 (two names not found) is not a failure.
    const rpm = probe.split("\n").find((line) => line.includes("$qm_rpm -q"))!;
    assert.match(
      rpm,
      / -- 'openssl' 'nginx' 'bash' 'zlib' 'telnet-server' 'no-such-package' 2>&1 >&3\); \} 3>&1; \[ \$\? -le 6 \]/,
    );
    const live = parseRpm(fixture("rpm-q-declared.txt"));
    assert.deepEqual([...live.installed.keys()].sort(), ["bash", "nginx", "openssl", "zlib"]);
    assert.deepEqual(
      packages.compare(declared, live).map((f) => [f.key, f.declared, f.live, f.detail]),
      [
        ["nginx", "absent", "2:1.20.1-14.el9_2.1", undefined],
        ["no-such-package", "*", "absent", "not in the rpm database"],
      ],
    );
  });

  it("works as an unprivileged user with a minimal PATH", async () => {
    const root = await runProbe<PackagesLive>(packages, undefined);
    const nobody = await runProbe<PackagesLive>(packages, undefined, { command: NOBODY });
    assert.deepEqual(packages.snapshot(nobody.live!), packages.snapshot(root.live!));
  });
});
