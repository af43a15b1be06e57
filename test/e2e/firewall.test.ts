// The firewall on a real sshd test host (its own network namespace, so its own nftables ruleset),
// through the real CLI: a rule added at runtime during an "incident" is drift in nft's words and
// gone at reboot; once a file the rules file includes says it and the rules file is reloaded, the
// next audit sees it persisted, timed by that file;
// accepting it by PR (propose against the git server and the GitHub double, the PR merged) and
// auditing again is clean; a package whose postinst writes an included file and reloads is the
// cause of its rule. Without root the domain is unknown, with its reason. Needs root.
import assert from "node:assert/strict";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import { runCli } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_firewall";
const M = "fleet-manifests";
const HOST = "fw-01";
const RULES_FILE = "/etc/nftables.conf";
const RULES = ["ct state established,related accept", 'iifname "lo" accept', "tcp dport 22 accept"];
const INCIDENT = "tcp dport 8080 accept";
const PKG = "qm-fw-svc";
const PKG_RULE = "tcp dport 9100 accept";
const INCLUDED = "/etc/nftables.d/incident.nft";
const RULES_FILE_TEXT = `flush ruleset\ntable inet filter {\n  chain input {\n    type filter hook input priority 0; policy drop;\n${RULES.map((r) => `    ${r}\n`).join("")}  }\n}\ninclude "/etc/nftables.d/*.nft"\n`;
const declaration = [
  "networking:",
  "  firewall:",
  "    inet filter:",
  "      chains:",
  "        input:",
  "          hook: type filter hook input priority 0",
  "          policy: drop",
  "          rules:",
  ...RULES.map((r) => `            - '${r}'`),
  "",
].join("\n");

let fleet: TestFleet;
let deb = "";

/** A package whose postinst writes its rule into /etc/nftables.d and reloads the rules file. */
async function buildDeb(work: string): Promise<string> {
  const root = path.join(work, PKG);
  await mkdir(path.join(root, "DEBIAN"), { recursive: true });
  await writeFile(
    path.join(root, "DEBIAN/control"),
    `Package: ${PKG}\nVersion: 1.0\nArchitecture: all\nMaintainer: Quartermaster tests <qm@example.invalid>\nDescription: a service opening its port\n`,
  );
  await writeFile(
    path.join(root, "DEBIAN/postinst"),
    `#!/bin/sh\nset -e\nif [ "$1" = configure ]; then echo 'add rule inet filter input ${PKG_RULE}' > /etc/nftables.d/${PKG}.nft; nft -f ${RULES_FILE}; fi\n`,
  );
  await chmod(path.join(root, "DEBIAN/postinst"), 0o755);
  const file = path.join(work, `${PKG}_1.0_all.deb`);
  await execa("dpkg-deb", ["--root-owner-group", "--build", root, file]);
  return file;
}

const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-firewall-",
  files: {
    "README.md": "Fleet manifests.\n",
    // A rule persisted in the rules file is accepted; one added at runtime is a ticket.
    [`${M}/fleet.yaml`]:
      "policy:\n  firewall:\n    on_drift: { persisted: accept, otherwise: ticket }\n",
    [`${M}/nodes/${HOST}.yaml`]: `host: ${HOST}\nssh:\n  become: sudo\n${declaration}`,
    [`${M}/nodes/${HOST}-user.yaml`]: `host: ${HOST}\n${declaration}`,
  },
  setup: async (forge) => {
    deb = await buildDeb(forge.work);
    fleet = await startFleet(
      [
        {
          name: HOST,
          // dpkg's database and logs are the host's own: a package is installed on it.
          writable: ["/var/lib/dpkg", "/var/log"],
          files: {
            "/etc/sudoers.d/qm-audit": {
              contents: `${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh\n`,
              mode: "0440",
            },
            [RULES_FILE]: { contents: RULES_FILE_TEXT },
            "/etc/nftables.d/README": { contents: `Rules files ${RULES_FILE} includes.\n` },
            "/etc/systemd/system/sysinit.target.wants/nftables.service": { contents: "" },
          },
        },
      ],
      { prefix: "qmfw" },
    );
    await fleet.exec(HOST, `nft -f ${RULES_FILE}`);
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig);
const node = (report: { nodes: { name: string }[] }, name: string) =>
  report.nodes.find((n) => n.name === name) as unknown as {
    status: string;
    drift: {
      key: string;
      declared: unknown;
      live: unknown;
      latent?: unknown;
      cause?: { kind: string; evidence: string };
    }[];
    unknown?: { domain: string; reason: string }[];
  };

