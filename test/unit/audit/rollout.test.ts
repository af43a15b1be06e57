// Pending rollouts from the audit history: the prints a node's last audit recorded of its declared
// values, against a drift item the sysctl domain finds now.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { attachCauses } from "../../../src/audit/cause/attach.js";
import { parseHostRecord } from "../../../src/audit/cause/record.js";
import {
  declaredPrints,
  PRINT_CHARS,
  rolloutCause,
  splitPrints,
} from "../../../src/audit/cause/rollout.js";
import type { Finding } from "../../../src/domains/domain.js";
import { sysctl } from "../../../src/domains/sysctl/index.js";

const REV_A = "a".repeat(40);
const REV_B = "b".repeat(40);
const KEY = "net.core.somaxconn";

/** What the node's last audit, at REV_A, recorded. */
const before = (declared: Record<string, string>) => ({
  prints: splitPrints(declaredPrints([{ path: sysctl.specPath, declared }])),
  revision: REV_A,
});

/** The sysctl domain's finding for KEY, declared `want`, live `got`. */
function finding(want: string, got: string): Finding {
  const live = { runtime: new Map([[KEY, got]]), persisted: new Map(), boot: undefined };
  const [found] = sysctl.compare({ [KEY]: want }, live as never);
  assert.ok(found, "the domain finds drift");
  return found;
}

describe("rollout cause", () => {
  it("a live value that is the one declared at the last audit, declared otherwise now, is a rollout of the revision audited now", () => {
    const cause = rolloutCause(finding("8192", "4096"), before({ [KEY]: "4096" }), REV_B);
    assert.deepEqual(cause, {
      kind: "rollout",
      evidence:
        "the live value is the one declared at revision aaaaaaaaaaaa (this node's last audit); the manifests changed it by revision bbbbbbbbbbbb",
      commit: REV_B,
      group: `rollout ${REV_B}`,
    });
  });

  it("a live value never declared, or a declared value that did not move, is no rollout", () => {
    assert.equal(
      rolloutCause(finding("8192", "1024"), before({ [KEY]: "4096" }), REV_B),
      undefined,
    );
    assert.equal(
      rolloutCause(finding("8192", "4096"), before({ [KEY]: "8192" }), REV_B),
      undefined,
    );
    // The same value under another key is another declaration.
    const other = before({ "net.core.netdev_max_backlog": "4096" });
    assert.equal(rolloutCause(finding("8192", "4096"), other, REV_B), undefined);
  });

  it("without a revision audited now there is no commit to name, so no group either", () => {
    const cause = rolloutCause(
      finding("8192", "4096"),
      { prints: before({ [KEY]: "4096" }).prints },
      null,
    );
    assert.equal(cause?.kind, "rollout");
    assert.equal(cause?.commit, undefined);
    assert.equal(cause?.group, undefined);
    assert.match(cause.evidence, /an uncommitted revision .*changed it since$/);
  });

  it("attachCauses puts a rollout before what the host recorded, and a history entry without prints keeps the host's cause", () => {
    const item = {
      ...finding("8192", "4096"),
      domain: "sysctl" as const,
      cause: { kind: "runtime" as const, evidence: "no persisted file sets it" },
    };
    const record = parseHostRecord([]);
    const [rolled] = attachCauses([item as never], record, {
      node: "web-01",
      before: before({ [KEY]: "4096" }),
      revision: REV_B,
    });
    assert.equal(rolled!.cause?.kind, "rollout");
    const [kept] = attachCauses([item as never], record, { node: "web-01", revision: REV_B });
    assert.equal(kept!.cause?.kind, "runtime");
  });

  it("a runtime write is kept only where the node's last audit declared what is declared now", () => {
    const item = {
      ...finding("8192", "2048"),
      domain: "sysctl" as const,
      cause: { kind: "runtime" as const, evidence: "no persisted file sets it" },
    };
    const record = parseHostRecord([]);
    const ctx = { node: "web-01", revision: REV_B, seen: () => undefined };
    const [kept] = attachCauses([item as never], record, {
      ...ctx,
      before: before({ [KEY]: "8192" }),
    });
    assert.equal(kept!.cause?.kind, "runtime");
    // Declared since that audit: it may have seen this live value as clean.
    const moved = {
      ...ctx,
      before: before({ [KEY]: "4096" }),
      since: Date.UTC(2025, 11, 2, 1),
    };
    assert.deepEqual(attachCauses([item as never], record, moved)[0]!.cause, {
      kind: "unknown",
      evidence:
        "the manifests changed this value since this node's last audit at 2025-12-02T01:00:00.000Z: when the live value changed is not known",
    });
    // An item whose declared value is no declared leaf here (a mount's "mounted", a rule nothing
    // declares) is told by the node's whole declaration: the same, the live value is new.
    const mount = {
      ...item,
      domain: "mounts" as const,
      path: ["mounts", "/srv"],
      declared: "mounted",
    };
    const same = {
      ...ctx,
      before: before({ [KEY]: "8192" }),
      declared: declaredPrints([{ path: sysctl.specPath, declared: { [KEY]: "8192" } }]),
    };
    assert.equal(attachCauses([mount as never], record, same)[0]!.cause?.kind, "runtime");
    const other = {
      ...same,
      declared: declaredPrints([{ path: sysctl.specPath, declared: { [KEY]: "1024" } }]),
    };
    assert.equal(attachCauses([mount as never], record, other)[0]!.cause?.kind, "unknown");
  });

  it("a node's prints are one of PRINT_CHARS characters per declared value, whatever its size", () => {
    const declared = Object.fromEntries(
      Array.from({ length: 40 }, (_, i) => [`net.key${i}`, "x".repeat(i * 100)]),
    );
    const joined = declaredPrints([{ path: sysctl.specPath, declared }]);
    // The map itself and each of its 40 values.
    assert.equal(joined.length, 41 * PRINT_CHARS);
    assert.equal(splitPrints(joined).size, 41);
  });
});
