import assert from "node:assert/strict";
import { test } from "node:test";
import { kernelModules } from "../../../src/domains/kernel_modules/index.js";
import { parseModules, type KernelModulesLive } from "../../../src/domains/kernel_modules/parse.js";
import { ProbeParseError } from "../../../src/errors.js";
import { scratchTrees } from "../../support/tree.js";
import { capturedFiles, fixture, liveFrom, section } from "./fixtures.js";
import { runProbe } from "./live-probe.js";

const trees = scratchTrees();

const path = (...rest: (string | number)[]) => ["system", "kernel_modules", ...rest];

test("a kernel without loadable modules is unknown, never drift", () => {
  const out = section(kernelModules, fixture("kernel_modules", "no-module-support.txt"));
  assert.equal(out.unknown, "no /proc/modules: kernel without loadable module support");
});

// The captured host loaded br_netfilter by hand: no file of its loads it at boot, nothing holds it.
const BY_HAND = {
  key: "br_netfilter",
  declared: "loaded",
  live: "loaded",
  path: path("loaded", 0),
  latent: { after: "reboot", becomes: "absent", because: "no modules-load.d file loads it" },
};

test("loaded and built-in modules satisfy `loaded`; - and _ are the same name", () => {
  const live = liveFrom(kernelModules, "debian-bridge-host.txt");
  assert.deepEqual(
    kernelModules.compare(
      { loaded: ["br_netfilter", "snd-hda-intel", "loop", "tcp_cubic"], absent: ["usb-storage"] },
      live,
    ),
    [BY_HAND],
  );
});

test("the next boot: a module loaded by hand is gone, unless something holds it, it drives a device or it is built in", () => {
  const live = liveFrom(kernelModules, "debian-bridge-host.txt");
  // bridge is held by br_netfilter, floppy and snd_hda_intel register drivers, loop is built in.
  const declared = { loaded: ["br_netfilter", "bridge", "floppy", "snd_hda_intel", "loop"] };
  assert.deepEqual(kernelModules.compare(declared, live), [BY_HAND]);
  live.loadsAtBoot.set("br_netfilter", "/etc/modules-load.d/k8s.conf:1");
  assert.deepEqual(kernelModules.compare(declared, live), []);
});

test("a declared module that is not loaded, or a banned one that is, is drift", () => {
  const live = liveFrom(kernelModules, "debian-bridge-host.txt");
  assert.deepEqual(
    kernelModules.compare(
      { loaded: ["br_netfilter", "nf-conntrack"], absent: ["floppy", "ext4"] },
      live,
    ),
    [
      BY_HAND,
      { key: "nf_conntrack", declared: "loaded", live: "absent", path: path("loaded", 1) },
      { key: "floppy", declared: "absent", live: "loaded", path: path("absent", 0) },
      {
        key: "ext4",
        declared: "absent",
        live: "loaded",
        path: path("absent", 1),
        detail: "built into the running kernel: it cannot be unloaded",
      },
    ],
  );
});

test("snapshot lists loaded modules sorted, and compares clean but for the one loaded by hand", () => {
  const live = liveFrom(kernelModules, "debian-bridge-host.txt");
  const spec = kernelModules.snapshot(live)!;
  assert.deepEqual(spec, {
    loaded: ["br_netfilter", "bridge", "floppy", "llc", "snd_hda_intel", "stp"],
  });
  assert.deepEqual(kernelModules.compare(spec, live), [BY_HAND]);
  assert.equal(kernelModules.snapshot(liveFrom(kernelModules, "none-loaded.txt")), undefined);
});

test("a modular kernel with nothing loaded makes every declared module absent", () => {
  const live = liveFrom(kernelModules, "none-loaded.txt");
  assert.deepEqual(
    kernelModules.compare({ loaded: ["br_netfilter"] }, live).map((f) => [f.key, f.live]),
    [["br_netfilter", "absent"]],
  );
});

test("lines it cannot trust are refused", () => {
  assert.throws(() => parseModules("/proc/modules:br_netfilter\n"), ProbeParseError);
  assert.throws(
    () => parseModules("/proc/modules:br_netfilter 32768 0 - Live 0x0\n/proc/modules:bridge 3112"),
    ProbeParseError,
  );
  assert.throws(() => parseModules("/etc/passwd:root:x:0:0\n"), ProbeParseError);
});

test("the schema refuses a module declared both loaded and absent", () => {
  const bad = kernelModules.schema.safeParse({
    loaded: ["br_netfilter"],
    absent: ["floppy", "br-netfilter"],
  });
  assert.equal(bad.success, false);
  assert.deepEqual(
    bad.error.issues.map((i) => [i.path, i.message]),
    [[["absent", 1], "br-netfilter is declared both loaded and absent"]],
  );
  assert.equal(kernelModules.schema.safeParse({ loaded: ["floppy;reboot"] }).success, false);
  assert.equal(kernelModules.schema.safeParse({ unloaded: ["floppy"] }).success, false);
});

