import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { execa } from "execa";
import {
  MAINTENANCE_AWK,
  maintenanceProbe,
  parseMaintenance,
} from "../../../src/audit/maintenance.js";
import {
  buildProbe,
  newNonce,
  parseContext,
  parseProbeOutput,
  probeContext,
} from "../../../src/probe/script.js";
import { scratchTrees } from "../../support/tree.js";
import { rooted } from "../domains/live-probe.js";

describe("maintenance", () => {
  it("the marker puts a node in maintenance", () => {
    assert.equal(
      parseMaintenance("marker /run/quartermaster/maintenance\n", []),
      "maintenance marker /run/quartermaster/maintenance is present",
    );
  });

  it("a package manager holding its lock file puts a node in maintenance; an unheld lock file does not", () => {
    // stat %d of device 254:1 is 65025; /proc/locks names it fe:01.
    const locks = "/var/lib/dpkg/lock-frontend 65025 131090\n/var/lib/dpkg/lock 65025 131091\n";
    const held =
      "1: POSIX  ADVISORY  WRITE 4242 fe:01:131090 0 EOF\n2: FLOCK  ADVISORY  WRITE 99 fe:01:555 0 EOF\n";
    assert.equal(
      parseMaintenance("", [
        ["locks", locks],
        ["held", held],
      ]),
      "a package manager holds /var/lib/dpkg/lock-frontend",
    );
    assert.equal(
      parseMaintenance("", [
        ["locks", locks],
        ["held", "2: FLOCK  ADVISORY  WRITE 99 fe:01:555 0 EOF\n"],
      ]),
      undefined,
    );
  });

  it("the marker file's first line is the reason, trimmed and capped; an empty marker gives none", () => {
    const marker = "marker /run/quartermaster/maintenance\n";
    assert.equal(
      parseMaintenance(marker, [["reason", "  kernel upgrade, back at 18:00 \nsecond line\n"]]),
      "maintenance marker /run/quartermaster/maintenance is present: kernel upgrade, back at 18:00",
    );
    assert.equal(
      parseMaintenance(marker, [["reason", ""]]),
      "maintenance marker /run/quartermaster/maintenance is present",
    );
    const long = parseMaintenance(marker, [["reason", "x".repeat(600)]])!;
    assert.equal(
      long,
      `maintenance marker /run/quartermaster/maintenance is present: ${"x".repeat(199)}…`,
    );
  });
});

describe("maintenance probe on this host", () => {
  const trees = scratchTrees();

  it("a held package-manager lock is found, and no other lock of the host is sent", async () => {
    const dir = await trees({
      "var/lib/dpkg/lock": "",
      "var/lib/dpkg/lock-frontend": "",
      other: "",
    });
    // Two real locks: one on dpkg's lock file, one on a file that is none of the package managers'.
    const holders = [`${dir}/var/lib/dpkg/lock`, `${dir}/other`].map((file) =>
      // One process holds the lock through its own descriptor: killing it leaves no child holding
      // the pipe open (flock FILE CMD forks CMD, which outlived the kill by its whole sleep).
      execa("sh", ["-c", 'exec 9>>"$1" && flock 9 && echo locked && exec sleep 60', "sh", file], {
        reject: false,
      }),
    );
    try {
      await Promise.all(
        holders.map((holder) => new Promise((resolve) => holder.stdout.once("data", resolve))),
      );
      const nonce = newNonce();
      const ctx = probeContext(nonce, 1024);
      const { script } = buildProbe(nonce, [
        {
          name: "maintenance",
          script: maintenanceProbe("/nonexistent/qm-marker", ctx),
          awk: MAINTENANCE_AWK,
        },
      ]);
      const root = { dir, paths: ["/var/lib/dpkg", "/var/lib/rpm", "/lib/apk"] };
      // The shared awk as the host's (mawk here) and as busybox's (an Alpine host's).
      for (const awk of ["", 'awk() { busybox awk "$@"; }\n']) {
        const { stdout } = await execa("sh", ["-s"], { input: awk + rooted(script, root) });
        const output = parseProbeOutput(stdout.replaceAll(dir, ""), nonce).get("maintenance")!;
        const parts = parseContext(nonce).parts(output.output);
        assert.equal(
          parseMaintenance(output.output, parts),
          "a package manager holds /var/lib/dpkg/lock",
        );
        const held = new Map(parts).get("held")!;
        assert.equal(held.trim().split("\n").length, 1, held);
      }
    } finally {
      for (const holder of holders) holder.kill("SIGKILL");
      await Promise.all(holders);
    }
  });
});
