import assert from "node:assert/strict";
import { after, test } from "node:test";
import { waiverExpired } from "../../../src/drift/waivers.js";
import { Waiver } from "../../../src/manifest/schema.js";
import { byNodeName } from "../../../src/report/merge.js";

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
