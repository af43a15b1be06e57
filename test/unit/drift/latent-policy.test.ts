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

it("text and Markdown say what the next boot changes, never declared X live X, and count it apart", () => {
  const [latentItem, driftItem] = items();
  const report = reportOf([
    { name: "web-01", host: "web-01", status: "drift", durationMs: 1, drift: [driftItem!] },
    { name: "web-02", host: "web-02", status: "clean", durationMs: 1, drift: [latentItem!] },
  ]);
  assert.deepEqual(
    [report.summary.clean, report.summary.driftItems, report.summary.latentItems],
    [1, 1, 1],
  );
  // The remediation is the event's: change the file before the boot, not "apply sysctl -p".
  assert.match(latentItem!.remediation, /before rebooting/);
  const options = { color: false, verbose: false };
  const text = renderText(report, options);
  assert.match(
    text,
    /web-02: clean, 1 latent, .*\n {2}\[medium\] sysctl net\.core\.somaxconn: 4096 now; the next boot sets net\.core\.somaxconn to 1024, as \/etc\/sysctl\.d\/99-old\.conf:3 says: .* \(a ticket, not counted as drift\)/,
  );
  assert.doesNotMatch(text, /declared 4096, live 4096/);
  assert.match(text, /2 nodes: 1 clean, 1 drifted, 1 drift item, 1 latent/);
  // Drift that is also latent says what the boot then does.
  assert.match(text, /then the next boot sets vm\.swappiness to 1024/);
  const markdown = renderMarkdown(report, options);
  assert.match(
    markdown,
    /`4096` \(the next boot sets `net\.core\.somaxconn` to `1024`, as `\/etc\/sysctl\.d\/99-old\.conf:3` says: /,
  );
  assert.match(markdown, /\| 2 \| 1 \| 1 \| 0 \| 0 \| 0 \| 1 \| 0 \| 1 \|/);
});
