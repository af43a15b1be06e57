// Legacy iptables on a real sshd test host (its own network namespace, so its own x_tables), through
// the real CLI with `become: sudo`: the host holds only legacy iptables tables (iptables-legacy), saved
// by netfilter-persistent's rules file. Its snapshot audits clean; a rule added at runtime is drift
// with the rule as iptables-save prints it, gone at the next boot (the saved rules do not load it),
// and made at runtime (the saved rules unchanged since the last audit). Needs root.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { stringify } from "yaml";
import { cliSnapshot } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";
import { scheduledRun } from "../support/scheduled-run.js";

const M = "fleet-manifests";
const HOST = "fwl-01";
const SAVED = "/etc/iptables/rules.v4";
const INCIDENT = "-p tcp -m tcp --dport 8080 -j ACCEPT";
const NODE_FILE = `host: ${HOST}\nssh:\n  become: sudo\n`;

let fleet: TestFleet;
const forge = suiteForge({
  token: "ghs_firewall_legacy",
  workPrefix: "qm-firewall-legacy-",
  files: { "README.md": "Fleet manifests.\n", [`${M}/fleet.yaml`]: "{}\n" },
  setup: async (forge) => {
    fleet = await startFleet(
      [
        {
          name: HOST,
          files: {
            "/etc/sudoers.d/qm-audit": {
              contents: `${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh\n`,
              mode: "0440",
            },
            [SAVED]: { contents: "" },
            "/etc/systemd/system/multi-user.target.wants/netfilter-persistent.service": {
              contents: "",
            },
          },
        },
      ],
      { prefix: "qmfwl" },
    );
    // Only legacy tables: nft's own ruleset in the namespace stays empty.
    await fleet.exec(
      HOST,
      [
        "iptables-legacy -A INPUT -i lo -j ACCEPT",
        "iptables-legacy -A INPUT -p tcp --dport 9 -j DROP",
        "iptables-legacy -t nat -A POSTROUTING -o lo -j RETURN",
        `iptables-legacy-save > ${SAVED}`,
      ].join(" && "),
    );
    // The node's declaration: the host's snapshot through the real CLI.
    const spec = (await cliSnapshot(HOST, NODE_FILE, fleet.sshConfig, [
      "--category",
      "firewall",
    ])) as { networking?: { firewall?: Record<string, unknown> } };
    assert.deepEqual(Object.keys(spec.networking?.firewall ?? {}).sort(), [
      "iptables filter",
      "iptables nat",
    ]);
    await forge.pushToMain(
      { [`${M}/nodes/${HOST}.yaml`]: `${NODE_FILE}${stringify({ networking: spec.networking })}` },
      `declare ${HOST}`,
    );
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig);

describe("legacy iptables on a real host", () => {
  it("the snapshot of the host's legacy tables audits clean", async () => {
    // Proposed on, so the history knows this audit: the next one reads causes since it.
    const { report } = await run.auditAndPropose("run-1", 0);
    assert.equal(report.nodes[0]!.status, "clean", JSON.stringify(report.nodes[0]));
  });

  it("a rule added at runtime is drift as iptables-save prints it, gone at reboot, made at runtime", async () => {
    await fleet.exec(HOST, "iptables-legacy -A INPUT -p tcp --dport 8080 -j ACCEPT");
    const { report } = await run.audit("run-2", 1);
    const drift = report.nodes[0]!.drift as unknown as {
      key: string;
      declared: unknown;
      live: unknown;
      latent?: unknown;
      cause?: { kind: string; evidence: string };
    }[];
    assert.deepEqual(
      drift.map((d) => [d.key, d.declared, d.live, d.latent, d.cause?.kind]),
      [
        [
          `iptables filter INPUT: ${INCIDENT}`,
          null,
          INCIDENT,
          { after: "reboot", becomes: null, because: `${SAVED} does not load it` },
          "runtime",
        ],
      ],
    );
    assert.match(
      drift[0]!.cause!.evidence,
      new RegExp(
        `^${SAVED} does not load it and has not changed since this node's last audit at \\S+: added at runtime \\(an iptables command\\)$`,
      ),
    );
  });
});
