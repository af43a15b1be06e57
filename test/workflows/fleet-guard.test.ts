// The drift operators fear most, through the shipped workflows as a fleet repository runs them: a
// small fleet behind one jump host, adopted (its declarations are what `snapshot` printed of it),
// then scheduled runs on faked days (libfaketime under every step) with changes made as operators
// and the OS make them, in the firewall, sshd, accounts, mounts and certificates domains: a port
// opened with `nft add rule` and never saved, the rules file edited and not loaded, sshd's
// configuration edited and reloaded, a drop-in not yet applied, a user added to the sudo group and
// a sudoers.d file, a shell changed, an fstab line edited and not remounted, a mount remounted by
// hand, a certificate renewed by its cron job under a new intermediate, another one running out.
// A reviewer merges pull requests (one left open, which the next run closes), each merge followed
// by refresh-prs. Every pull
// request is asserted: kind, the files it changes, title and the lines of its body that decide it.
// Needs root (test hosts, nft, mounts), sudo and openssl.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { execa } from "execa";
import { stringify } from "yaml";
import { cliSnapshot } from "../support/cli.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";
import { assertNoSelfChange } from "../support/pull-text.js";
import {
  FAKETIME_LIBRARY,
  failures,
  startFleetForge,
  type FleetForge,
  type FleetSite,
  type Pull,
} from "./fleet-site.js";
import {
  bastionSshConfig,
  fleetWeek,
  hasLines,
  inTitleOrder,
  logTime,
  M,
  refreshed,
  row,
  summary,
  TICKET_MERGE,
  ticketFile,
} from "./fleet-week.js";

const EDGE = ["edge-01", "edge-02"];
const STORE = "store-01";
const NODES = [...EDGE, STORE];
const RULES_FILE = "/etc/nftables.conf";
const RULES = ["ct state established,related accept", 'iifname "lo" accept', "tcp dport 22 accept"];
const rulesFile = (rules: readonly string[]) =>
  `flush ruleset\ntable inet filter {\n  chain input {\n    type filter hook input priority 0; policy drop;\n${rules.map((r) => `    ${r}\n`).join("")}  }\n}\n`;
const DROP_INS = "/etc/ssh/sshd_config.d";
const CERT = "/etc/ssl/edge/edge.pem";
const FSTAB = [
  "# store-01's own",
  "tmpfs /srv/data tmpfs nosuid,nodev 0 0",
  "tmpfs /srv/cache tmpfs nosuid,nodev 0 0",
  "",
].join("\n");

