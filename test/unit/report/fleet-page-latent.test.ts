import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LatentEvent } from "../../../src/domains/cause.js";
import { renderFleetPage } from "../../../src/report/fleet-page/page.js";
import { emptyRuns } from "../../../src/report/runs.js";
import type { DriftItem, NodeResult } from "../../../src/report/schema.js";
import { reportOf } from "../../support/reports.js";

/** A clean node holding one latent item set off by `after`. */
const holding = (name: string, after: LatentEvent, domain: DriftItem["domain"]): NodeResult => ({
  name,
  host: name,
  status: "clean",
  durationMs: 1,
  drift: [
    {
      domain,
      key: `${name}-key`,
      declared: "30d",
      live: "30d",
      severity: "high",
      fingerprint: Buffer.from(name).toString("hex").padEnd(16, "0"),
      source: { file: "fleet.yaml", line: 1 },
      remediation: "",
      onDrift: "ticket",
      path: [domain, name],
      latent: { after, becomes: "x", because: "y" },
      latentPolicy: "ticket",
    },
  ],
});

const heading = (nodes: NodeResult[]) =>
  /<h2>([^<]*)\(<span id="latent-count">/.exec(renderFleetPage(reportOf(nodes), emptyRuns()))![1];

describe("the fleet page's latent heading", () => {
  it("is worded for the latent events present: an expiry is no reboot or restart", () => {
    const reboot = holding("web-01", "reboot", "sysctl");
    const expiry = holding("web-02", "expiry", "certificates");
    assert.equal(heading([reboot]), "What the next reboot or restart changes ");
    assert.equal(heading([expiry]), "What expires before the next audit ");
    assert.equal(
      heading([reboot, expiry]),
      "What the next reboot or restart changes, and what expires before the next audit ",
    );
  });
});