test("with modules declared, the host sends only their lines, and they compare as the whole lists do", async () => {
  // The captured host's /proc/modules and modules.builtin, probed as if they were this machine's.
  const files = {
    ...capturedFiles(fixture("kernel_modules", "debian-bridge-host.txt")),
    "proc/sys/kernel/osrelease": "6.1.0-28-amd64\n",
  };
  // Every path the probe reads is the tree's: this machine's modprobe.d (udev ships one) is not.
  const root = { dir: await trees(files) };
  const declared = {
    loaded: ["br-netfilter", "nf_conntrack", "loop", "tcp_cubic"],
    absent: ["floppy", "ext4", "usb-storage"],
  };
  const filtered = await runProbe<KernelModulesLive>(kernelModules, declared, { root });
  const everything = await runProbe<KernelModulesLive>(kernelModules, undefined, { root });
  assert.deepEqual(everything.live, liveFrom(kernelModules, "debian-bridge-host.txt"));
  assert.deepEqual(
    kernelModules.compare(declared, filtered.live!),
    kernelModules.compare(declared, everything.live!),
  );
  assert.deepEqual(
    kernelModules.compare(declared, filtered.live!).map((f) => [f.key, f.live]),
    [
      ["br_netfilter", "loaded"],
      ["nf_conntrack", "absent"],
      ["floppy", "loaded"],
      ["ext4", "loaded"],
    ],
  );
  assert.deepEqual([...filtered.live!.loaded, ...filtered.live!.builtin].sort(), [
    "br_netfilter",
    "ext4",
    "floppy",
    "loop",
    "tcp_cubic",
  ]);
  assert.deepEqual([...filtered.live!.drivers], ["floppy"]);
  for (const unsent of ["bridge 311296", "stp ", "llc ", "snd_hda_intel"])
    assert.ok(!filtered.stdout.includes(unsent), `${unsent} sent`);
  const none = await runProbe<KernelModulesLive>(kernelModules, { loaded: [] }, { root });
  assert.deepEqual([none.live!.loaded.size, none.live!.builtin.size], [0, 0]);
});

// Real files: systemd's own modprobe.d, Ubuntu's blacklist.conf head (with an operator's line),
// a CIS-style install-false file, Debian's /etc/modules and a vendor modules-load.d file masked
// by an empty one of the same name in /etc.
const BOOT_FILES = {
  "lib/modprobe.d/systemd.conf":
    "#  SPDX-License-Identifier: LGPL-2.1-or-later\n# Therefore disable bond0 creation.\n\noptions bonding max_bonds=0\n\n# Do the same for dummy0.\n\noptions dummy numdummies=0\n",
  "etc/modprobe.d/blacklist.conf":
    "# This file lists those modules which we don't want to be loaded by\n# alias expansion, usually so some other driver will be loaded for the\n# device instead.\n\n# evbug is a debug tool that should be loaded explicitly\nblacklist evbug\n\nblacklist snd_hda_intel\n",
  "etc/modprobe.d/cis.conf": "install usb-storage /bin/false\n",
  "etc/modules-load.d/modules.conf":
    '# /etc/modules: kernel modules to load at boot time.\n#\n# This file contains the names of kernel modules that should be loaded\n# at boot time, one per line. Lines beginning with "#" are ignored.\n\nbr_netfilter\nusb-storage\n',
  "usr/lib/modules-load.d/nf.conf": "nf_conntrack\n",
  "usr/lib/modules-load.d/wireguard.conf": "wireguard\n",
  "etc/modules-load.d/wireguard.conf": "",
};

test("the next boot: a module modules-load.d loads and nothing blocks comes back; a loaded one modprobe.d blacklists does not", async () => {
  const files = {
    ...capturedFiles(fixture("kernel_modules", "debian-bridge-host.txt")),
    "proc/sys/kernel/osrelease": "6.1.0-28-amd64\n",
    ...BOOT_FILES,
  };
  const root = { dir: await trees(files) };
  const declared = {
    loaded: ["br_netfilter", "snd-hda-intel"],
    absent: ["nf_conntrack", "usb-storage", "wireguard", "evbug"],
  };
  const filtered = await runProbe<KernelModulesLive>(kernelModules, declared, { root });
  const everything = await runProbe<KernelModulesLive>(kernelModules, undefined, { root });
  const latent = (live: KernelModulesLive) =>
    kernelModules.compare(declared, live).map((f) => [f.key, f.declared, f.live, f.latent]);
  assert.deepEqual(latent(filtered.live!), [
    [
      "snd_hda_intel",
      "loaded",
      "loaded",
      { after: "reboot", becomes: "absent", because: "/etc/modprobe.d/blacklist.conf:8" },
    ],
    [
      "nf_conntrack",
      "absent",
      "absent",
      { after: "reboot", becomes: "loaded", because: "/usr/lib/modules-load.d/nf.conf:1" },
    ],
  ]);
  assert.deepEqual(latent(everything.live!), latent(filtered.live!));
  assert.deepEqual(
    kernelModules.compare(declared, filtered.live!).map((f) => f.path),
    [path("loaded", 1), path("absent", 0)],
  );
});

test("boot lines name modules through Maps: a module named __proto__ is one more name", () => {
  const live = parseModules(
    "/etc/modules-load.d/x.conf:\n/etc/modules-load.d/x.conf:1:__proto__\n/etc/modprobe.d/y.conf:\n/etc/modprobe.d/y.conf:1:blacklist constructor\n",
  );
  assert.equal(live.loadsAtBoot.get("__proto__"), "/etc/modules-load.d/x.conf:1");
  assert.equal(live.blocked.get("constructor"), "/etc/modprobe.d/y.conf:1");
});
