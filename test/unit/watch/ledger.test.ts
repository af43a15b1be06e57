import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { driftSignature } from "../../../src/drift/drift.js";
import type { DriftItem } from "../../../src/report/schema.js";
import { DriftLedger } from "../../../src/watch/ledger.js";

const item = (
  domain: DriftItem["domain"],
  key: string,
  live: string,
  acknowledged?: boolean,
): DriftItem => ({
  domain,
  key,
  declared: "want",
  live,
  severity: "high",
  fingerprint: driftSignature(domain, key, "want", live, "web-01"),
  source: { file: "nodes/web-01.yaml", line: 1 },
  remediation: "",
  onDrift: "accept",
  path: [],
  ...(acknowledged ? { acknowledged } : {}),
});

describe("the drift ledger", () => {
  it("reports drift once, however many checks see it, and its resolution once", () => {
    const ledger = new DriftLedger();
    const files = new Set(["files"] as const);
    const drift = item("files", "/etc/a", "x");
    assert.deepEqual(ledger.update(files, [drift]), { appeared: [drift], resolved: [] });
    assert.deepEqual(ledger.update(files, [drift]), { appeared: [], resolved: [] });
    assert.deepEqual(ledger.update(files, []), { appeared: [], resolved: [drift] });
    assert.deepEqual(ledger.update(files, []), { appeared: [], resolved: [] });
  });

  it("a check of some domains leaves drift in the others alone", () => {
    const ledger = new DriftLedger();
    const sysctl = item("sysctl", "vm.swappiness", "60");
    ledger.update(new Set(["sysctl"] as const), [sysctl]);
    assert.deepEqual(ledger.update(new Set(["files"] as const), []), {
      appeared: [],
      resolved: [],
    });
    assert.deepEqual(ledger.items(), [sysctl]);
  });

  it("a changed live value is a new drift and the old one resolved", () => {
    const ledger = new DriftLedger();
    const domains = new Set(["files"] as const);
    const first = item("files", "/etc/a", "x");
    const second = item("files", "/etc/a", "y");
    ledger.update(domains, [first]);
    assert.deepEqual(ledger.update(domains, [second]), { appeared: [second], resolved: [first] });
  });

  it("acknowledged drift is held but does not make the node unhealthy", () => {
    const ledger = new DriftLedger();
    ledger.update(new Set(["files"] as const), [item("files", "/etc/a", "x", true)]);
    assert.equal(ledger.items().length, 1);
    assert.equal(ledger.hasUnacknowledged(), false);
  });
});
