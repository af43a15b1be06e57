import assert from "node:assert/strict";
import { after, test } from "node:test";
import { findExpiredWaiver, waiverExpired, waiverWarnings } from "../../../src/drift/waivers.js";
import { DOMAIN_NAMES } from "../../../src/domains/registry.js";
import { waiverProblems } from "../../../src/manifest/waiver-problems.js";
import { Waiver } from "../../../src/manifest/schema.js";
import { byNodeName } from "../../../src/report/merge-reports.js";

const zone = process.env.TZ;
after(() => {
  if (zone === undefined) delete process.env.TZ;
  else process.env.TZ = zone;
});

const waiver = (expires: string) => Waiver.parse({ reason: "known", expires });

test("an expires date-time without an offset is UTC, whatever the runner's time zone", () => {
  for (const tz of ["America/New_York", "Asia/Kolkata", "UTC"]) {
    process.env.TZ = tz;
    const w = waiver("2027-03-31T18:00");
    assert.equal(waiverExpired(w, new Date("2027-03-31T17:59:59Z")), false, tz);
    assert.equal(waiverExpired(w, new Date("2027-03-31T18:00:01Z")), true, tz);
  }
});

test("an expires date runs to the end of that day in UTC", () => {
  process.env.TZ = "Pacific/Auckland";
  assert.equal(waiverExpired(waiver("2027-03-31"), new Date("2027-03-31T23:59:59Z")), false);
  assert.equal(waiverExpired(waiver("2027-03-31"), new Date("2027-04-01T00:00:01Z")), true);
});

test("an expires that is no real time is a manifest error, not a waiver that never expires", () => {
  assert.equal(Waiver.safeParse({ reason: "known", expires: "2027-03-31T99" }).success, false);
});

test("report node order is code-unit order, not the locale's", () => {
  const names = ["b", "B", "a", "A", "é", "e"].map(
    (name) => ({ name }) as Parameters<typeof byNodeName>[0],
  );
  assert.deepEqual(
    names.sort(byNodeName).map((n) => n.name),
    ["A", "B", "a", "b", "e", "é"],
  );
});

test("a waiver that can waive nothing is named, with what it may have meant", () => {
  const waivers = [
    { domain: "sysctlz", reason: "typo" },
    { domain: "files", key: "etc/app.conf", reason: "relative" },
    { domain: "f*", key: "etc/*", reason: "files, firewall or nothing" },
    { domain: "kernel", key: "kernel*", reason: "fine" },
    { domain: "*", key: "etc/x", reason: "some domains have keys like that" },
    { domain: "ports", key: "tpc/22", reason: "typo" },
  ].map((w) => Waiver.parse(w));
  assert.deepEqual(waiverProblems(waivers), [
    {
      index: 0,
      field: "domain",
      message: `waiver domain "sysctlz" matches no domain (${DOMAIN_NAMES.join(", ")})`,
      hint: 'did you mean "sysctl"?',
    },
    {
      index: 1,
      field: "key",
      message: 'waiver key "etc/app.conf" can match no files key: those start with "/"',
    },
    {
      index: 2,
      field: "key",
      message:
        'waiver key "etc/*" can match no files or firewall key: those start with "/" or "ip " or "ip6 " or "inet " or "arp " or "bridge " or "netdev " or "iptables " or "ip6tables "',
    },
    {
      index: 5,
      field: "key",
      message: 'waiver key "tpc/22" can match no ports key: those start with "tcp/" or "udp/"',
    },
  ]);
});

test("a waiver without expiry, or expiring past policy.waivers.max_days, is warned about", () => {
  const now = new Date("2026-12-01T00:00:00Z");
  const waivers = [
    Waiver.parse({ reason: "forever" }),
    Waiver.parse({ reason: "far", expires: "2099-01-01" }),
    Waiver.parse({ reason: "near", expires: "2026-12-31" }),
  ];
  assert.deepEqual(
    waiverWarnings(waivers, 90, now).map((w) => [w.index, w.message]),
    [
      [0, 'waiver "forever" has no expires date: it waives this drift forever'],
      [1, 'waiver "far" expires 2099-01-01, more than policy.waivers.max_days (90) from now'],
    ],
  );
  assert.deepEqual(
    waiverWarnings(waivers, undefined, now).map((w) => w.index),
    [0],
  );
});

test("drift an expired waiver covered is drift again, saying which waiver expired", () => {
  const subject = { node: "web-01", domain: "sysctl", key: "vm.swappiness", live: "60" };
  const waivers = [
    Waiver.parse({ domain: "sysctl", key: "vm.*", reason: "old tuning", expires: "2026-10-31" }),
    Waiver.parse({ domain: "sysctl", key: "vm.*", reason: "tuning", expires: "2026-11-30" }),
  ];
  const now = new Date("2026-12-01T00:00:00Z");
  assert.equal(findExpiredWaiver(waivers, subject, now)?.reason, "tuning");
  assert.equal(findExpiredWaiver(waivers, subject, new Date("2026-10-01T00:00:00Z")), undefined);
  assert.equal(findExpiredWaiver(waivers, { ...subject, domain: "files" }, now), undefined);
});
