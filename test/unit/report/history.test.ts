import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  annotateNode,
  emptyHistory,
  nextHistory,
  parseHistory,
  serializeHistory,
  type AuditHistory,
} from "../../../src/report/history.js";
import type { DriftItem, NodeResult } from "../../../src/report/schema.js";
import { latentKernel, report } from "../propose/fixtures.js";

const T1 = "2026-12-01T10:00:00.000Z";
const T2 = "2026-12-01T11:00:00.000Z";
const T3 = "2026-12-01T12:00:00.000Z";

const item = (fingerprint: string): DriftItem => ({
  domain: "sysctl",
  key: "vm.swappiness",
  declared: "10",
  live: "60",
  severity: "medium",
  fingerprint,
  source: { file: "fleet.yaml", line: 3 },
  remediation: "",
  onDrift: "accept",
  path: ["system", "sysctl_parameters", "vm.swappiness"],
});
const node = (name: string, status: NodeResult["status"], drift: DriftItem[] = []): NodeResult => ({
  name,
  host: name,
  status,
  durationMs: 1,
  drift,
});

/** One run: annotate with the history, then keep what the next run reads (through its text). */
function run(history: AuditHistory, startedAt: string, nodes: NodeResult[]) {
  const annotated = nodes.map((n) => annotateNode(n, history, startedAt));
  const next = parseHistory(
    serializeHistory(nextHistory(history, { startedAt, manifestRevision: null, nodes: annotated })),
  );
  assert.ok(typeof next !== "string", String(next));
  return { annotated, next };
}

