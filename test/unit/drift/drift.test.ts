import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseShard, shardOf } from "../../../src/audit/fleet.js";
import { driftSignature, latentSignature, setSignature } from "../../../src/manifest/signature.js";
import { findWaiver, waiverExpired } from "../../../src/drift/waivers.js";
import { Waiver } from "../../../src/manifest/schema.js";

describe("fingerprints and signatures", () => {
  it("are stable for the same (node, domain, key, declared, live) and change with any of them", () => {
    const base = driftSignature("sysctl", "vm.swappiness", "10", "60", "web-01");
    assert.match(base, /^[0-9a-f]{16}$/);
    assert.equal(driftSignature("sysctl", "vm.swappiness", "10", "60", "web-01"), base);
    for (const other of [
      driftSignature("sysctl", "vm.swappiness", "10", "60", "web-02"),
      driftSignature("sysctl", "vm.swappiness", "10", "61", "web-01"),
      driftSignature("sysctl", "vm.swappiness", "11", "60", "web-01"),
    ])
      assert.notEqual(other, base);
    assert.equal(
      driftSignature("sysctl", "vm.swappiness", "10", "60"),
      driftSignature("sysctl", "vm.swappiness", "10", "60"),
    );
  });

  it("a latent-only item's fingerprint changes with the value the event gives it, never a drift's", () => {
    const latent = (becomes: string) =>
      latentSignature("kernel", "kernel_version", "6.1.0-28", { after: "reboot", becomes }, "c-1");
    assert.equal(latent("6.1.0-30"), latent("6.1.0-30"));
    assert.notEqual(latent("6.1.0-31"), latent("6.1.0-30"));
    for (const drift of [
      driftSignature("kernel", "kernel_version", "6.1.0-28", "6.1.0-28", "c-1"),
      driftSignature("kernel", "kernel_version", "6.1.0-28", "6.1.0-30", "c-1"),
    ])
      assert.notEqual(latent("6.1.0-30"), drift);
  });

  it("are the values stored in tickets, PR markers and reports", () => {
    assert.equal(
      driftSignature("sysctl", "vm.swappiness", "10", "60", "web-01"),
      "10f59e3b73f85df3",
    );
    assert.equal(driftSignature("sysctl", "vm.swappiness", "10", "60"), "d61c6357cb9c6d57");
    const declared = { mode: "0644", x: [1, null] };
    assert.equal(driftSignature("files", "/etc/a", declared, null, "web-01"), "e3ff27313e391386");
    assert.equal(driftSignature("files", "/etc/a", declared, null), "2d474f143ef487bb");
    assert.equal(setSignature(["b", "a"]), "0473ef2dc0d324ab");
  });
});

describe("waivers", () => {
  const waiver = (w: Record<string, unknown>) => Waiver.parse({ reason: "known", ...w });
  const now = new Date("2026-06-15T12:00:00Z");
  const subject = { node: "web-01", domain: "sysctl", key: "net.core.somaxconn", live: "65535" };

  it("match by node, domain and key globs, and by a pinned live value", () => {
    assert.ok(findWaiver([waiver({ node: "web-*", key: "net.core.*" })], subject, now));
    assert.ok(findWaiver([waiver({ live: 65535 })], subject, now));
    assert.equal(findWaiver([waiver({ live: 1024 })], subject, now), undefined);
    assert.equal(findWaiver([waiver({ node: "db-*" })], subject, now), undefined);
  });

  it("an expired waiver no longer applies; a date runs to the end of that day (UTC)", () => {
    assert.ok(findWaiver([waiver({ expires: "2026-06-15" })], subject, now));
    assert.equal(findWaiver([waiver({ expires: "2026-06-14" })], subject, now), undefined);
    assert.equal(waiverExpired(waiver({ expires: "2026-06-15T11:00:00Z" }), now), true);
  });
});

describe("shards", () => {
  it("parse k/n and place each node by its name alone", () => {
    assert.deepEqual(parseShard("2/3"), { index: 2, count: 3 });
    for (const bad of ["0/3", "4/3", "a/b", "3"]) assert.equal(parseShard(bad), undefined, bad);
    const names = Array.from({ length: 300 }, (_, i) => `node-${i}`);
    const counts = [1, 2, 3].map((k) => names.filter((n) => shardOf(n, 3) === k).length);
    assert.equal(
      counts.reduce((a, b) => a + b),
      300,
    );
    assert.ok(
      counts.every((c) => c > 60),
      `uneven shards: ${counts}`,
    );
    assert.equal(shardOf("node-7", 3), shardOf("node-7", 3));
  });
});
