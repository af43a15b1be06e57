import assert from "node:assert/strict";
import { test } from "node:test";
import { execa } from "execa";
import { ioScheduler } from "../../../src/domains/io_scheduler/index.js";
import { parseSchedulers } from "../../../src/domains/io_scheduler/parse.js";
import { ProbeParseError } from "../../../src/errors.js";
import { newNonce, probeContext } from "../../../src/probe/script.js";
import { fixture, liveFrom, section } from "./fixtures.js";

const path = (p: string) => ["storage", "io_scheduler", p];

test("a virtio guest with loop devices: the bracketed scheduler is the active one", () => {
  const live = liveFrom(ioScheduler, "loop-and-virtio.txt");
  assert.deepEqual(live.get("vda"), {
    active: "mq-deadline",
    available: ["none", "mq-deadline", "kyber", "bfq"],
  });
  assert.equal(live.get("loop0").active, "none");
  assert.deepEqual(ioScheduler.compare({ "vd*": "mq-deadline" }, live), []);
  assert.deepEqual(ioScheduler.compare({ "vd*": "bfq" }, live), [
    { key: "vda", declared: "bfq", live: "mq-deadline", path: path("vd*") },
  ]);
});

test("a device's own name wins over a glob, and an unavailable scheduler is explained", () => {
  const live = liveFrom(ioScheduler, "storage-server.txt");
  assert.deepEqual(
    ioScheduler.compare({ "sd*": "mq-deadline", sda: "bfq", "nvme*": "none" }, live),
    [{ key: "nvme1n1", declared: "none", live: "mq-deadline", path: path("nvme*") }],
  );
  assert.deepEqual(ioScheduler.compare({ "nvme[0-9]n1": "kyber" }, live), [
    {
      key: "nvme0n1",
      declared: "kyber",
      live: "none",
      path: path("nvme[0-9]n1"),
      detail: "kyber is not available on nvme0n1 (available: none, mq-deadline)",
    },
    {
      key: "nvme1n1",
      declared: "kyber",
      live: "mq-deadline",
      path: path("nvme[0-9]n1"),
      detail: "kyber is not available on nvme1n1 (available: none, mq-deadline)",
    },
  ]);
});

test("a declaration that matches no device is a finding with no live value", () => {
  const live = liveFrom(ioScheduler, "storage-server.txt");
  assert.deepEqual(ioScheduler.compare({ "vd*": "mq-deadline", sdc: "bfq" }, live), [
    {
      key: "vd*",
      declared: "mq-deadline",
      live: null,
      path: path("vd*"),
      detail: "no block device with an I/O scheduler matches vd*",
    },
    {
      key: "sdc",
      declared: "bfq",
      live: null,
      path: path("sdc"),
      detail: "no block device sdc with an I/O scheduler",
    },
  ]);
  // A glob shadowed by a device's own name still matched a device.
  assert.deepEqual(
    ioScheduler.compare({ "sda?": "none", "sd[a]": "bfq", sda: "bfq" }, live).map((f) => f.key),
    ["sda?"],
  );
});

test("single-queue kernels and bare one-scheduler devices parse", () => {
  assert.equal(liveFrom(ioScheduler, "single-queue.txt").get("sda").active, "cfq");
  assert.deepEqual(liveFrom(ioScheduler, "storage-server.txt").get("dm-0"), {
    active: "none",
    available: ["none"],
  });
});

test("no device with a scheduler file: the host says the domain is unknown", () => {
  const out = section(ioScheduler, fixture("io_scheduler", "no-devices.txt"));
  assert.equal(out.unknown, "no block device with an I/O scheduler in /sys/block");
});

test("snapshot declares real disks that offer a choice, and compares clean", () => {
  for (const file of ["loop-and-virtio.txt", "storage-server.txt", "single-queue.txt"]) {
    const live = liveFrom(ioScheduler, file);
    const spec = ioScheduler.snapshot(live)!;
    assert.deepEqual(ioScheduler.compare(spec, live), [], file);
  }
  assert.deepEqual(ioScheduler.snapshot(liveFrom(ioScheduler, "storage-server.txt")), {
    nvme0n1: "none",
    nvme1n1: "mq-deadline",
    sda: "bfq",
    sdb: "mq-deadline",
  });
  assert.deepEqual(ioScheduler.snapshot(liveFrom(ioScheduler, "loop-and-virtio.txt")), {
    vda: "mq-deadline",
  });
});

test("output it cannot trust is refused; empty output is no devices", () => {
  assert.deepEqual(parseSchedulers(""), new Map());
  assert.throws(
    () => parseSchedulers("/sys/block/sda/queue/scheduler:none mq-deadline\n"),
    ProbeParseError,
  );
  assert.throws(() => parseSchedulers("/sys/block/sda/queue/schedu"), ProbeParseError);
  assert.throws(
    () => parseSchedulers("/sys/block/sda/queue/scheduler:[none] $(id)\n"),
    ProbeParseError,
  );
  assert.throws(() => parseSchedulers("/sys/block/sda/queue/scheduler:\n"), ProbeParseError);
});

test("the schema names what it wants", () => {
  assert.equal(ioScheduler.schema.safeParse({ "vd*": "mq-deadline" }).success, true);
  const bad = ioScheduler.schema.safeParse({ "sd[a": "bfq", "/dev/sda": "bfq" });
  assert.equal(bad.success, false);
  assert.deepEqual(
    bad.error.issues.map((i) => [i.path, i.message]),
    [
      [["sd[a"], "the [ at character 3 is never closed"],
      [["/dev/sda"], "a block device name or glob, like vda or nvme*"],
    ],
  );
});

test("the shell reads every device's scheduler line itself, as grep -H '' shows it: no process", async (t) => {
  const grep = await execa("sh", ["-c", "grep -H -s '' /sys/block/*/queue/scheduler"], {
    reject: false,
  });
  if (!grep.stdout) return t.skip("no block device with an I/O scheduler here");
  const script = ioScheduler.probe({}, probeContext(newNonce(), 1024));
  // No program can be started: only the shell's builtins run.
  const run = await execa("/bin/sh", ["-s"], {
    input: script,
    env: { PATH: "/nonexistent" },
    extendEnv: false,
    stripFinalNewline: false,
  });
  assert.equal(run.stdout, `${grep.stdout}\n`);
  assert.deepEqual(parseSchedulers(run.stdout), parseSchedulers(grep.stdout));
});