/** A CA and the leaf certificates it signs, made with openssl in `dir`. */
async function certificateAuthority(dir: string, name: string) {
  const key = path.join(dir, `${name}.key`);
  const cert = path.join(dir, `${name}.pem`);
  await execa("openssl", [
    ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
    ...["-keyout", key, "-out", cert, "-days", "3650", "-subj", `/O=Acme/CN=Acme ${name}`],
  ]);
  let leaves = 0;
  return {
    /** A certificate for edge.example.net valid `days` from `hoursAgo` hours ago, PEM. */
    async leaf(days: number, hoursAgo = 0): Promise<string> {
      const base = path.join(dir, `${name}-leaf-${++leaves}`);
      await execa("openssl", [
        ...["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
        ...["-keyout", `${base}.key`, "-out", `${base}.csr`, "-subj", "/CN=edge.example.net"],
      ]);
      await writeFile(`${base}.ext`, "subjectAltName=DNS:edge.example.net\n");
      await execa(
        "faketime",
        [
          `-${hoursAgo} hours`,
          ...["openssl", "x509", "-req", "-in", `${base}.csr`, "-CA", cert, "-CAkey", key],
          ...["-CAcreateserial", "-days", String(days), "-extfile", `${base}.ext`],
          ...["-out", `${base}.pem`],
        ],
        {},
      );
      return readFile(`${base}.pem`, "utf8");
    },
  };
}

describe("the drift operators fear most, through the shipped workflows", () => {
  let fleet: TestFleet;
  let forge: FleetForge;
  let site: FleetSite;
  let week: ReturnType<typeof fleetWeek>;
  let renewed = "";
  let renewedLater = "";

  before(async () => {
    assert.ok(existsSync(FAKETIME_LIBRARY), "libfaketime (apt-get install faketime)");
    fleet = await startFleet(
      [
        { name: "bastion", sshdOptions: ["MaxStartups 4:50:8"] },
        // The edge hosts' /etc is their own: operators edit it, useradd and usermod replace files.
        ...EDGE.map((name) => ({
          name,
          behind: "bastion",
          writable: ["/etc"],
          // The drop-ins come first: sshd keeps a keyword's first value.
          sshdOptions: [
            `Include ${DROP_INS}/*.conf`,
            "X11Forwarding no",
            "PasswordAuthentication no",
          ],
          files: {
            "/var/log/dpkg.log": { contents: "" },
            "/var/log/apt/history.log": { contents: "" },
          },
        })),
        {
          name: STORE,
          behind: "bastion",
          files: {
            "/etc/fstab": { contents: FSTAB },
            "/var/log/dpkg.log": { contents: "" },
            "/var/log/apt/history.log": { contents: "" },
          },
        },
      ],
      { prefix: "qmg" },
    );
    const r1 = await certificateAuthority(fleet.dir, "R1");
    const r2 = await certificateAuthority(fleet.dir, "R2");
    // edge-01's certificate has two months left; edge-02's a day and a half more than the 30 days
    // declared, so it runs short during the week.
    const certs = { "edge-01": await r1.leaf(60), "edge-02": await r1.leaf(33, 12) };
    renewed = await r2.leaf(90);
    renewedLater = await r2.leaf(90);
    for (const name of EDGE) {
      await writeFile(path.join(fleet.dir, `${name}.pem`), certs[name as keyof typeof certs]);
      await fleet.exec(
        name,
        [
          `printf '%s\\n' '${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh' > /etc/sudoers.d/qm-audit`,
          "chmod 0440 /etc/sudoers.d/qm-audit",
          `mkdir -p ${DROP_INS} /etc/ssl/edge /etc/systemd/system/sysinit.target.wants`,
          `cp ${fleet.dir}/${name}.pem ${CERT}`,
          `printf '%s' '${rulesFile(RULES)}' > ${RULES_FILE}`,
          `nft -f ${RULES_FILE}`,
          ": > /etc/systemd/system/sysinit.target.wants/nftables.service",
          "useradd -M -s /bin/sh deploy",
          // Everything as it was long before this boot.
          `touch -d 2020-01-01 ${RULES_FILE} ${CERT} /etc/passwd /etc/group /etc/sudoers.d/qm-audit`,
        ].join(" && "),
      );
      // sshd starts after its files were written: nothing is pending a restart.
      await fleet.reboot(name);
    }
    await fleet.exec(
      STORE,
      [
        "mount -t tmpfs -o mode=755 tmpfs /srv",
        "mkdir /srv/data /srv/cache",
        "mount -t tmpfs -o nosuid,nodev tmpfs /srv/data",
        "mount -t tmpfs -o nosuid,nodev tmpfs /srv/cache",
        "touch -d 2020-01-01 /etc/fstab",
      ].join(" && "),
    );
    // Adopted: what snapshot prints of each role's first host, declared for the role.
    const taken = async (name: string, declared: string) =>
      cliSnapshot(
        name,
        `ssh: { user: ${AUDIT_USER}, connect_timeout: 60, timeout: 120${EDGE.includes(name) ? ", become: sudo" : ""} }\n${declared}`,
        fleet.sshConfig,
        ["--packages", "none"],
      );
    const edge = await taken(
      "edge-01",
      `sshd: { settings: {} }\naccounts: { users: {}, sudo: [] }\nnetworking: { firewall: {} }\ncertificates: [{ path: ${path.dirname(CERT)}, valid_for: 30d }]\n`,
    );
    const store = await taken(STORE, "storage: { mounts: [] }\n");
    forge = await startFleetForge({
      prefix: "qm-fleet-guard-",
      sshKey: await readFile(fleet.identityFile, "utf8"),
      sshConfig: bastionSshConfig(fleet, NODES),
      manifests: {
        "fleet.yaml": [
          "ssh: { user: qm-audit, connect_timeout: 60, timeout: 120 }",
          "audit: { max_unaudited: 0 }",
          // A rule persisted in the rules file is accepted; one added at runtime is a ticket.
          "policy:",
          "  firewall: { on_drift: { persisted: accept, otherwise: ticket } }",
          "",
        ].join("\n"),
        "groups/edge.yaml": stringify({
          networking: (edge.networking as Record<string, unknown>) ?? {},
          sshd: edge.sshd,
          accounts: edge.accounts,
          certificates: edge.certificates,
        }),
        "groups/store.yaml": stringify({
          storage: { mounts: (store.storage as { mounts: unknown }).mounts },
        }),
        ...Object.fromEntries(
          NODES.map((name) => [
            `nodes/${name}.yaml`,
            [
              `host: ${name}.fleet.internal`,
              `groups: [${name.slice(0, name.indexOf("-"))}]`,
              ...(EDGE.includes(name) ? ["ssh: { become: sudo }"] : []),
              "",
            ].join("\n"),
          ]),
        ),
        known_hosts: await readFile(fleet.knownHosts, "utf8"),
      },
    });
    site = await forge.site("fleet");
    site.double.addCollaborator("fleet-reviewer", "write");
    week = fleetWeek(site, fleet);
  });

  after(async () => {
    await forge?.stop();
    await fleet?.stop();
  });

  /**
   * sshd's configuration reloaded a minute after the operators' evening edits, as `systemctl reload
   * ssh` does it: SIGHUP to the listener, which executes itself again and rewrites its pid file. The
   * pid file is dated on the runs' clock, as the edits are.
   */
  const reloadSshd = async (name: string) => {
    const pidFile = `${fleet.dir}/hosts/${name}/sshd.pid`;
    await fleet.exec(name, `kill -HUP "$(cat ${pidFile})"`);
    // The re-executed listener removes the pid file, then writes it again once it listens.
    await fleet.exec(
      name,
      `until [ -s ${pidFile} ] && [ ${pidFile} -nt ${fleet.dir}/hosts/${name}/sshd_config ] && [ "$(find ${pidFile} -newermt '-5 seconds')" ]; do sleep 0.1; done; touch -d @${week.evening + 60} ${pidFile}`,
    );
  };
  /** Writes `text` into a host's file as an operator's tool does, an hour before the next run. */
  let written = 0;
  const write = async (name: string, file: string, text: string, mode = "0644") => {
    const from = path.join(fleet.dir, `written-${++written}`);
    await writeFile(from, text);
    await fleet.exec(
      name,
      `cat ${from} > ${file} && chmod ${mode} ${file} && touch -d @${week.evening} ${file}`,
    );
  };
  /** The evening's time as a cause line's head writes it, and as its evidence does. */
  const minute = () => `${logTime(week.evening, " ").slice(0, 16)} UTC`;
  const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace(".000Z", "Z");
  const byTitle = (pulls: readonly Pull[], title: RegExp) => {
    const found = pulls.filter((p) => title.test(p.title));
    assert.equal(
      found.length,
      1,
      `one PR titled ${title}: ${pulls.map((p) => p.title).join("; ")}`,
    );
    return found[0]!;
  };
  /** The reviewer merges each open PR, each merge followed by refresh-prs, which changes nothing. */
  const mergeEach = async (pulls: readonly Pull[]) => {
    for (const pull of pulls) {
      const merged = await site.mergeAndRefresh(pull.number);
      await week.say(`refresh after #${pull.number}`, merged.step);
      refreshed(merged);
      assert.match(merged.step.stdout, /^nothing to propose: every pull request is up to date$/m);
    }
  };
  const ticketMerge = (pull: Pull) => hasLines(pull, [TICKET_MERGE]);
  const EDGE_YAML = "groups/edge.yaml";
  const STORE_YAML = "groups/store.yaml";
  const line = (file: string, pattern: RegExp) =>
    String(
      readFileSync(path.join(forge.work, "seed", M, file), "utf8")
        .split("\n")
        .findIndex((l) => pattern.test(l)) + 1,
    );

  test("a week of the drift operators fear, in the firewall, sshd, accounts, mounts and certificates: each PR a ticket with the host's own words, its cause and its remediation; every merge refreshed", async () => {
    await week.logged(async () => {
      // Day 1: the fleet as adopted audits clean.
      week.dawn(1);
      const day1 = await week.scheduledOn(1);
      await week.say("day 1", day1.propose);
      assert.equal(failures(day1.result), "");
      assert.match(day1.propose.stdout, /^nothing to propose: every pull request is up to date$/m);

      // An operator opens a port on edge-01 at runtime and never saves it; another adds one to
      // edge-02's rules file and does not load it. sshd on edge-01 gets PasswordAuthentication yes
      // from a drop-in, reloaded; edge-02 a drop-in not applied yet. store-01's fstab line for
      // /srv/data gains noexec, not remounted.
      week.dawn(2);
      await fleet.exec("edge-01", "nft add rule inet filter input tcp dport 8080 accept");
      await write("edge-02", RULES_FILE, rulesFile([...RULES, "tcp dport 9090 accept"]));
      await write("edge-01", `${DROP_INS}/50-incident.conf`, "PasswordAuthentication yes\n");
      await reloadSshd("edge-01");
      await write("edge-02", `${DROP_INS}/60-x11.conf`, "X11Forwarding yes\n");
      await write(STORE, "/etc/fstab", FSTAB.replace("nosuid,nodev 0", "nosuid,nodev,noexec 0"));

      // Day 2: five tickets, each in its domain's words: what runs now, what the next boot or
      // restart does, what changed it and when.
      const day2 = await week.scheduledOn(2);
      await week.say("day 2", day2.propose);
      assert.equal(failures(day2.result), "");
      const pulls2 = await site.openPulls();
      const fstabLatent = byTitle(pulls2, /latent mounts/);
      const password = byTitle(pulls2, /passwordauthentication/);
      const bootLoads = byTitle(pulls2, /latent firewall/);
      const opened = byTitle(pulls2, /^Remediate firewall/);
      const x11 = byTitle(pulls2, /x11forwarding/);
      assert.deepEqual(
        inTitleOrder(summary(pulls2)),
        inTitleOrder([
          [
            "ticket",
            [ticketFile("store", fstabLatent)],
            "Remediate latent mounts drift on store-01: /srv/data:options: reboot pending, becomes rw,nosuid,nodev,noexec",
          ],
          [
            "ticket",
            [ticketFile("edge", password)],
            "Remediate sshd drift from one file edit on edge-01: passwordauthentication: no → yes",
          ],
          [
            "ticket",
            [ticketFile("edge", bootLoads)],
            "Remediate latent firewall drift on edge-02: inet filter input: tcp dport 9090 accept: reboot pending",
          ],
          [
            "ticket",
            [ticketFile("edge", opened)],
            "Remediate firewall drift on edge-01: inet filter input: tcp dport 8080 accept: not in networking.firewall → in the running ruleset",
          ],
          [
            "ticket",
            [ticketFile("edge", x11)],
            "Remediate latent sshd drift on edge-02: x11forwarding: restart pending, becomes yes",
          ],
        ]),
      );
      for (const pull of pulls2) {
        week.seenOn(pull, 2);
        ticketMerge(pull);
      }
      hasLines(fstabLatent, [
        "Quartermaster found **high** latent mounts drift on 1 node: The next boot mounts `/srv/data` with options `rw,nosuid,nodev,noexec`, as `/etc/fstab:2` says.",
        `Edited at ${minute()}: \`/etc/fstab modified at ${iso(week.evening)}, owner root, since this node's last audit: /etc/fstab:2 mounts it at the next boot\`.`,
        "Remediation: Make /etc/fstab (or the mount unit) mount what the manifest declares, or remove its line, before rebooting; or declare what it mounts.",
        `| \`store-01\` | \`/srv/data:options\` | \`rw,nosuid,nodev\` | \`rw,nosuid,nodev\` (\`reboot pending, becomes rw,nosuid,nodev,noexec\`) | \`${M}/${STORE_YAML}:${line(STORE_YAML, /^ {6}options:$/)}\` |`,
      ]);
      // Reloaded, sshd applies the drop-in now: drift, not a restart pending.
      hasLines(password, [
        "Quartermaster found **high** sshd drift on 1 node: `passwordauthentication` is declared `no` but the host runs `yes`.",
        `Edited at ${minute()}: \`${DROP_INS}/50-incident.conf:1 sets PasswordAuthentication yes; ${DROP_INS}/50-incident.conf modified at ${iso(week.evening)}, owner root, since the last audit\`.`,
        "Remediation: Set the keyword in sshd_config (or the sshd_config.d file that sets it) to the declared value, check it with `sshd -t`, and restart sshd; or accept the live value into the manifest.",
        row(
          "edge-01",
          "passwordauthentication",
          "no",
          "yes",
          `${EDGE_YAML}:${line(EDGE_YAML, /passwordauthentication:/)}`,
        ),
      ]);
      hasLines(bootLoads, [
        "Quartermaster found **high** latent firewall drift on 1 node: The next boot loads `inet filter input: tcp dport 9090 accept` (`/etc/nftables.conf`).",
        // Who put it there: the rules file's edit.
        `Edited at ${minute()}: \`${RULES_FILE} loads it at the next boot: ${RULES_FILE} changed at ${iso(week.evening)}, owner root\`.`,
        "Remediation: Write the live rules into the boot-time rules file (`nft list ruleset` shows them) or remove them at runtime, so the next boot loads what the manifest declares.",
      ]);
      hasLines(opened, [
        "Quartermaster found **high** firewall drift on 1 node: `inet filter input: tcp dport 8080 accept` is in the host's ruleset, and networking.firewall does not declare it.",
        "Then the next boot drops `inet filter input: tcp dport 8080 accept` (`/etc/nftables.conf does not load it`).",
        "Remediation: Remove the rule added by hand, or write it into the boot-time rules file (/etc/nftables.conf) and declare it; reload with `nft -f`. For legacy iptables, save it (`netfilter-persistent save`, or `iptables-save` into the saved rules) and declare it.",
      ]);
      assert.ok(
        opened.lines.some((l) =>
          /^Changed at runtime: `\/etc\/nftables\.conf does not load it and has not changed since this node's last audit at \S+: added at runtime \(nft add, insert or an iptables-nft command\)`\.$/.test(
            l,
          ),
        ),
        opened.lines.join("\n"),
      );
      // edge-02's sshd was not reloaded, but under load it rewrites its pid file seconds after its
      // start, which then reads as a reload.
      assert.ok(
        ["started", "was reloaded"].some((read) =>
          x11.lines.includes(
            `Quartermaster found **high** latent sshd drift on 1 node: A reload or restart of sshd applies \`x11forwarding\` \`yes\`, as \`${DROP_INS}/60-x11.conf:1 sets X11Forwarding yes (changed at ${new Date(week.evening * 1000).toISOString()}, after sshd ${read})\` says: make the file set the declared value, or declare its value, before sshd is reloaded or restarted.`,
          ),
        ),
        x11.lines.join("\n"),
      );
      hasLines(x11, [
        `Edited at ${minute()}: \`${DROP_INS}/60-x11.conf:1 sets X11Forwarding yes; ${DROP_INS}/60-x11.conf modified at ${iso(week.evening)}, owner root, since the last audit\`.`,
        "Remediation: Make the sshd configuration set the declared value (check with `sshd -T`) before sshd is reloaded or restarted, or declare the value it now sets.",
      ]);
      // The reviewer records every ticket.
      await mergeEach(pulls2);

      // edge-01's operator removes the rule. On edge-01 deploy joins the sudo group and gets a
      // sudoers.d file; on edge-02 its shell becomes bash. /srv/cache is remounted read-only.
      week.dawn(3);
      await fleet.exec(
        "edge-01",
        "nft delete rule inet filter input handle $(nft -a list chain inet filter input | sed -n 's/.*dport 8080 accept # handle //p')",
      );
      await fleet.exec(
        "edge-01",
        `usermod -aG sudo deploy && touch -d @${week.evening} /etc/group`,
      );
      await write("edge-01", "/etc/sudoers.d/deploy", "deploy ALL=(ALL) NOPASSWD: ALL\n", "0440");
      await fleet.exec(
        "edge-02",
        `usermod -s /bin/bash deploy && touch -d @${week.evening} /etc/passwd`,
      );
      await fleet.exec(STORE, "mount -o remount,ro /srv/cache");

      // Day 3: one ticket per edited file; the remount is runtime; edge-02's certificate has a day
      // and a half more than declared: latent until the next audit. The port's ticket resolves.
      const day3 = await week.scheduledOn(3);
      await week.say("day 3", day3.propose);
      assert.equal(failures(day3.result), "");
      const pulls3 = await site.openPulls();
      const sudoGroup = byTitle(pulls3, /accounts group:sudo/);
      const shell = byTitle(pulls3, /user:deploy:shell/);
      const remount = byTitle(pulls3, /\/srv\/cache/);
      const expiring = byTitle(pulls3, /latent certificates/);
      const sudoers = byTitle(pulls3, /sudo:deploy/);
      assert.deepEqual(
        inTitleOrder(summary(pulls3)),
        inTitleOrder([
          [
            "ticket",
            [
              ticketFile("edge", { ...sudoGroup, files: sudoGroup.files.slice(0, 1) }),
              ticketFile("edge", { ...sudoGroup, files: sudoGroup.files.slice(1) }),
            ],
            "Remediate drift from one file edit on edge-01: accounts group:sudo and 1 more",
          ],
          [
            "ticket",
            [ticketFile("edge", shell)],
            "Remediate accounts drift from one file edit on edge-02: user:deploy:shell: /bin/sh → /bin/bash",
          ],
          [
            "ticket",
            [ticketFile("store", remount)],
            "Remediate mounts drift on store-01: /srv/cache:options: rw,nosuid,nodev → ro,nosuid,nodev",
          ],
          [
            "ticket",
            [ticketFile("edge", expiring)],
            "Remediate latent certificates drift on edge-02: /etc/ssl/edge/edge.pem: expiry pending",
          ],
          [
            "ticket",
            [ticketFile("edge", sudoers)],
            "Remediate accounts drift from one file edit on edge-01: sudo:deploy ALL=(ALL) NOPASSWD: ALL: not in accounts.sudo → deploy ALL=(ALL) NOPASSWD: ALL",
          ],
          [
            "resolve",
            [opened.files[0]!, opened.files[0]!.replace("/edge/", "/edge/resolved/")].sort(),
            `Resolve remediation ticket ${path.basename(opened.files[0]!, ".yaml")}: drift gone from edge-01`,
          ],
        ]),
      );
      const ACCOUNTS_REMEDIATION =
        "Remediation: Remove an unauthorized user, group member, sudo right or authorized key and find out who added it; or accept the live state into accounts.";
      hasLines(sudoGroup, [
        "Quartermaster found **high** accounts drift on 1 node: 2 items differ, listed below.",
        `Edited at ${minute()}: \`/etc/group modified at ${iso(week.evening)}, owner root, since the last audit\`.`,
        ACCOUNTS_REMEDIATION,
        `| \`edge-01\` | \`group:sudo\` | \`(none)\` | \`deploy\` (\`added deploy\`) | \`${M}/${EDGE_YAML}:${line(EDGE_YAML, /^ {4}sudo: \[\]$/)}\` |`,
      ]);
      hasLines(shell, [
        "Quartermaster found **high** accounts drift on 1 node: `user:deploy:shell` on the host differs from its declaration in accounts.",
        `Edited at ${minute()}: \`/etc/passwd modified at ${iso(week.evening)}, owner root, since the last audit\`.`,
        ACCOUNTS_REMEDIATION,
      ]);
      hasLines(sudoers, [
        "Quartermaster found **high** accounts drift on 1 node: `sudo:deploy ALL=(ALL) NOPASSWD: ALL` is a sudo right on the host that accounts.sudo does not declare.",
        "Detail: `at /etc/sudoers.d/deploy:1`",
        `Edited at ${minute()}: \`/etc/sudoers.d/deploy modified at ${iso(week.evening)}, owner root, since the last audit: /etc/sudoers.d/deploy:1 holds it\`.`,
        ACCOUNTS_REMEDIATION,
      ]);
      hasLines(remount, [
        "Quartermaster found **high** mounts drift on 1 node: `/srv/cache:options` is declared `rw,nosuid,nodev` but the host runs `ro,nosuid,nodev`.",
        "Then the next boot mounts `/srv/cache` with options `rw,nosuid,nodev`, as `/etc/fstab:3` says.",
        "Remediation: Mount or remount it as the manifest declares, and make /etc/fstab (or its mount unit) say the same; or accept the live mount into the manifest.",
      ]);
      assert.ok(
        remount.lines.some((l) =>
          /^Changed at runtime: `the live mount is not what \/etc\/fstab:3 mounts, and \/etc\/fstab has not changed since this node's last audit at \S+: mounted or remounted since, by hand or by a program`\.$/.test(
            l,
          ),
        ),
        remount.lines.join("\n"),
      );
      assert.ok(
        expiring.lines.some((l) =>
          /^Quartermaster found \*\*high\*\* latent certificates drift on 1 node: `\/etc\/ssl\/edge\/edge\.pem` expires in 30 days \(`\S+`\): under the 30d declared before the next audit \(\S+\)\.$/.test(
            l,
          ),
        ),
        expiring.lines.join("\n"),
      );
      hasLines(expiring, [
        "Remediation: Renew the certificate before the next audit finds it under its declared validity, or lower `valid_for` in the manifest.",
      ]);
      for (const pull of [sudoGroup, shell, remount, expiring, sudoers]) {
        week.seenOn(pull, 3);
        ticketMerge(pull);
      }
      // The reviewer records the tickets and the resolve, the certificate's renewal among them.
      await mergeEach(pulls3);

      // edge-01's certificate is renewed by its cron job, under the CA's new intermediate.
      week.dawn(4);
      await write("edge-01", CERT, renewed);

      // Day 4: edge-02's certificate has aged under the 30 days, as its merged latent ticket said it
      // would: that ticket acknowledges it, no new ticket and no resolve. edge-01's renewal changed
      // the issuer the group pins.
      const day4 = await week.scheduledOn(4);
      await week.say("day 4", day4.propose);
      assert.equal(failures(day4.result), "");
      const pulls4 = await site.openPulls();
      const issuer1 = byTitle(pulls4, /issuer/);
      assert.deepEqual(
        summary(pulls4).map(([kind, , title]) => [kind, title]),
        [
          [
            "ticket",
            "Remediate certificates drift from one file edit on edge-01: /etc/ssl/edge/edge.pem:issuer: O=Acme, CN=Acme R1 → O=Acme, CN=Acme R2",
          ],
        ],
      );
      const expiryTicket = path.basename(expiring.files[0]!, ".yaml");
      const aged = day4.report.nodes
        .find((n) => n.name === "edge-02")!
        .drift.find((d) => d.domain === "certificates" && d.key === CERT)!;
      assert.equal(aged.acknowledgedBy, `ticket ${expiryTicket}`);
      assert.match(aged.detail ?? "", /^29 days left, until \S+: under the 30d declared$/);
      // Nothing changed the file: it aged.
      assert.match(
        aged.cause?.evidence ?? "",
        /^\/etc\/ssl\/edge\/edge\.pem has not changed since this node's last audit at \S+: the certificate only aged$/,
      );
      hasLines(issuer1, [
        'Quartermaster found **high** certificates drift on 1 node: `/etc/ssl/edge/edge.pem:issuer` is declared `"O=Acme, CN=Acme R1"` but the host holds `"O=Acme, CN=Acme R2"`.',
        `Edited at ${minute()}: \`${CERT} changed at ${iso(week.evening)} (since the last audit), owner root\`.`,
        "Remediation: Renew or replace the certificate (keeping its subject, issuer and names), or accept what the host holds into the manifest.",
      ]);
      for (const pull of pulls4) {
        week.seenOn(pull, 4);
        ticketMerge(pull);
      }
      await mergeEach(pulls4);

      // edge-02's certificate is renewed too.
      week.dawn(5);
      await write("edge-02", CERT, renewedLater);

      // Day 5: its expiry ticket resolves; the issuer changed there as well.
      const day5 = await week.scheduledOn(5);
      await week.say("day 5", day5.propose);
      assert.equal(failures(day5.result), "");
      const pulls5 = await site.openPulls();
      assert.deepEqual(
        inTitleOrder(summary(pulls5)),
        inTitleOrder([
          [
            "ticket",
            [ticketFile("edge", byTitle(pulls5, /issuer/))],
            "Remediate certificates drift from one file edit on edge-02: /etc/ssl/edge/edge.pem:issuer: O=Acme, CN=Acme R1 → O=Acme, CN=Acme R2",
          ],
          [
            "resolve",
            [expiring.files[0]!, expiring.files[0]!.replace("/edge/", "/edge/resolved/")].sort(),
            `Resolve remediation ticket ${expiryTicket}: drift gone from edge-02`,
          ],
        ]),
      );
      await mergeEach(pulls5);
      // Every pull request of the week: none says a value became itself.
      assertNoSelfChange(site.double.pulls());
      assert.equal(site.double.issues().length, 1);
      assert.deepEqual(site.double.violations, []);
    });
  });
});
