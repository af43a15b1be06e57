import assert from "node:assert/strict";
import { test } from "node:test";
import { kernel } from "../../../src/domains/kernel/index.js";
import {
  compareVersions,
  parseInstalled,
  parseRunning,
} from "../../../src/domains/kernel/parse.js";
import { ProbeParseError } from "../../../src/errors.js";
import { parseContext } from "../../../src/probe/script.js";
import { FIXTURE_NONCE, fixture, liveFrom, section } from "./fixtures.js";

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

test("a newer installed kernel than the running one says the reboot is pending", () => {
  const live = liveFrom(kernel, "reboot-pending.txt");
  assert.deepEqual(live, {
    running: "6.1.0-28-amd64",
    installed: ["6.1.0-10-amd64", "6.1.0-28-amd64", "6.1.0-30-amd64"],
  });
  assert.deepEqual(kernel.compare("6.1.0-30-amd64", live), [
    {
      key: "kernel_version",
      declared: "6.1.0-30-amd64",
      live: "6.1.0-28-amd64",
      path: ["system", "kernel_version"],
      detail: "reboot pending: 6.1.0-30-amd64 installed",
    },
  ]);
  // The declared kernel runs: no drift, even though the next boot picks another one.
  assert.deepEqual(kernel.compare("6.1.0-28-amd64", live), []);
});

test("a declared kernel that is not on disk is named in the detail", () => {
  const live = liveFrom(kernel, "reboot-pending.txt");
  assert.equal(
    kernel.compare("6.1.0-31-amd64", live)[0]!.detail,
    "reboot pending: 6.1.0-30-amd64 installed; 6.1.0-31-amd64 is not installed",
  );
});

test("RHEL releases order numerically and the rescue image never looks newer", () => {
  const live = liveFrom(kernel, "rhel.txt");
  assert.equal(live.installed.at(-1), "5.14.0-503.el9.x86_64");
  assert.equal(live.installed.length, 3, "duplicates from /boot and /lib/modules collapse");
  assert.equal(kernel.compare("5.14.0-427.13.1.el9_4.x86_64", live)[0]!.detail, undefined);
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
  assert.deepEqual(kernel.compare(kernel.snapshot(live)!, live), []);
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