describe("firewall on a real host", () => {
  it("a clean ruleset audits clean as root; without root the domain is unknown with its reason", async () => {
    // Proposed on, so the history knows this audit: the next one reads causes since it.
    const { report } = await run.auditAndPropose("run-1", 0);
    assert.deepEqual(node(report, HOST).drift, []);
    assert.equal(node(report, HOST).status, "clean");
    assert.deepEqual(node(report, `${HOST}-user`).drift, []);
    assert.deepEqual(node(report, `${HOST}-user`).unknown, [
      {
        domain: "firewall",
        reason:
          "nft could not list the ruleset: listing it needs root (declare ssh: { become: sudo } for this node)",
      },
    ]);
  });

  it("a rule added at runtime is drift in nft's words, gone at the next boot", async () => {
    await fleet.exec(HOST, `nft add rule inet filter input ${INCIDENT}`);
    const { file, report } = await run.audit("run-2", 1);
    assert.deepEqual(
      node(report, HOST).drift.map((d) => [d.key, d.declared, d.live, d.latent, d.cause?.kind]),
      [
        [
          `inet filter input: ${INCIDENT}`,
          null,
          INCIDENT,
          { after: "reboot", becomes: null, because: `${RULES_FILE} does not load it` },
          "runtime",
        ],
      ],
    );
    const text = await runCli(["report", "--report", file, "--format", "text"]);
    assert.ok(
      text.stdout.includes(`the next boot drops inet filter input: ${INCIDENT}`),
      text.stdout,
    );
    assert.ok(
      text.stdout.includes(
        `[high] firewall inet filter input: ${INCIDENT}: declared not in networking.firewall, live in the running ruleset`,
      ),
      text.stdout,
    );
    // The fleet page: the rule as a drift row, and what the next boot does to it.
    const page = (await runCli(["report", "--report", file, "--format", "html"])).stdout;
    // (the page writes a colon as &#58;, so no line of it reads as a runner command)
    const shown = `inet filter input&#58; ${INCIDENT}`;
    assert.ok(page.split(shown).length - 1 >= 2, page);
    assert.ok(page.includes('data-after="reboot"') && page.includes("the next boot drops"), page);
    // The rules file has not changed since the last audit: the host's record says runtime.
    assert.match(
      text.stdout,
      new RegExp(
        `changed at runtime: ${RULES_FILE} does not load it and has not changed since this node's last audit at \\S+: added at runtime`,
      ),
    );
  });

  it("a file the rules file includes written and reloaded: a persisted change; its accept PR merged, the next audit is clean", async () => {
    await fleet.exec(
      HOST,
      `echo 'add rule inet filter input ${INCIDENT}' > ${INCLUDED}\nnft -f ${RULES_FILE}`,
    );
    const { file, report } = await run.audit("run-3", 1);
    const [item, ...more] = node(report, HOST).drift;
    assert.deepEqual(more, []);
    assert.deepEqual(
      [item!.key, item!.latent, item!.cause?.kind],
      [`inet filter input: ${INCIDENT}`, undefined, "persisted"],
    );
    // The file it includes changed since the last audit, and the rules file loads the live rule:
    // persisted, naming the included file.
    assert.match(
      item!.cause?.evidence ?? "",
      new RegExp(`^${RULES_FILE} loads it: ${INCLUDED} changed at \\S+, owner root$`),
    );
    const text = await runCli(["report", "--report", file, "--format", "text"]);
    assert.match(text.stdout, new RegExp(`persisted at [^:]+:\\d\\d UTC: ${RULES_FILE} loads it`));
    await run.propose(["--report", file]);
    const open = forge.double.pulls().filter((p) => p.state === "open");
    assert.equal(open.length, 1, JSON.stringify(open.map((p) => p.title)));
    // The pull request says the item in the ruleset's words.
    assert.ok(
      (open[0]!.body ?? "").includes(
        `\`inet filter input: ${INCIDENT}\` is in the host's ruleset, and networking.firewall does not declare it.`,
      ),
      open[0]!.body ?? "",
    );
    const files = await forge.changedFiles(open[0]!.head);
    assert.deepEqual(files, [`${M}/nodes/${HOST}.yaml`]);
    assert.ok(
      (await forge.fileAt(open[0]!.head, `${M}/nodes/${HOST}.yaml`)).includes(
        `            - ${INCIDENT}\n`,
      ),
    );
    await forge.double.mergePull(open[0]!.number);
    const { report: after } = await run.auditAndPropose("run-4", 0);
    assert.deepEqual(node(after, HOST).drift, []);
    assert.equal(node(after, HOST).status, "clean");
  });

  it("a package whose postinst writes an included rules file and reloads: cause package, naming its configure step", async () => {
    await fleet.exec(HOST, `dpkg -i ${deb} >/dev/null`);
    const { report } = await run.audit("run-5", 1);
    const [item, ...more] = node(report, HOST).drift;
    assert.deepEqual(more, []);
    assert.deepEqual([item!.key, item!.cause?.kind], [`inet filter input: ${PKG_RULE}`, "package"]);
    assert.match(
      item!.cause?.evidence ?? "",
      new RegExp(
        `^${RULES_FILE} loads it: /etc/nftables.d/${PKG}.nft changed at \\S+, while dpkg configured ${PKG} 1\\.0 \\(its maintainer script\\)$`,
      ),
    );
  });
});
