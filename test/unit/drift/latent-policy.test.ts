import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { domainByName } from "../../../src/domains/registry.js";
import { toDriftItems } from "../../../src/drift/drift.js";
import { renderMarkdown } from "../../../src/report/formats/markdown.js";
import { renderText } from "../../../src/report/formats/text.js";
import { countsAsDrift, ReportTally } from "../../../src/report/tally.js";
import { reportOf } from "../../support/reports.js";
import { fleet } from "../propose/fixtures.js";

const node = fleet.nodes[0]!;
const latent = {
  after: "reboot" as const,
  becomes: "1024",
  because: "/etc/sysctl.d/99-old.conf:3",
};
const clean = {
  key: "net.core.somaxconn",
  declared: "4096",
  live: "4096",
  path: ["system", "sysctl_parameters", "net.core.somaxconn"],
  latent,
};
const drifted = { ...clean, key: "vm.swappiness", live: "60", declared: "10" };

const items = (policy?: "drift" | "ticket" | "ignore") =>
  toDriftItems(node, domainByName("sysctl")!, [clean, drifted], {
    policy: policy ? { sysctl: { latent: policy } } : {},
    waivers: [],
    tickets: [],
    now: new Date(),
  });

describe("policy.latent", () => {
  it("ticket, the default: reported as a ticket, neither node drift nor exit bit 1", () => {
    const [item, other] = items();
    assert.deepEqual(
      [item!.latentPolicy, item!.onDrift, item!.latent],
      ["ticket", "ticket", latent],
    );
    assert.equal(countsAsDrift(item!), false);
    // Drift that is also latent is drift now: the policy is about latent-only items.
    assert.deepEqual([other!.latentPolicy, countsAsDrift(other!)], [undefined, true]);
    const tally = ReportTally.of([
      { name: "n", host: "h", status: "clean", durationMs: 1, drift: [item!] },
    ]);
    assert.equal(tally.driftFound, false);
  });

  it("drift: a latent-only item sets exit bit 1; ignore: it is not reported", () => {
    const [item] = items("drift");
    assert.deepEqual([item!.latentPolicy, countsAsDrift(item!)], ["drift", true]);
    assert.deepEqual(
      items("ignore").map((i) => i.key),
      ["vm.swappiness"],
    );
  });
});

it("text and Markdown say what it will become, and when", () => {
  const report = reportOf([
    { name: "web-01", host: "web-01", status: "drift", durationMs: 1, drift: items() },
  ]);
  const options = { color: false, verbose: false };
  assert.match(
    renderText(report, options),
    /will become 1024 at reboot: \/etc\/sysctl\.d\/99-old\.conf:3 \(latent: ticket, not counted as drift\)/,
  );
  assert.match(
    renderMarkdown(report, options),
    /`will become 1024 at reboot: \/etc\/sysctl\.d\/99-old\.conf:3`/,
  );
});
