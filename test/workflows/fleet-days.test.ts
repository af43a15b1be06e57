// The shipped workflows as a fleet repository runs them, over eight scheduled runs on eight faked
// days (libfaketime under every step of the runs): the four callers docs/actions.md shows, the
// packed release installed by action.yml, 24 real sshd hosts in three roles (one a systemd host)
// behind one jump host (`MaxStartups 4:50:8`), the real git server and the GitHub double. Between
// runs the hosts and the operators change things as they do, each change dated the evening before
// the run that finds it (a kernel last month's apt upgrade installed, a manifest change merged
// before the hosts roll it out, a persisted sysctl file written and extended, a `sysctl -w`, an apt
// upgrade replacing a conffile on every db host, a newer kernel installed for the next boot, a
// library replaced under a running service, hosts going dark), and a reviewer merges and closes
// pull requests, each merge followed by refresh-prs. Every pull request is asserted: kind, the
// files it changes, title and the lines of its body that decide it.
// Needs root (test hosts), gcc (the replaced library) and sudo (the systemd host's audit).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { release } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { buildLibrary, type TestLibrary } from "../support/library.js";
import { assertNoSelfChange } from "../support/pull-text.js";
import {
  FAKETIME_LIBRARY,
  failures,
  startFleetForge,
  type FleetForge,
  type FleetSite,
} from "./fleet-site.js";
import {
  ACCEPT_MERGE,
  bastionSshConfig,
  fleetWeek,
  hasLines,
  logTime,
  M,
  pageLink,
  refreshed,
  row,
  summary,
  TICKET_MERGE,
  ticketFile,
} from "./fleet-week.js";

