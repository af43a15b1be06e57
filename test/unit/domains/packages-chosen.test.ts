// Which packages a snapshot declares by default: those the package manager marks as installed on
// purpose (apt's manual marks, dnf's user-installed packages, apk's world), every one with
// `all`, and every one where the host cannot tell, with the reason.
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseChosen } from "../../../src/domains/packages/chosen.js";
import { packages } from "../../../src/domains/packages/index.js";
import { parseApk, parseDpkg, parseRpm } from "../../../src/domains/packages/parse.js";
import { DEFAULT_SNAPSHOT_OPTIONS } from "../../../src/domains/snapshot-options.js";

const dpkg = parseDpkg(
  [
    ["nginx", "amd64"],
    ["libssl3", "amd64"],
    ["adduser", "all"],
    ["tzdata", "all"],
    ["libc6", "amd64"],
    ["libc6", "i386"],
  ]
    .map(([name, arch]) =>
      [
        `Package: ${name}`,
        "Status: install ok installed",
        "Version: 1",
        `Architecture: ${arch}`,
      ].join("\n"),
    )
    .join("\n"),
);
// apt marks an `all` package under the host's own architecture; libc6:i386 was chosen.
const EXTENDED_STATES = [
  "Package: libssl3\nArchitecture: amd64\nAuto-Installed: 1",
  "Package: adduser\nArchitecture: amd64\nAuto-Installed: 1",
  "Package: tzdata\nArchitecture: amd64\nAuto-Installed: 0",
  "Package: libc6\nArchitecture: amd64\nAuto-Installed: 1",
  "Package: removed-long-ago\nArchitecture: amd64\nAuto-Installed: 1",
].join("\n\n");

const declared = (live: typeof dpkg, mode: "chosen" | "all", pinned?: Set<string>) =>
  Object.keys(
    packages.snapshot(live, {
      ...DEFAULT_SNAPSHOT_OPTIONS,
      packages: mode,
      ...(pinned && { pinned }),
    }) ?? {},
  );

test("apt: an installed package not marked Auto-Installed for its architecture is chosen, as apt-mark showmanual says", () => {
  const live = { ...dpkg, chosen: parseChosen("apt-auto", EXTENDED_STATES, dpkg) };
  assert.deepEqual(declared(live, "chosen"), ["libc6", "nginx", "tzdata"]);
  assert.deepEqual(
    packages.snapshotLeftOut!(live, { ...DEFAULT_SNAPSHOT_OPTIONS, packages: "chosen" }),
    {
      count: 2,
    },
  );
  // A pinned package is declared whatever its mark; `all` declares every one.
  assert.deepEqual(declared(live, "chosen", new Set(["libssl3"])), [
    "libc6",
    "libssl3",
    "nginx",
    "tzdata",
  ]);
  assert.equal(declared(live, "all").length, 5);
  assert.equal(
    packages.snapshotLeftOut!(live, { ...DEFAULT_SNAPSHOT_OPTIONS, packages: "all" }),
    undefined,
  );
});

test("no extended_states: apt marked nothing automatic, every package is chosen", () => {
  const live = { ...dpkg, chosen: parseChosen("apt-auto", "", dpkg) };
  assert.equal(declared(live, "chosen").length, 5);
});

test("apk's world: constraints and tags taken off, forbidden ones left out", () => {
  const apk = parseApk(
    "P:nginx\nV:1.24-r0\nA:x86_64\nP:busybox\nV:1.36-r0\nA:x86_64\nP:musl\nV:1.2-r0\nA:x86_64\n",
  );
  const world = {
    ...apk,
    chosen: parseChosen("apk-world", "busybox\nnginx>=1.20@edge\n!musl\n", apk),
  };
  assert.deepEqual(declared(world, "chosen"), ["busybox", "nginx"]);
});

