// Hostile firewall rulesets through the real path (a real sshd host, root through sudo, the real
// CLI): a rule comment, a set element and an interface name holding markup, runner commands and
// control characters are reported escaped; a ruleset of 100,000 rules is bounded on the host and
// in the report (the first 500 items, one entry counting the rest), one node's problem only.
// Needs root.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import type { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";
import { removeTree, writeTree } from "../support/tree.js";

const HOSTILE = "fwh-01";
const FLOOD = "fwf-01";
const FLOOD_RULES = 100_000;
const COMMENT = "<!-- x -->\n::error::pwned ##[group]\u001b[2J";
// 15 bytes, the most an interface name holds.
const IFNAME = "<b>::x\u0007##[a";
const ELEMENT = "<!--::set\u001b";

const hostileRuleset = JSON.stringify({
  nftables: [
    { add: { table: { family: "inet", name: "t" } } },
    {
      add: { set: { family: "inet", table: "t", name: "names", type: "ifname", elem: [ELEMENT] } },
    },
    {
      add: {
        chain: {
          family: "inet",
          table: "t",
          name: "c",
          type: "filter",
          hook: "input",
          prio: 0,
          policy: "accept",
        },
      },
    },
    {
      add: {
        rule: {
          family: "inet",
          table: "t",
          chain: "c",
          comment: COMMENT,
          expr: [
            { match: { op: "==", left: { meta: { key: "iifname" } }, right: IFNAME } },
            { accept: null },
          ],
        },
      },
    },
  ],
});

const sudoers = {
  "/etc/sudoers.d/qm-audit": {
    contents: `${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh\n`,
    mode: "0440",
  },
};

describe("hostile firewall rulesets", () => {
  let fleet: TestFleet;
  let manifests: string;

  before(async () => {
    fleet = await startFleet(
      [
        {
          name: HOSTILE,
          files: { ...sudoers, "/etc/qm-hostile.json": { contents: hostileRuleset } },
        },
        { name: FLOOD, files: sudoers },
      ],
      { prefix: "qmfh" },
    );
    await fleet.exec(HOSTILE, "nft -j -f /etc/qm-hostile.json");
    await fleet.exec(
      FLOOD,
      `{ echo 'table inet flood { chain c {'; i=0; while [ $i -lt ${FLOOD_RULES} ]; do echo "tcp dport $((i % 65536)) ip saddr 10.$((i / 65536)).0.1 accept"; i=$((i+1)); done; echo '}'; echo '}'; } > /tmp/qm-flood.nft && nft -f /tmp/qm-flood.nft && rm /tmp/qm-flood.nft`,
    );
    const node = (host: string) =>
      `host: ${host}\nssh:\n  become: sudo\nnetworking:\n  firewall:\n    inet filter: {}\n`;
    manifests = await writeTree({
      "fleet.yaml": "{}\n",
      [`nodes/${HOSTILE}.yaml`]: node(HOSTILE),
      [`nodes/${FLOOD}.yaml`]: node(FLOOD),
    });
  });

  after(async () => {
    await fleet?.stop();
    if (manifests) await removeTree(manifests);
  });

  const audit = (...more: string[]) =>
    runCli(["audit", "--manifests", manifests, "--ssh-config", fleet.sshConfig, ...more]);

  it("host text is kept exactly in JSON and escaped in text and Markdown; the flood is bounded", async () => {
    const out = `${manifests}/report.json`;
    const result = await audit("--format", "json", "--out", out);
    assert.equal(result.exitCode, 1, result.stderr);
    const report = JSON.parse(await readFile(out, "utf8")) as Report;
    const hostile = report.nodes.find((n) => n.name === HOSTILE)!;
    assert.deepEqual(
      hostile.drift.map((d) => d.key),
      [
        "inet filter",
        "inet t",
        "inet t c",
        `inet t c: iifname "${IFNAME}" accept comment "${COMMENT}"`,
        "inet t @names",
        `inet t @names: "${ELEMENT}"`,
      ],
    );
    const flood = report.nodes.find((n) => n.name === FLOOD)!;
    assert.equal(flood.status, "drift");
    assert.equal(flood.drift.length, 500);
    const reasons = (flood.unknown ?? []).map((u) => u.reason).join("\n");
    assert.match(reasons, /the ruleset past the probe's bound: not read/);
    assert.match(reasons, /\d+ more drift items than the 500 a domain lists per node: not listed/);

    for (const format of ["text", "markdown"]) {
      const shown = await audit("--format", format);
      assert.equal(shown.exitCode, 1, shown.stderr);
      assert.doesNotMatch(shown.stdout, /[\u0007\u001b]/, `${format}: no raw control character`);
      assert.doesNotMatch(shown.stdout, /^\s*::error::/m, `${format}: no runner command`);
      assert.doesNotMatch(shown.stdout, /^\s*##\[/m, `${format}: no runner command`);
      if (format === "markdown") assert.ok(!shown.stdout.includes("<!--"), "no raw comment opener");
    }
  });
});
