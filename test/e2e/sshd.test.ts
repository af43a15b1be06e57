// The sshd domain through the real CLI on a real sshd test host: `sshd -T` of the configuration the
// listening sshd was started with is the reference. `PasswordAuthentication yes` written to an
// sshd_config.d file while sshd runs is latent until sshd restarts, and drift after it; without
// `become: sudo` the domain is unknown with the reason; host text in a setting is escaped. Needs
// root.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";
import { removeTree, writeTree } from "../support/tree.js";

const HOST = "sshd-01";
const DROP_IN = "/etc/ssh/sshd_config.d/50-incident.conf";
// A user name holding a comment opener, a runner command and an escape: host text in a setting.
const HOSTILE_USER = "<!--x::error::pwned\u001b[2J";

describe("sshd: the effective settings of the running sshd", () => {
  let fleet: TestFleet;
  let manifests: string;

  before(async () => {
    fleet = await startFleet([
      {
        name: HOST,
        // The drop-ins come first, so one may set what the main file sets after them (sshd keeps
        // a keyword's first value).
        sshdOptions: [
          "Include /etc/ssh/sshd_config.d/*.conf",
          "PasswordAuthentication no",
          `AllowUsers ${AUDIT_USER} ${HOSTILE_USER}`,
        ],
        writable: ["/etc/ssh/sshd_config.d"],
        files: {
          "/etc/sudoers.d/qm-audit": {
            contents: `${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh\n`,
            mode: "0440",
          },
        },
      },
    ]);
    const settings = [
      "sshd:",
      "  settings:",
      "    PasswordAuthentication: no",
      "    permitrootlogin: no",
      `    allowusers: ${AUDIT_USER}`,
      "",
    ].join("\n");
    manifests = await writeTree({
      "fleet.yaml": settings,
      [`nodes/${HOST}.yaml`]: `host: ${HOST}\nssh:\n  become: sudo\n`,
      "nodes/unprivileged.yaml": `host: ${HOST}\n`,
    });
  });

  after(async () => {
    await fleet?.stop();
    await removeTree(manifests);
  });

  /** The CLI's audit of one node, in `format`. */
  const auditAs = (node: string, format: string, ...more: string[]) =>
    runCli([
      "audit",
      "--manifests",
      manifests,
      "--ssh-config",
      fleet.sshConfig,
      "--nodes",
      node,
      "--format",
      format,
      ...more,
    ]);
  const audit = async (node: string) => {
    const out = path.join(manifests, `${node}-report.json`);
    const result = await auditAs(node, "json", "--out", out);
    const report = JSON.parse(await readFile(out, "utf8")) as Report;
    return { result, node: report.nodes.find((n) => n.name === node)! };
  };
  /** `sshd -T` on the host, as root, of the test sshd's own configuration: the reference. */
  const reference = async (keyword: string) => {
    const dir = path.join(fleet.dir, "hosts", HOST);
    const out = await fleet.exec(
      HOST,
      `/usr/sbin/sshd -T -f ${dir}/sshd_config -h ${dir}/ssh_host_ed25519_key | grep '^${keyword} '`,
    );
    return out.trim().slice(keyword.length + 1);
  };

  test("without become: sudo the domain is unknown, with the reason", async () => {
    const { node } = await audit("unprivileged");
    assert.deepEqual(node.unknown, [
      {
        domain: "sshd",
        reason: "sshd -T needs root: declare ssh: { become: sudo } for this node",
      },
    ]);
  });

  test("a drop-in written while sshd runs is latent until the restart, and drift after it", async () => {
    const first = await audit(HOST);
    // Only the hostile user, whom the manifest leaves out, drifts.
    assert.deepEqual(
      first.node.drift.map((d) => [d.key, d.declared, d.live, d.latent]),
      [["allowusers", [AUDIT_USER], [AUDIT_USER, HOSTILE_USER], undefined]],
    );

    // Written during an incident; its mtime past the start for certain, whatever the clock says.
    await fleet.exec(
      HOST,
      `printf 'PasswordAuthentication yes\\n' > ${DROP_IN} && touch -d @$(( $(date +%s) + 5 )) ${DROP_IN}`,
    );
    assert.equal(await reference("passwordauthentication"), "yes");
    const latent = await audit(HOST);
    const item = latent.node.drift.find((d) => d.key === "passwordauthentication");
    assert.deepEqual(
      [item?.declared, item?.live, item?.latent?.after, item?.latent?.becomes],
      ["no", "no", "restart", "yes"],
    );
    assert.match(item!.latent!.because, /50-incident\.conf:1 sets PasswordAuthentication yes/);
    assert.equal(latent.result.exitCode, 1, latent.result.stderr);

    // The file as last written before the restart, not in the future.
    await fleet.exec(HOST, `touch ${DROP_IN}`);
    await fleet.reboot(HOST);
    const drift = await audit(HOST);
    const now = drift.node.drift.find((d) => d.key === "passwordauthentication");
    assert.deepEqual(
      [now?.declared, now?.live, now?.latent, now?.cause?.kind, now?.cause?.evidence],
      [
        "no",
        await reference("passwordauthentication"),
        undefined,
        // An audit without history: when the file changed is not known.
        "unknown",
        `${DROP_IN}:1 sets PasswordAuthentication yes; with no audit history, when ${DROP_IN} changed is not known`,
      ],
    );
  });

  test("the text and Markdown reports escape host text in a setting", async () => {
    const text = await auditAs(HOST, "text");
    assert.match(text.stdout, /allowusers/);
    assert.doesNotMatch(text.stdout, /\u001b/, "no raw escape reaches the terminal");
    assert.doesNotMatch(text.stdout, /^\s*::error::/m, "no line reads as a runner command");
    const markdown = await auditAs(HOST, "markdown");
    assert.ok(!markdown.stdout.includes("<!--x"), "the comment opener is not raw Markdown");
    assert.doesNotMatch(markdown.stdout, /\u001b/);
  });

  test("a huge include is bounded: the keyword it floods is unknown, the rest still compared", async () => {
    // 3,000 AllowUsers lines, each a line of sshd -T; comments holding markup are never sent.
    await fleet.exec(
      HOST,
      `awk 'BEGIN { for (i = 0; i < 3000; i++) print "# <!-- ::error::x " i "\\nAllowUsers u" i }' > /etc/ssh/sshd_config.d/60-huge.conf`,
    );
    const { node } = await audit(HOST);
    assert.deepEqual(node.unknown, [
      {
        domain: "sshd",
        reason: "sshd -T prints more than 500 lines: allowusers is cut, not compared",
      },
    ]);
    assert.deepEqual(
      node.drift.map((d) => d.key),
      ["passwordauthentication"],
    );
  });
});