/** `count` hosts of a role: `web-01`, `web-02`, … */
const role = (name: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${name}-${String(i + 1).padStart(2, "0")}`);
// The issue's fleet: 24 hosts, a web group of nine, eight db hosts, seven cache hosts.
const WEB = role("web", 9);
const DB = role("db", 8);
const CACHE = role("cache", 7);
const NODES = [...WEB, ...DB, ...CACHE];
// The web hosts that go dark on day 7, two of the nine.
const DARK = ["web-03", "web-09"];
// A real systemd host: acme-cached.service maps libacmecache.so.1, which an upgrade replaces.
const SYSTEMD_HOST = "cache-07";
const CACHED = "acme-cached.service";
const DB_SYSCTL = "/etc/sysctl.d/90-db.conf";
const TUNE_FILE = "/etc/sysctl.d/99-tune.conf";
// The web group's tcp_fin_timeout after the change the team merges on day 1.
const ROLLED_OUT = 30;
// The hosts share this machine's kernel. The cache group still declares the one last month's
// update replaced; apt installs a newer one beside the running one during the week.
const RUNNING = release();
const PREVIOUS = "6.1.0-28-amd64";
const NEWER = RUNNING.replace(/^(\d+)\.(\d+)/, (_, major: string) => `${Number(major) + 1}.0`);
/** This machine's boot, which the test hosts share, in epoch seconds. */
const BOOTED_AT = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))![1]);
/** A package apt installs (no `from`) or upgrades, as `name:arch`. */
type AptChange = { package: string; from?: string; to: string };
/**
 * Dates dpkg.log and apt's history.log `at` (epoch seconds), as the host's clock would have when
 * the lines appended to them were written: the probe reads no log unchanged since the last audit.
 */
const logsDated = (at: number) => `touch -d @${at} /var/log/dpkg.log /var/log/apt/history.log`;

/** What dpkg.log and apt's history.log say when alice's `apt-get -y upgrade` makes `changes`. */
const aptUpgrade = (at: number, changes: readonly AptChange[]) => {
  const installs = changes.filter((c) => c.from === undefined);
  const upgrades = changes.filter((c) => c.from !== undefined);
  return {
    dpkg: changes
      .map(
        (c) =>
          `${logTime(at, " ")} ${c.from === undefined ? "install" : "upgrade"} ${c.package} ${c.from ?? "<none>"} ${c.to}\n`,
      )
      .join(""),
    history: [
      "",
      `Start-Date: ${logTime(at - 5, "  ")}`,
      "Commandline: apt-get -y upgrade",
      "Requested-By: alice (1000)",
      ...(installs.length
        ? [`Install: ${installs.map((c) => `${c.package} (${c.to}, automatic)`).join(", ")}`]
        : []),
      ...(upgrades.length
        ? [`Upgrade: ${upgrades.map((c) => `${c.package} (${c.from}, ${c.to})`).join(", ")}`]
        : []),
      `End-Date: ${logTime(at + 5, "  ")}`,
      "",
    ].join("\n"),
  };
};
/** The logs of alice's `apt-get -y upgrade` installing `kernel`. */
const aptInstall = (kernel: string, at: number) =>
  aptUpgrade(at, [{ package: `linux-image-${kernel}:amd64`, to: `${kernel}-1` }]);
// Ten minutes or more before the boot, half a minute into a minute: apt's start and end share it.
const INSTALLED_AT = Math.floor((BOOTED_AT - 600) / 60) * 60 + 30;
const LAST_MONTH = aptInstall(RUNNING, INSTALLED_AT);

// The db hosts' server package and its conffile, which the db group declares. Its upgrade raises
// max_connections.
const ACME_DB = "acme-db";
const DB_CONF = "/etc/default/acme-db";
const dbConf = (maxConnections: number) =>
  `# Acme DB, as ${ACME_DB} ships it\nmax_connections = ${maxConnections}\nshared_buffers = 128MB\n`;
const md5 = (text: string) => createHash("md5").update(text).digest("hex");
/** dpkg's status with acme-db `version` installed, its conffile as `conf` ships it. */
const withAcmeDb = (status: string, version: string, conf: string) =>
  [
    status.trimEnd(),
    "",
    `Package: ${ACME_DB}`,
    "Status: install ok installed",
    "Priority: optional",
    "Section: database",
    "Installed-Size: 12",
    "Maintainer: Acme Ops <ops@acme.example>",
    "Architecture: all",
    `Version: ${version}`,
    "Conffiles:",
    ` ${DB_CONF} ${md5(conf)}`,
    "Description: Acme's database server",
    "",
  ].join("\n");

// The live values the web hosts take from one sysctl.d file on day 7: the group's somaxconn and
// a keepalive key each web node declares in its own file.
const TUNED = { "net.core.somaxconn": 2048, "net.ipv4.tcp_keepalive_probes": 5 };

/** The web group's file, declaring `finTimeout` and `somaxconn`. */
const webGroup = (finTimeout: number, somaxconn: number) =>
  [
    "# Front-end web servers.",
    "system:",
    "  sysctl_parameters:",
    `    net.ipv4.tcp_fin_timeout: ${finTimeout}`,
    `    net.core.somaxconn: ${somaxconn}`,
    "networking:",
    "  listening_ports: [tcp/22]",
    "",
  ].join("\n");

describe("a fleet repository's scheduled runs, merges and refreshes through the shipped workflows", () => {
  let fleet: TestFleet;
  let forge: FleetForge;
  let site: FleetSite;
  // The hosts' values as they start: what the manifests declare at first.
  let finTimeout = 0;
  let keepaliveTime = 0;
  let keepaliveIntvl = 0;
  let somaxconn = 0;
  let keepaliveProbes = 0;
  // This machine's dpkg status, which the db hosts' own adds acme-db to.
  let machineStatus = "";
  let library: TestLibrary | undefined;
  let week: ReturnType<typeof fleetWeek>;

  before(async () => {
    assert.ok(existsSync(FAKETIME_LIBRARY), "libfaketime (apt-get install faketime)");
    fleet = await startFleet(
      [
        // The bastion drops unauthenticated connections past 4 at random, all past 8.
        { name: "bastion", sshdOptions: ["MaxStartups 4:50:8"] },
        ...WEB.map((name) => ({
          name,
          behind: "bastion",
          ...(name === "web-03" ? { listeners: ["tcp/8080"] } : { writable: ["/etc/sysctl.d"] }),
        })),
        // acme-db 1.0-1 installed, its conffile as it shipped it; their own package logs.
        ...DB.map((name) => ({
          name,
          behind: "bastion",
          ...(name === "db-01" && { writable: ["/etc/sysctl.d"] }),
          files: {
            [DB_CONF]: { contents: dbConf(100) },
            "/var/log/dpkg.log": { contents: "" },
            "/var/log/apt/history.log": { contents: "" },
          },
          dpkgStatus: (real: string) => {
            machineStatus = real;
            return withAcmeDb(real, "1.0-1", dbConf(100));
          },
        })),
        // Last month's update: apt installed the running kernel, then the hosts booted into it.
        ...CACHE.map((name) => ({
          name,
          behind: "bastion",
          // The systemd host's dpkg file lists: the library package's, written when it is upgraded.
          writable: ["/boot", ...(name === SYSTEMD_HOST ? ["/var/lib/dpkg/info"] : [])],
          files: {
            [`/boot/vmlinuz-${RUNNING}`]: { contents: "kernel\n" },
            "/var/log/dpkg.log": { contents: LAST_MONTH.dpkg },
            "/var/log/apt/history.log": { contents: LAST_MONTH.history },
            // The systemd host's units are read as root (the processes' maps).
            ...(name === SYSTEMD_HOST && {
              "/etc/sudoers.d/qm-audit": {
                contents: "qm-audit ALL=(root) NOPASSWD: /bin/sh\n",
                mode: "0440",
              },
            }),
          },
          ...(name === SYSTEMD_HOST && { systemd: true }),
        })),
      ],
      { prefix: "qmd" },
    );
    library = await buildLibrary(fleet.dir, "libacmecache.so.1");
    await writeFile(
      path.join(fleet.dir, CACHED),
      `[Unit]\nDescription=Acme cache\nDefaultDependencies=no\n\n[Service]\nEnvironment=LD_PRELOAD=${library.path}\nExecStart=/bin/sleep infinity\n`,
    );
    await fleet.exec(
      SYSTEMD_HOST,
      `cp ${fleet.dir}/${CACHED} /etc/systemd/system/ && systemctl daemon-reload && systemctl start ${CACHED}`,
    );
    const live = async (key: string) =>
      Number((await fleet.exec("db-01", `cat /proc/sys/${key.replaceAll(".", "/")}`)).trim());
    finTimeout = await live("net.ipv4.tcp_fin_timeout");
    keepaliveTime = await live("net.ipv4.tcp_keepalive_time");
    keepaliveIntvl = await live("net.ipv4.tcp_keepalive_intvl");
    somaxconn = await live("net.core.somaxconn");
    keepaliveProbes = await live("net.ipv4.tcp_keepalive_probes");
    assert.ok(finTimeout !== ROLLED_OUT && keepaliveTime !== 600 && keepaliveIntvl !== 30);
    assert.ok(somaxconn !== TUNED["net.core.somaxconn"]);
    assert.ok(keepaliveProbes !== TUNED["net.ipv4.tcp_keepalive_probes"]);
    forge = await startFleetForge({
      prefix: "qm-fleet-days-",
      sshKey: await readFile(fleet.identityFile, "utf8"),
      sshConfig: bastionSshConfig(fleet, NODES),
      manifests: {
        "fleet.yaml": [
          // Through the jump host a node's banner waits for the hop's whole login.
          "ssh: { user: qm-audit, connect_timeout: 60, timeout: 120 }",
          // No node may go unaudited: a dark host fails the scheduled run (exit bit 8).
          "audit: { max_unaudited: 0 }",
          // A kernel a package transaction installed before the boot is a planned upgrade.
          "policy:",
          "  kernel: { on_drift: { package: accept, otherwise: ticket } }",
          "",
        ].join("\n"),
        "groups/web.yaml": webGroup(finTimeout, somaxconn),
        "groups/db.yaml": [
          "system:",
          "  sysctl_parameters:",
          `    net.ipv4.tcp_keepalive_time: ${keepaliveTime}`,
          `    net.ipv4.tcp_keepalive_intvl: ${keepaliveIntvl}`,
          "networking:",
          "  listening_ports: [tcp/22]",
          "packages:",
          `  installed_manifest: { ${ACME_DB}: "1.0-1" }`,
          "files:",
          `  - { path: ${DB_CONF}, contents: ${JSON.stringify(dbConf(100))} }`,
          "",
        ].join("\n"),
        "groups/cache.yaml": [
          "system:",
          `  kernel_version: ${PREVIOUS}`,
          "networking:",
          "  listening_ports: [tcp/22]",
          "",
        ].join("\n"),
        ...Object.fromEntries(
          NODES.map((name) => [
            `nodes/${name}.yaml`,
            [
              `host: ${name}.fleet.internal`,
              `groups: [${name.slice(0, name.indexOf("-"))}]`,
              ...(WEB.includes(name)
                ? [
                    "system:",
                    "  sysctl_parameters:",
                    `    net.ipv4.tcp_keepalive_probes: ${keepaliveProbes}`,
                  ]
                : []),
              ...(name === SYSTEMD_HOST
                ? [
                    "ssh: { become: sudo }",
                    "systemd:",
                    `  units: [{ name: ${CACHED}, active: true }]`,
                  ]
                : []),
              "",
            ].join("\n"),
          ]),
        ),
        // Pinned host keys, the bastion's included: the jump's own ssh reads them from the config.
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
    await library?.remove();
  });

  /** Sets a net.ipv4 sysctl on a host, as `sysctl -w` does. */
  const sysctlW = (name: string, key: string, value: number) =>
    fleet.exec(name, `echo ${value} > /proc/sys/net/ipv4/${key}`);

  test("a week of scheduled runs: a planned kernel upgrade is an accept, a pending rollout a ticket, latent drift in its own words, merges never trap, a rejection rejects its items only, a shared value lands in the group file while a dark host keeps its own, a dark host fails only the scheduled run", async () => {
    await week.logged(async () => {
      week.dawn(1);
      // Day 1: the fleet as adopted. web-03 listens on tcp/8080, which the web group does not allow.
      const day1 = await week.scheduledOn(1);
      await week.say("day 1", day1.propose);
      assert.equal(failures(day1.result), "");
      // The cache hosts run the kernel last month's apt upgrade installed: by the kernel's policy
      // by cause, an accept of the group's kernel_version.
      const ports = (await site.openPulls()).find((p) => p.kind === "ticket");
      const kernel = (await site.openPulls()).find((p) => p.kind === "accept");
      assert.deepEqual(summary(await site.openPulls()), [
        [
          "ticket",
          [ticketFile("web", ports!)],
          "Remediate ports drift on web-03: tcp/8080: not in the allow-list → listening",
        ],
        [
          "accept",
          [`${M}/groups/cache.yaml`],
          `Accept kernel drift from one package transaction on cache-01, cache-02, cache-03 and 4 more: kernel_version: ${PREVIOUS} → ${RUNNING}`,
        ],
      ]);
      hasLines(ports!, [
        "This is a ticket because policy: ports drift is remediated on the host.",
        TICKET_MERGE,
        row("web-03", "tcp/8080", "not in the allow-list", "listening", "groups/web.yaml:7"),
      ]);
      // One cause line for the transaction both hosts recorded alike.
      assert.deepEqual(
        kernel!.lines.filter((l) => l.startsWith("Changed by ")),
        [
          `Changed by \`apt-get (alice)\` at ${logTime(INSTALLED_AT, " ").slice(0, 16)} UTC: \`booted ${RUNNING} at ${new Date(BOOTED_AT * 1000).toISOString().replace(/\.000Z$/, "Z")}; linux-image-${RUNNING} (new) → ${RUNNING}-1\` (as each of \`cache-01\`, \`cache-02\`, \`cache-03\`, \`cache-04\`, \`cache-05\` and 2 more recorded it).`,
        ],
      );
      hasLines(kernel!, [
        ACCEPT_MERGE,
        ...CACHE.map((name) =>
          row(name, "kernel_version", PREVIOUS, RUNNING, "groups/cache.yaml:2"),
        ),
      ]);
      refreshed(await site.mergeAndRefresh(kernel!.number));

      // The team merges tcp_fin_timeout 60 → 30 for the web group; the hosts have not rolled it out.
      // On db-01 an operator persists a keepalive time in a sysctl.d file and applies it.
      week.dawn(2);
      await week.push({ [`${M}/groups/web.yaml`]: webGroup(ROLLED_OUT, somaxconn) });
      await week.edit("db-01", DB_SYSCTL, ">", "net.ipv4.tcp_keepalive_time = 600");
      await sysctlW("db-01", "tcp_keepalive_time", 600);

      // Day 2: the rollout pending on the web hosts is a ticket, never an accept reverting the merge
      // (the audit shard reads the history the rollout is told by).
      const day2 = await week.scheduledOn(2);
      await week.say("day 2", day2.propose);
      assert.equal(failures(day2.result), "");
      const [, rollout, keepalive] = await site.openPulls();
      assert.deepEqual(summary(await site.openPulls()), [
        summary([ports!])[0],
        [
          "ticket",
          [ticketFile("web", rollout!)],
          `Remediate sysctl drift from one manifest rollout on web-01, web-02, web-03 and 6 more: net.ipv4.tcp_fin_timeout: ${ROLLED_OUT} → ${finTimeout}`,
        ],
        [
          "accept",
          [`${M}/nodes/db-01.yaml`],
          `Accept sysctl drift from one persisted file on db-01: net.ipv4.tcp_keepalive_time: ${keepaliveTime} → 600`,
        ],
      ]);
      hasLines(rollout!, [
        "This is a ticket because rollout pending: the manifest moved and the host did not, so accepting the live value would revert a merged change: `" +
          (await site.mainSha()) +
          "`.",
        TICKET_MERGE,
        ...WEB.map((name) =>
          row(
            name,
            "net.ipv4.tcp_fin_timeout",
            String(ROLLED_OUT),
            String(finTimeout),
            "groups/web.yaml:4",
          ),
        ),
      ]);
      // The rollout's time is the merged commit's, read from the audit's depth-1 checkout.
      const merged = new Date(Number(await site.git("log", "-1", "--format=%ct", "main")) * 1000);
      const minute = `${merged.toISOString().slice(0, 16).replace("T", " ")} UTC`;
      const commit = (await site.mainSha()).slice(0, 12);
      assert.ok(
        rollout!.lines.some((l) =>
          l.startsWith(`Rollout pending at ${minute} (commit \`${commit}\`)`),
        ),
        rollout!.lines.join("\n"),
      );
      hasLines(keepalive!, [
        "Persisted at " +
          keepalive!.lines
            .find((l) => l.startsWith("Persisted at "))!
            .slice("Persisted at ".length),
        ACCEPT_MERGE,
        row(
          "db-01",
          "net.ipv4.tcp_keepalive_time",
          String(keepaliveTime),
          "600",
          "groups/db.yaml:3",
        ),
      ]);
      assert.match(
        keepalive!.lines.join("\n"),
        /^Persisted at .*: `\/etc\/sysctl\.d\/90-db\.conf:1 sets 600`\.$/m,
      );
      // Merging it changes the manifest, not the hosts: no remediation.
      assert.ok(
        !keepalive!.lines.some((l) => l.startsWith("Remediation")),
        keepalive!.lines.join("\n"),
      );

      // The reviewer merges the rollout ticket: the refresh announces nothing (no "defer ticket").
      const merged2 = await site.mergeAndRefresh(rollout!.number);
      await week.say("refresh after the rollout ticket", merged2.step);
      refreshed(merged2);
      assert.match(merged2.step.stdout, /^nothing to propose: every pull request is up to date$/m);
      // The reviewer rejects the keepalive accept.
      await site.double.closePull(keepalive!.number);

      // The hosts roll the change out; db-01's operator adds a line to the same file; db-02 goes dark.
      // The drift first seen today says so.
      week.seenOn(rollout!, 2);
      week.seenOn(keepalive!, 2);

      week.dawn(3);
      for (const name of WEB) await sysctlW(name, "tcp_fin_timeout", ROLLED_OUT);
      await week.edit("db-01", DB_SYSCTL, ">>", "net.ipv4.tcp_keepalive_intvl = 30");
      await sysctlW("db-01", "tcp_keepalive_intvl", 30);
      await fleet.takeDown("db-02");

      // Day 3: the rejection holds for the keepalive time alone; the interval, a line of the same
      // file, is an accept. The rollout ticket is resolved. db-02 dark fails the run (bit 8) after
      // the pull requests are written.
      const day3 = await week.scheduledOn(3);
      await week.say("day 3", day3.propose);
      assert.equal(day3.propose.exitCode, 8, day3.propose.stderr);
      assert.match(
        day3.propose.stderr,
        /more nodes not audited than allowed: 1 of 24 nodes not audited/,
      );
      const [, intvl, rejected, resolve] = await site.openPulls();
      const resolvedTicket = rollout!.files[0]!.replace(
        `${M}/remediations/web/`,
        `${M}/remediations/web/resolved/`,
      );
      assert.deepEqual(summary(await site.openPulls()), [
        summary([ports!])[0],
        [
          // db-01 alone of the seven audited takers drifted: an override in its own file.
          "accept",
          [`${M}/nodes/db-01.yaml`],
          `Accept sysctl drift from one persisted file on db-01: net.ipv4.tcp_keepalive_intvl: ${keepaliveIntvl} → 30`,
        ],
        [
          "ticket",
          [ticketFile("db", rejected!)],
          `Remediate sysctl drift from one persisted file on db-01: net.ipv4.tcp_keepalive_time: ${keepaliveTime} → 600`,
        ],
        ["resolve", [rollout!.files[0]!, resolvedTicket].sort(), resolve!.title],
      ]);
      assert.match(
        resolve!.title,
        /^Resolve remediation ticket sysctl-net-ipv4-tcp-fin-timeout-[0-9a-f-]+: drift gone from web-01, web-02, web-03 and 6 more$/,
      );
      hasLines(intvl!, [
        ACCEPT_MERGE,
        row(
          "db-01",
          "net.ipv4.tcp_keepalive_intvl",
          String(keepaliveIntvl),
          "30",
          "groups/db.yaml:4",
        ),
      ]);
      assert.doesNotMatch(intvl!.lines.join("\n"), /closed without merging|tcp_keepalive_time/);
      hasLines(rejected!, [
        `This is a ticket because the accept PR #${keepalive!.number} was closed without merging.`,
        TICKET_MERGE,
        row(
          "db-01",
          "net.ipv4.tcp_keepalive_time",
          String(keepaliveTime),
          "600",
          "groups/db.yaml:3",
        ),
      ]);
      assert.doesNotMatch(rejected!.lines.join("\n"), /tcp_keepalive_intvl/);
      hasLines(resolve!, [
        "**Merging marks the ticket resolved** and moves it to `resolved/` in its folder: the drift it named is no longer present on any of its nodes.",
      ]);
      // The rejected drift is as old as the day it was first seen; the interval is today's.
      week.seenOn(rejected!, 2);
      week.seenOn(intvl!, 3);
      // The fleet page and the run history link each of db-01's drift items to the PR carrying it.
      for (const [key, pull] of [
        ["net.ipv4.tcp_keepalive_time", rejected!],
        ["net.ipv4.tcp_keepalive_intvl", intvl!],
      ] as const) {
        assert.equal(await pageLink(day3.result, "db-01", key), `#${pull.number} (${pull.kind})`);
        const kept = Object.values((await week.runHistory()).drift).find(
          (d) => d.node === "db-01" && d.key === key,
        );
        assert.deepEqual(kept?.pull, { number: pull.number, kind: pull.kind });
      }

      // The ports ticket merges first (the last but one ticket in remediations/web/ is the resolved
      // one): the resolve PR still merges after it, and each refresh passes though db-02 is dark.
      const merged3 = await site.mergeAndRefresh(ports!.number);
      await week.say("refresh after the ports ticket", merged3.step);
      refreshed(merged3);
      const merged4 = await site.mergeAndRefresh(resolve!.number);
      await week.say("refresh after the resolve", merged4.step);
      refreshed(merged4);
      // The reviewer takes the interval and the keepalive ticket.
      refreshed(await site.mergeAndRefresh(intvl!.number));
      refreshed(await site.mergeAndRefresh(rejected!.number));
      assert.deepEqual(await site.openPulls(), []);

      // Day 4: nothing new; db-02 is still dark.
      week.dawn(4);
      const day4 = await week.scheduledOn(4);
      await week.say("day 4", day4.propose);
      assert.equal(day4.propose.exitCode, 8, day4.propose.stderr);
      assert.match(day4.propose.stdout, /^nothing to propose: every pull request is up to date$/m);

      // db-01's operator removes the keepalive time from the file and restores it; db-02 is back.
      // On every db host, alice's apt-get upgrade takes acme-db to 1.1-1, whose conffile raises
      // max_connections (the file was as 1.0-1 shipped it: dpkg replaces it without asking).
      week.dawn(5);
      await week.edit("db-01", DB_SYSCTL, ">", "net.ipv4.tcp_keepalive_intvl = 30");
      await sysctlW("db-01", "tcp_keepalive_time", keepaliveTime);
      await fleet.reboot("db-02");
      const upgraded = path.join(fleet.dir, "status-acme-db-1.1-1");
      await writeFile(upgraded, withAcmeDb(machineStatus, "1.1-1", dbConf(200)));
      const dbUpgrade = aptUpgrade(week.evening, [
        { package: `${ACME_DB}:all`, from: "1.0-1", to: "1.1-1" },
        { package: "libacme1:amd64", from: "1.0-1", to: "1.1-1" },
      ]);
      for (const name of DB)
        await fleet.exec(
          name,
          [
            `printf '%s' '${dbConf(200)}' > ${DB_CONF}`,
            `touch -d @${week.evening} ${DB_CONF}`,
            `cat ${upgraded} > /var/lib/dpkg/status`,
            `printf '%s' '${dbUpgrade.dpkg}' >> /var/log/dpkg.log`,
            `printf '%s' '${dbUpgrade.history}' >> /var/log/apt/history.log`,
            logsDated(week.evening),
          ].join(" && "),
        );

      // Day 5: the keepalive ticket is resolved into remediations/db/resolved/. The upgrade is one
      // accept of the db group's file for the eight hosts: one cause line, the replaced conffile
      // first; one diff, with the hosts it applies to.
      const day5 = await week.scheduledOn(5);
      await week.say("day 5", day5.propose);
      assert.equal(failures(day5.result), "");
      const [upgrade, resolveDb] = await site.openPulls();
      assert.deepEqual(summary(await site.openPulls()), [
        [
          "accept",
          [`${M}/groups/db.yaml`],
          `Accept drift from one package transaction on db-01, db-02, db-03 and 5 more: files, packages ${ACME_DB} and 1 more`,
        ],
        [
          "resolve",
          [
            rejected!.files[0]!,
            rejected!.files[0]!.replace("/remediations/db/", "/remediations/db/resolved/"),
          ].sort(),
          resolveDb!.title,
        ],
      ]);
      week.seenOn(upgrade!, 5);
      const causeWords =
        /^(Changed|Replaced|Edited|Changed at runtime|Persisted|Rebooted|Rollout pending|Cause unknown)\b/;
      assert.deepEqual(
        upgrade!.lines.filter((l) => causeWords.test(l)),
        [
          `Replaced by \`apt-get (alice)\` at ${logTime(week.evening, " ").slice(0, 16)} UTC: \`${DB_CONF} replaced by ${ACME_DB} 1.0-1 → 1.1-1\`, \`${ACME_DB} 1.0-1 → 1.1-1\` (as each of \`db-01\`, \`db-02\`, \`db-03\`, \`db-04\`, \`db-05\` and 3 more recorded it).`,
        ],
      );
      // Its head line names both domains it carries, as its title does.
      hasLines(upgrade!, [
        "Quartermaster found **high** files and packages drift on 8 nodes: 2 items differ, listed below.",
        `\`${M}/groups/db.yaml\` declares this value for 8 nodes, and all 8 drifted alike: the shared file is edited, rather than 8 node files each overriding it.`,
        ACCEPT_MERGE,
        ...DB.map((name) => row(name, ACME_DB, "1.0-1", "1.1-1", "groups/db.yaml:8")),
      ]);
      // One diff for the eight identical changes, naming the hosts it applies to.
      assert.deepEqual(
        upgrade!.lines.filter((l) => l.includes("-want +got")),
        [
          `<details><summary>${DB.slice(0, 5)
            .map((name) => `<code>${name}</code>`)
            .join(", ")} and 3 more <code>${DB_CONF}</code>: -want +got</summary>`,
        ],
      );
      assert.equal(upgrade!.lines.filter((l) => l === "-max_connections = 100").length, 1);
      assert.equal(upgrade!.lines.filter((l) => l === "+max_connections = 200").length, 1);
      // No paragraph twice.
      const paragraphs = upgrade!.lines.join("\n").split("\n\n");
      assert.equal(new Set(paragraphs).size, paragraphs.length, upgrade!.lines.join("\n"));
      // The fleet page and the run history link every db host's package row to the PR.
      for (const name of DB) {
        assert.equal(await pageLink(day5.result, name, ACME_DB), `#${upgrade!.number} (accept)`);
        const kept = Object.values((await week.runHistory()).drift).find(
          (d) => d.node === name && d.key === ACME_DB,
        );
        assert.deepEqual(kept?.pull, { number: upgrade!.number, kind: "accept" });
      }
      refreshed(await site.mergeAndRefresh(resolveDb!.number));
      refreshed(await site.mergeAndRefresh(upgrade!.number));

      // An operator's `sysctl -w` on web-01 alone. On cache-01, alice's apt-get upgrade installs a
      // newer kernel beside the running one, for the next reboot; on cache-07 it replaces the library
      // acme-cached.service runs with.
      week.dawn(6);
      await sysctlW("web-01", "tcp_fin_timeout", 45);
      const update = aptInstall(NEWER, week.evening);
      await fleet.exec(
        "cache-01",
        [
          `: > /boot/vmlinuz-${NEWER}`,
          `printf '%s' '${update.dpkg}' >> /var/log/dpkg.log`,
          `printf '%s' '${update.history}' >> /var/log/apt/history.log`,
          logsDated(week.evening),
        ].join(" && "),
      );
      await library!.replace();
      const libraryUpdate = aptUpgrade(week.evening, [
        { package: "libacmecache1:amd64", from: "1.0-1", to: "1.1-1" },
      ]);
      await fleet.exec(
        SYSTEMD_HOST,
        [
          `printf '%s' '${libraryUpdate.dpkg}' >> /var/log/dpkg.log`,
          // dpkg configures it and lists the library among its files.
          `printf '%s configure libacmecache1:amd64 1.1-1 <none>\\n' '${logTime(week.evening, " ")}' >> /var/log/dpkg.log`,
          `printf '%s\\n' '${library!.path}' > /var/lib/dpkg/info/libacmecache1:amd64.list`,
          `printf '%s' '${libraryUpdate.history}' >> /var/log/apt/history.log`,
          logsDated(week.evening),
        ].join(" && "),
      );

      // Day 6: one node of nine drifted: an override in its own file. cache-01 runs what it
      // declares, and its next boot will not; cache-07's service runs what it declares, and its
      // next restart will not: latent tickets in their own words, never "X → X".
      const day6 = await week.scheduledOn(6);
      await week.say("day 6", day6.propose);
      assert.equal(failures(day6.result), "");
      const own = (await site.openPulls()).find((p) => p.kind === "accept");
      const latent = (await site.openPulls()).find((p) => /latent kernel/.test(p.title));
      const restart = (await site.openPulls()).find((p) => /latent systemd/.test(p.title));
      assert.deepEqual(summary(await site.openPulls()), [
        [
          "ticket",
          [ticketFile(SYSTEMD_HOST, restart!)],
          `Remediate latent systemd drift on ${SYSTEMD_HOST}: ${CACHED}:libraries: restart pending`,
        ],
        [
          "ticket",
          [ticketFile("cache", latent!)],
          `Remediate latent kernel drift on cache-01: kernel_version: reboot pending, becomes ${NEWER}`,
        ],
        [
          "accept",
          [`${M}/nodes/web-01.yaml`],
          `Accept sysctl drift on web-01: net.ipv4.tcp_fin_timeout: ${ROLLED_OUT} → 45`,
        ],
      ]);
      week.seenOn(restart!, 6);
      hasLines(restart!, [TICKET_MERGE]);
      const restartText = restart!.lines.join("\n");
      assert.ok(
        restartText.includes(
          `Quartermaster found **high** latent systemd drift on 1 node: A restart of \`${CACHED}\` loads the replaced \`${library!.path}\`.`,
        ),
        restartText,
      );
      // What replaced the library, from dpkg's log and the package's file list.
      assert.deepEqual(
        restart!.lines.filter((l) => l.startsWith("Replaced by ")),
        [
          `Replaced by \`apt-get (alice)\` at ${logTime(week.evening, " ").slice(0, 16)} UTC: \`${library!.path} replaced by libacmecache1 1.0-1 → 1.1-1\`.`,
        ],
      );
      // One blank line between paragraphs: none is empty.
      assert.ok(!restartText.includes("\n\n\n"), restartText);
      assert.match(restartText, /^Remediation: Restart the unit \(`systemctl restart`\)/m);
      assert.doesNotMatch(restartText, /daemon-reload/);
      week.seenOn(own!, 6);
      hasLines(own!, [
        ACCEPT_MERGE,
        row("web-01", "net.ipv4.tcp_fin_timeout", String(ROLLED_OUT), "45", "groups/web.yaml:4"),
      ]);
      week.seenOn(latent!, 6);
      hasLines(latent!, [TICKET_MERGE]);
      const latentText = latent!.lines.join("\n");
      assert.ok(
        latentText.includes(
          `Quartermaster found **high** latent kernel drift on 1 node: The next boot runs \`${NEWER}\``,
        ),
        latentText,
      );
      assert.ok(!latentText.includes("\n\n\n"), latentText);
      // Who installed it is said once, by the cause line.
      assert.equal(latentText.split("apt-get (alice)").length, 2, latentText);
      assert.match(latentText, /^Changed by `apt-get \(alice\)`/m);
      assert.match(latentText, /^Remediation: Declare the kernel the next boot runs/m);
      assert.doesNotMatch(latentText, /Schedule a reboot into the declared kernel/);
      // The report counts it apart from drift, and cache-01 reads clean.
      assert.equal(day6.report.summary.latentItems, 2);
      for (const name of ["cache-01", SYSTEMD_HOST])
        assert.equal(day6.report.nodes.find((n) => n.name === name)?.status, "clean");
      // So does the run's job summary: 23 clean, web-01 drifted with one drift item; web-03's
      // listener, acknowledged by its merged ticket, apart (web-03 reads clean); 2 latent.
      const jobSummary = day6.result
        .job("report")[0]!
        .steps.find((s) => s.name === "Job summary")!
        .summary.split("\n");
      const head = jobSummary.indexOf(
        "| nodes | clean | drifted | unreachable | errors | maintenance | drift items | acknowledged | latent |",
      );
      assert.deepEqual(jobSummary.slice(head + 2, head + 3), [
        "| 24 | 23 | 1 | 0 | 0 | 0 | 1 | 1 | 2 |",
      ]);
      refreshed(await site.mergeAndRefresh(own!.number));
      refreshed(await site.mergeAndRefresh(latent!.number));
      refreshed(await site.mergeAndRefresh(restart!.number));

      // web-03 and web-09 go dark. On the seven others an operator persists the same tuning in a
      // sysctl.d file and applies it: the group's somaxconn, and a keepalive key of each node's own
      // file.
      week.dawn(7);
      for (const name of DARK) await fleet.takeDown(name);
      const tunedHosts = WEB.filter((name) => !DARK.includes(name));
      for (const name of tunedHosts) {
        const entries = Object.entries(TUNED);
        for (const [i, [key, value]] of entries.entries())
          await week.edit(name, TUNE_FILE, i === 0 ? ">" : ">>", `${key} = ${value}`);
        for (const [key, value] of entries)
          await fleet.exec(name, `echo ${value} > /proc/sys/${key.replaceAll(".", "/")}`);
      }

      // Day 7: one PR for the one cause. Every audited taker of the group's somaxconn drifted
      // alike: the group file takes it and web-03 and web-09, dark, keep their old value in their
      // own files; each node's own key is edited in its own file. Bundled with node-level keys, the
      // shared value never becomes per-node overrides.
      const day7 = await week.scheduledOn(7);
      await week.say("day 7", day7.propose);
      assert.equal(day7.propose.exitCode, 8, day7.propose.stderr);
      const [tuned] = await site.openPulls();
      assert.deepEqual(summary(await site.openPulls()), [
        [
          "accept",
          ["groups/web.yaml", ...WEB.map((name) => `nodes/${name}.yaml`)].map((f) => `${M}/${f}`),
          "Accept drift from one persisted file on web-01, web-02, web-04 and 4 more: sysctl net.ipv4.tcp_keepalive_probes and 1 more",
        ],
      ]);
      // One cause line for the file the hosts recorded alike, dated when it was written.
      assert.deepEqual(
        tuned!.lines.filter((l) => l.startsWith("Persisted at ")),
        [
          `Persisted at ${logTime(week.evening, " ").slice(0, 16)} UTC: \`${TUNE_FILE}:2 sets 5\`, \`${TUNE_FILE}:1 sets 2048\` (as each of \`web-01\`, \`web-02\`, \`web-04\`, \`web-05\`, \`web-06\` and 2 more recorded it).`,
        ],
      );
      week.seenOn(tuned!, 7);
      hasLines(tuned!, [
        ACCEPT_MERGE,
        ...tunedHosts.flatMap((name) => [
          row(name, "net.core.somaxconn", String(somaxconn), "2048", "groups/web.yaml:5"),
          row(
            name,
            "net.ipv4.tcp_keepalive_probes",
            String(keepaliveProbes),
            "5",
            `nodes/${name}.yaml:5`,
          ),
        ]),
      ]);
      const [group, ...dark] = await Promise.all(
        ["groups/web.yaml", ...DARK.map((name) => `nodes/${name}.yaml`)].map((f) =>
          site.git(
            "show",
            `${site.double.pulls().find((p) => p.number === tuned!.number)!.headSha}:${M}/${f}`,
          ),
        ),
      );
      assert.match(group!, /^ {4}net\.core\.somaxconn: 2048$/m);
      // (Written quoted, as a string, where the group file has a number.)
      for (const file of dark)
        assert.match(file, new RegExp(`^ {4}net\\.core\\.somaxconn: "?${somaxconn}"?$`, "m"));
      refreshed(await site.mergeAndRefresh(tuned!.number));

      // Day 8: web-03 and web-09 are back with their old value, which their own files declare:
      // nothing to propose.
      week.dawn(8);
      for (const name of DARK) await fleet.reboot(name);
      const day8 = await week.scheduledOn(8);
      await week.say("day 8", day8.propose);
      assert.equal(failures(day8.result), "");
      assert.match(day8.propose.stdout, /^nothing to propose: every pull request is up to date$/m);
      assert.deepEqual(await site.openPulls(), []);
      // The run history holds the eight scheduled runs, each on its own day.
      const dates = (await week.runHistory()).runs.map((r) => r.at.slice(0, 10));
      assert.equal(new Set(dates).size, 8, dates.join(", "));
      // One dashboard issue all week, found again by every run.
      assert.equal(site.double.issues().length, 1);
      // Every pull request of the week, open, merged or closed: none says a value became itself.
      assertNoSelfChange(site.double.pulls());
      assert.deepEqual(site.double.violations, []);
    });
  });
});