describe("audit history", () => {
  it("says since when a node is dark and for how many runs, and forgets it once audited", () => {
    const drift = [item("00000000000000aa")];
    const one = run(emptyHistory(), T1, [node("web-01", "drift", drift), node("web-03", "clean")]);
    assert.equal(one.annotated[0]!.drift[0]!.firstSeen, T1);
    assert.equal(one.annotated[1]!.unaudited, undefined);

    const two = run(one.next, T2, [node("web-01", "drift", drift), node("web-03", "unreachable")]);
    assert.deepEqual(two.annotated[1]!.unaudited, { since: T1, runs: 1 });

    const three = run(two.next, T3, [
      node("web-01", "drift", drift),
      node("web-03", "unreachable"),
    ]);
    assert.deepEqual(three.annotated[1]!.unaudited, { since: T1, runs: 2 });
    assert.equal(three.annotated[0]!.drift[0]!.firstSeen, T1);

    const four = run(three.next, "2026-12-01T13:00:00.000Z", [node("web-03", "clean")]);
    assert.deepEqual(four.next.nodes.get("web-03"), {
      lastAudited: "2026-12-01T13:00:00.000Z",
      unauditedRuns: 0,
    });
  });

  it("counts a run once when it is read again (propose run twice on one report)", () => {
    const one = run(emptyHistory(), T1, [node("db-01", "clean")]);
    const two = run(one.next, T2, [node("db-01", "error")]);
    const again = run(two.next, T2, [node("db-01", "error")]);
    assert.deepEqual(again.annotated[0]!.unaudited, { since: T1, runs: 1 });
    assert.equal(serializeHistory(again.next), serializeHistory(two.next));
  });

  it("marks a node never audited, and keeps drift of nodes and domains the run did not look at", () => {
    const first = run(emptyHistory(), T1, [
      node("new-01", "unreachable"),
      node("web-01", "drift", [item("00000000000000bb")]),
    ]);
    assert.deepEqual(first.annotated[0]!.unaudited, { since: T1, runs: 1, never: true });
    // web-01 down in the next run: its drift's first sighting stays for when it is back.
    const second = run(first.next, T2, [node("web-01", "unreachable")]);
    assert.equal(second.next.drift.get("00000000000000bb")?.firstSeen, T1);
    // Audited and the drift gone: forgotten.
    const third = run(second.next, T3, [node("web-01", "clean")]);
    assert.equal(third.next.drift.size, 0);
  });

  it("keeps a node's declared prints and revision from its last audit while it is dark; a dirty tree's revision is not kept", () => {
    const REV = "c".repeat(40);
    const prints = "AAAAAAAAbbbbbbbb";
    const keep = (history: AuditHistory, startedAt: string, nodes: NodeResult[], dirty = false) =>
      nextHistory(history, {
        startedAt,
        manifestRevision: REV,
        ...(dirty && { manifestDirty: true as const }),
        nodes: nodes.map((n) => annotateNode(n, history, startedAt)),
      });
    const h1 = keep(emptyHistory(), T1, [{ ...node("web-01", "clean"), declared: prints }]);
    const h2 = keep(h1, T2, [node("web-01", "unreachable")]);
    const entry = parseHistory(serializeHistory(h2));
    assert.ok(typeof entry !== "string");
    assert.deepEqual(entry.nodes.get("web-01"), {
      lastAudited: T1,
      revision: REV,
      declared: prints,
      unauditedSince: T1,
      unauditedRuns: 1,
    });
    const h3 = keep(h2, T3, [{ ...node("web-01", "clean"), declared: prints }], true);
    assert.deepEqual(h3.nodes.get("web-01"), {
      lastAudited: T3,
      unauditedRuns: 0,
      declared: prints,
    });
  });

  it("keeps a drift's cause for the runs after (an unknown one with its why, a latent item's), bounded as read", () => {
    const runtime = { kind: "runtime" as const, evidence: "a runtime write such as sysctl -w" };
    const one = run(emptyHistory(), T1, [
      node("web-01", "drift", [
        { ...item("00000000000000c1"), cause: runtime },
        { ...item("00000000000000c2"), cause: { kind: "unknown", evidence: "nothing" } },
        { ...item("00000000000000c3"), cause: runtime, latentPolicy: "ticket" },
      ]),
    ]);
    assert.deepEqual(one.next.drift.get("00000000000000c1"), {
      node: "web-01",
      domain: "sysctl",
      firstSeen: T1,
      cause: runtime,
    });
    assert.deepEqual(one.next.drift.get("00000000000000c2")?.cause, {
      kind: "unknown",
      evidence: "nothing",
    });
    assert.deepEqual(one.next.drift.get("00000000000000c3")?.cause, runtime);
    const long = parseHistory(
      serializeHistory({
        nodes: new Map(),
        drift: new Map([
          [
            "00000000000000c4",
            {
              node: "web-01",
              domain: "sysctl",
              firstSeen: T1,
              cause: { kind: "runtime", evidence: "x".repeat(5000) },
            },
          ],
        ]),
      }),
    );
    assert.ok(typeof long !== "string");
    assert.match(
      long.drift.get("00000000000000c4")!.cause!.evidence,
      /^x{900,}… \(5000 characters\)$/,
    );
  });

  it("a latent item is first seen once: later runs keep its date while the event's value stays, whatever else its words say", () => {
    const db = (becomes: string, because?: string) => {
      const drift = latentKernel(becomes);
      if (because) drift.finding.latent!.because = because;
      return report({ "db-01": [drift] }).nodes.filter((n) => n.name === "db-01");
    };
    const firstSeen = (r: { annotated: NodeResult[] }) => r.annotated[0]!.drift[0]!.firstSeen;
    const one = run(emptyHistory(), T1, db("6.1.0-30-amd64"));
    const two = run(
      one.next,
      T2,
      db("6.1.0-30-amd64", "6.1.0-30-amd64 installed; /run/reboot-required"),
    );
    assert.deepEqual([firstSeen(one), firstSeen(two)], [T1, T1]);
    // Another kernel installed since: another coming value, first seen now.
    assert.equal(firstSeen(run(two.next, T3, db("6.1.0-31-amd64"))), T3);
  });

  it("refuses text that is not a history, naming what is wrong", () => {
    assert.match(String(parseHistory("{")), /not JSON/);
    assert.match(String(parseHistory('{"version":2}')), /not a Quartermaster audit history/);
    assert.match(String(parseHistory('{"version":1,"nodes":[]}')), /"nodes" is not an object/);
  });

  it("leaves out a malformed entry only, naming it", () => {
    const read = parseHistory(
      '{"version":1,"nodes":{"__proto__":{"unauditedRuns":-1},"web-01":{"unauditedRuns":2}}}',
    );
    assert.ok(typeof read !== "string");
    assert.deepEqual(read.dropped, ['"nodes" entry "__proto__" is malformed']);
    assert.deepEqual([...read.nodes.keys()], ["web-01"]);
    const ok = parseHistory('{"version":1,"nodes":{"__proto__":{"unauditedRuns":0}}}');
    assert.ok(typeof ok !== "string" && ok.nodes.has("__proto__"));
  });
});