test("dnf 4: a package whose latest reason is user or unknown is chosen, as dnf repoquery --userinstalled says", () => {
  const rpm = parseRpm(
    [
      ["nginx", "x86_64"], // user
      ["openssl-libs", "x86_64"], // dependency
      ["tzdata", "noarch"], // weak dependency
      ["vim-minimal", "x86_64"], // a group's package
      ["kernel-core", "x86_64"], // cleaned
      ["rpm-only", "x86_64"], // installed by rpm alone: no record
      ["reinstalled", "x86_64"], // removed by dnf, then installed by rpm: unknown
      ["glibc", "x86_64"], // dependency on x86_64, user on i686
      ["glibc", "i686"],
    ]
      .map(([name, arch]) => `${name}\t(none):1-1\t${arch}`)
      .join("\n"),
  );
  // What the probe prints from the history database: name, arch, libdnf's resolved reason.
  const history = [
    "nginx\tx86_64\t2",
    "openssl-libs\tx86_64\t1",
    "tzdata\tnoarch\t4",
    "vim-minimal\tx86_64\t5",
    "kernel-core\tx86_64\t3",
    "reinstalled\tx86_64\t0",
    "glibc\tx86_64\t1",
    "glibc\ti686\t2",
    "removed-long-ago\tx86_64\t2",
    "",
  ].join("\n");
  const live = { ...rpm, chosen: parseChosen("dnf-history", history, rpm) };
  assert.deepEqual(declared(live, "chosen"), ["glibc", "nginx", "reinstalled", "rpm-only"]);
  // dnf without a history database recorded no reason: every package is chosen.
  const none = { ...rpm, chosen: parseChosen("dnf-history", "", rpm) };
  assert.equal(declared(none, "chosen").length, 8);
  assert.throws(
    () => parseChosen("dnf-history", "nginx\tx86_64\tuser\n", rpm),
    /unexpected dnf history line "nginx\tx86_64\tuser"/,
  );
});

// dnf 5's state files as libdnf5 writes them: packages.toml and groups.toml from its own test
// (rpm-software-management/dnf5, test/libdnf5/system/test_state.cpp), then the spaced, multi-line
// form toml11 4 writes.
const DNF5_PACKAGES = `version = "1.0"
[packages]
"pkg-libs.x86_64" = {reason="Dependency"}
"pkg.x86_64" = {reason="User"}
"unresolvable.noarch" = {reason="Dependency"}
`;
const DNF5_GROUPS = `version = "1.0"
[groups]
[groups.group-1]
package_types = ["mandatory","optional"]
packages = ["foo","bar"]
userinstalled = true
[groups.group-2]
package_types = ["mandatory"]
packages = ["pkg1","pkg2"]
userinstalled = false
`;

test("dnf 5: a package is chosen unless marked a dependency (weak or not) that no group installed, as dnf5 repoquery --userinstalled says", () => {
  const rpm = parseRpm(
    ["pkg", "pkg-libs", "foo", "pkg2", "rpm-only", "tzdata", "grouped-dep"]
      .map((name) => `${name}\t(none):1-1\tx86_64`)
      .join("\n"),
  );
  const spaced = [
    '"foo.x86_64" = { reason = "Dependency" }',
    '"tzdata.x86_64" = { reason = "Weak Dependency" }',
    '"grouped-dep.x86_64" = { reason = "Dependency" }',
    "",
    "[groups.tools]",
    "packages = [",
    '    "grouped-dep",',
    "]",
  ].join("\n");
  const live = {
    ...rpm,
    chosen: parseChosen("dnf5-state", DNF5_PACKAGES + DNF5_GROUPS + spaced, rpm),
  };
  // pkg-libs and tzdata are dependencies; foo and grouped-dep are too, but a group installed them.
  assert.deepEqual(declared(live, "chosen"), ["foo", "grouped-dep", "pkg", "pkg2", "rpm-only"]);
});

test("a host that cannot tell declares every package, and says why", () => {
  const rpm = parseRpm("bash\t(none):5.2-1\tx86_64\nglibc\t(none):2.34-1\tx86_64\n");
  const live = {
    ...rpm,
    chosen: parseChosen(
      "chosen-unknown",
      "no dnf on this host to tell the packages installed on purpose\n",
      rpm,
    ),
  };
  assert.deepEqual(declared(live, "chosen"), ["bash", "glibc"]);
  assert.deepEqual(
    packages.snapshotLeftOut!(live, { ...DEFAULT_SNAPSHOT_OPTIONS, packages: "chosen" }),
    {
      count: 0,
      unknown: "no dnf on this host to tell the packages installed on purpose",
    },
  );
});
