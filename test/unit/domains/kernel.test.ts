import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { utimes } from "node:fs/promises";
import * as path from "node:path";
import { describe, it, test } from "node:test";
import { kernel } from "../../../src/domains/kernel/index.js";
import {
  compareVersions,
  parseInstalled,
  parseRunning,
  type KernelLive,
} from "../../../src/domains/kernel/parse.js";
import { ProbeParseError } from "../../../src/errors.js";
import { parseContext } from "../../../src/probe/script.js";
import { scratchTrees } from "../../support/tree.js";
import { FIXTURE_NONCE, fixture, liveFrom, section } from "./fixtures.js";
import { runProbe } from "./live-probe.js";

test("a host booted without kernel images on disk: running release, nothing installed", () => {
  const live = liveFrom(kernel, "no-images.txt");
  assert.match(live.running, /^\d+\.\d+/);
  assert.deepEqual(live.installed, []);
  assert.deepEqual(kernel.compare(live.running, live), []);
  const [finding] = kernel.compare("6.1.0-28-amd64", live);
  assert.deepEqual(finding, {
    key: "kernel_version",
    declared: "6.1.0-28-amd64",
    live: live.running,
    path: ["system", "kernel_version"],
  });
});

test("a newer installed kernel than the running one is latent: what the next boot runs", () => {
  const live = liveFrom(kernel, "reboot-pending.txt");
  assert.deepEqual(live, {
    running: "6.1.0-28-amd64",
    installed: ["6.1.0-10-amd64", "6.1.0-28-amd64", "6.1.0-30-amd64"],
    rebootRequired: [],
    rebootPackages: [],
  });
  const latent = {
    after: "reboot",
    becomes: "6.1.0-30-amd64",
    because: "6.1.0-30-amd64 installed",
  };
  assert.deepEqual(kernel.compare("6.1.0-30-amd64", live), [
    {
      key: "kernel_version",
      declared: "6.1.0-30-amd64",
      live: "6.1.0-28-amd64",
      path: ["system", "kernel_version"],
      latent,
    },
  ]);
  // The declared kernel runs: clean now, and latent, since the next boot picks another one.
  assert.deepEqual(kernel.compare("6.1.0-28-amd64", live), [
    {
      key: "kernel_version",
      declared: "6.1.0-28-amd64",
      live: "6.1.0-28-amd64",
      path: ["system", "kernel_version"],
      latent,
    },
  ]);
});

test("a kernel that differs only in its flavour or build suffix is no newer kernel", () => {
  const live = {
    running: "6.1.0-28-amd64",
    installed: ["6.1.0-28+b1-amd64", "6.1.0-28-amd64", "6.1.0-28-cloud-amd64"],
    rebootRequired: [],
    rebootPackages: [],
  };
  assert.deepEqual(kernel.compare("6.1.0-28-amd64", live), []);
});

test("a declared kernel that is not on disk is named in the detail", () => {
  const live = liveFrom(kernel, "reboot-pending.txt");
  assert.equal(
    kernel.compare("6.1.0-31-amd64", live)[0]!.detail,
    "6.1.0-31-amd64 is not installed",
  );
});

describe("reboot-required markers, probed for real", () => {
  const trees = scratchTrees();
  const PATHS = ["/boot", "/lib/modules", "/run/reboot-required", "/run/reboot-needed"];
  const running = readFileSync("/proc/sys/kernel/osrelease", "utf8").trim();
  const bootedAt = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))![1]);

  it("a marker of this boot is latent, with the packages that asked for it", async () => {
    const dir = await trees({
      "run/reboot-required": "*** System restart required ***\n",
      "run/reboot-required.pkgs": "libc6\nlinux-image-6.1.0-29-amd64\nlibc6\n$(reboot)\n",
    });
    const { live } = await runProbe<KernelLive>(kernel, running, { root: { dir, paths: PATHS } });
    assert.deepEqual(kernel.compare(running, live!)[0]!.latent, {
      after: "reboot",
      becomes: running,
      because: "/run/reboot-required (libc6, linux-image-6.1.0-29-amd64)",
    });
  });

  it("a marker older than the boot was answered by a reboot that kept /run: no finding", async () => {
    const dir = await trees({ "run/reboot-needed": "" });
    const before = new Date((bootedAt - 60) * 1000);
    await utimes(path.join(dir, "run/reboot-needed"), before, before);
    const { live } = await runProbe<KernelLive>(kernel, running, { root: { dir, paths: PATHS } });
    assert.deepEqual(live!.rebootRequired, []);
    assert.deepEqual(kernel.compare(running, live!), []);
  });
});

test("RHEL releases order numerically and the rescue image never looks newer", () => {
  const live = liveFrom(kernel, "rhel.txt");
  assert.equal(live.installed.at(-1), "5.14.0-503.el9.x86_64");
  assert.equal(live.installed.length, 3, "duplicates from /boot and /lib/modules collapse");
  const [finding] = kernel.compare("5.14.0-427.13.1.el9_4.x86_64", live);
  assert.deepEqual([finding!.detail, finding!.latent], [undefined, undefined]);
});

test("versions compare like dpkg: numbers numerically, ~ before anything", () => {
  assert.equal(compareVersions("6.1.0-30-amd64", "6.1.0-9-amd64"), 1);
  assert.equal(compareVersions("6.1.0-9-amd64", "6.1.0-30-amd64"), -1);
  assert.equal(compareVersions("5.14.0-503.el9", "5.14.0-427.13.1.el9_4"), 1);
  assert.equal(compareVersions("6.1.0-010", "6.1.0-10"), 0);
  assert.equal(compareVersions("6.8.0~rc1", "6.8.0"), -1);
  assert.equal(compareVersions("6.8.0", "6.8.0+1"), -1);
  assert.equal(compareVersions("6.8.0a", "6.8.0-"), -1, "letters sort before symbols");
});

test("snapshot declares the running release, which then compares clean", () => {
  const live = liveFrom(kernel, "reboot-pending.txt");
  assert.equal(kernel.snapshot(live), "6.1.0-28-amd64");
  // Clean now: only the newer kernel's latent finding, which snapshot writes beside the value.
  assert.deepEqual(
    kernel
      .compare(kernel.snapshot(live)!, live)
      .map((f) => [f.declared === f.live, f.latent?.becomes]),
    [[true, "6.1.0-30-amd64"]],
  );
});

test("output without a running release, or with garbage, is not trusted", () => {
  assert.throws(() => parseRunning(""), ProbeParseError);
  assert.throws(() => parseRunning("6.1.0 junk"), ProbeParseError);
  assert.throws(() => parseInstalled("6.1.0-28-amd64\n$(reboot)\n"), ProbeParseError);
  assert.deepEqual(parseInstalled(""), []);
  assert.deepEqual(parseInstalled("linux\n6.1.0-28-amd64.efi.signed\n6.1.0-28-amd64\n"), [
    "6.1.0-28-amd64",
  ]);
  // Output cut before the running part: the section says nothing about the kernel.
  const cut = fixture("kernel", "reboot-pending.txt").replace(
    /\nQMfixture mark running\n6\.1\.0-28-amd64\n/,
    "",
  );
  assert.throws(
    () => kernel.parse(section(kernel, cut).output, parseContext(FIXTURE_NONCE)),
    ProbeParseError,
  );
});

test("the schema accepts release strings only", () => {
  assert.equal(kernel.schema.parse("6.1.0-28-amd64"), "6.1.0-28-amd64");
  assert.equal(kernel.schema.safeParse("6.1.0 28").success, false);
  assert.equal(kernel.schema.safeParse(6.1).success, false);
});
