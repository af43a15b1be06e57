import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseMaintenance } from "../../../src/audit/maintenance.js";

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
