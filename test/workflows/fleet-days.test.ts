// The shipped workflows as a fleet repository runs them, over several scheduled runs: the four
// callers docs/actions.md shows, the packed release installed by action.yml, real sshd hosts behind
// one jump host (`MaxStartups 4:50:8`), the real git server and the GitHub site.double. Between runs the
// hosts and the operators change things as they do (a manifest change merged before the hosts roll
// it out, a persisted sysctl file written and extended, a host going dark), and a reviewer merges
// and closes pull requests, each merge followed by refresh-prs. Every pull request is asserted:
// kind, the files it changes, title and the lines of its body that decide it.
// Needs root (test hosts).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { assertNoSelfChange } from "../support/pull-text.js";
import {
  FAKETIME_LIBRARY,
  failures,
  startFleetForge,
  type FleetForge,
  type FleetSite,
  type Pull,
} from "./fleet-site.js";
import type { RunResult } from "./runner.js";

const M = "fleet-manifests";
const WEB = ["web-01", "web-02", "web-03"];
const DB = ["db-01", "db-02"];
const DB_SYSCTL = "/etc/sysctl.d/90-db.conf";
// The web group's tcp_fin_timeout after the change the team merges on day 1.
const ROLLED_OUT = 30;

/** The web group's file, declaring `finTimeout`. */
const webGroup = (finTimeout: number) =>
  [
    "# Front-end web servers.",
    "system:",
    "  sysctl_parameters:",
    `    net.ipv4.tcp_fin_timeout: ${finTimeout}`,
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

  before(async () => {
    assert.ok(existsSync(FAKETIME_LIBRARY), "libfaketime (apt-get install faketime)");
    fleet = await startFleet(
      [
        // The bastion drops unauthenticated connections past 4 at random, all past 8.
        { name: "bastion", sshdOptions: ["MaxStartups 4:50:8"] },
        ...WEB.map((name) => ({
          name,
          behind: "bastion",
          ...(name === "web-03" && { listeners: ["tcp/8080"] }),
        })),
        ...DB.map((name) => ({
          name,
          behind: "bastion",
          ...(name === "db-01" && { writable: ["/etc/sysctl.d"] }),
        })),
      ],
      { prefix: "qmd" },
    );
    const live = async (key: string) =>
      Number((await fleet.exec("db-01", `cat /proc/sys/net/ipv4/${key}`)).trim());
    finTimeout = await live("tcp_fin_timeout");
    keepaliveTime = await live("tcp_keepalive_time");
    keepaliveIntvl = await live("tcp_keepalive_intvl");
    assert.ok(finTimeout !== ROLLED_OUT && keepaliveTime !== 600 && keepaliveIntvl !== 30);
    const host = (name: string) => fleet.hosts.find((h) => h.name === name)!;
    forge = await startFleetForge({
      prefix: "qm-fleet-days-",
      sshKey: await readFile(fleet.identityFile, "utf8"),
      // Kept secret by the fleet: where the bastion and the nodes are. The documented
      // fleet-manifests/ssh_config adds `User` for the bastion and `ProxyJump bastion` for
      // *.fleet.internal.
      sshConfig: [
        `Host bastion\n  HostName ${host("bastion").address}\n  Port ${host("bastion").port}`,
        ...[...WEB, ...DB].map(
          (name) =>
            `Host ${name}.fleet.internal\n  HostName ${host(name).address}\n  Port ${host(name).port}`,
        ),
        "",
      ].join("\n"),
      manifests: {
        "fleet.yaml": [
          // Through the jump host a node's banner waits for the hop's whole login.
          "ssh: { user: qm-audit, connect_timeout: 60, timeout: 120 }",
          // No node may go unaudited: a dark host fails the scheduled run (exit bit 8).
          "audit: { max_unaudited: 0 }",
          "",
        ].join("\n"),
        "groups/web.yaml": webGroup(finTimeout),
        "groups/db.yaml": [
          "system:",
          "  sysctl_parameters:",
          `    net.ipv4.tcp_keepalive_time: ${keepaliveTime}`,
          `    net.ipv4.tcp_keepalive_intvl: ${keepaliveIntvl}`,
          "networking:",
          "  listening_ports: [tcp/22]",
          "",
        ].join("\n"),
        ...Object.fromEntries(
          [...WEB, ...DB].map((name) => [
            `nodes/${name}.yaml`,
            `host: ${name}.fleet.internal\ngroups: [${name.slice(0, name.indexOf("-"))}]\n`,
          ]),
        ),
        // Pinned host keys, the bastion's included: the jump's own ssh reads them from the config.
        known_hosts: await readFile(fleet.knownHosts, "utf8"),
      },
    });
    site = await forge.site("fleet");
    site.double.addCollaborator("fleet-reviewer", "write");
  });

  after(async () => {
    await forge?.stop();
    await fleet?.stop();
  });

  /**
   * The runs from now on are on day `n` of the week: their clock is `n - 1` days ahead of this
   * machine's.
   */
  const dawn = (n: number) => (site.daysAhead = n - 1);
  /** An hour before now on the runs' clock (epoch seconds): when the operators change things. */
  const anHourAgo = () => Math.floor(site.now() / 1000) - 3600;
  /** An operator writes (`>`) or appends to (`>>`) a host's file, an hour before the next run. */
  const edit = (name: string, file: string, op: ">" | ">>", line: string) =>
    fleet.exec(name, `printf '%s\\n' '${line}' ${op} ${file} && touch -d @${anHourAgo()} ${file}`);
  /** A teammate's commit onto main, an hour before the next run. */
  const push = (files: Record<string, string>) =>
    site.double.pushCommit("main", files, {
      name: "Fleet Operator",
      email: "operator@example.com",
      date: new Date(anHourAgo() * 1000).toISOString(),
    });
  /** When each day's scheduled run started and ended, on the runs' clock (epoch milliseconds). */
  const days: { from: number; to: number }[] = [];
  /** Day `n`'s scheduled run. */
  async function scheduledOn(n: number) {
    assert.equal(site.daysAhead, n - 1);
    const from = site.now();
    const run = await site.scheduled();
    days[n] = { from, to: site.now() };
    return run;
  }
  /** Fails unless the PR says its drift was first seen by day `n`'s run. */
  const seenOn = (pull: Pull, n: number) => {
    const line = pull.lines.find((l) => l.startsWith("Drifting since ")) ?? "";
    const at = Date.parse(/^Drifting since (\S+)/.exec(line)?.[1] ?? "");
    const { from, to } = days[n]!;
    assert.ok(
      at >= Math.floor(from / 60_000) * 60_000 && at <= to,
      `PR #${pull.number}: "${line}", not within day ${n}'s run (${new Date(from).toISOString()} to ${new Date(to).toISOString()})`,
    );
  };
  /** The run history the scheduled runs keep on the state branch. */
  const runHistory = async () =>
    JSON.parse(await site.git("show", "quartermaster-state:run-history.json")) as {
      runs: { at: string }[];
      drift: Record<string, { node: string; key: string; pull?: { number: number; kind: string } }>;
    };
  /** The pull request the fleet page of a run links `node`'s drift of `key` to, as its text shows. */
  async function pageLink(result: RunResult, node: string, key: string) {
    const page = await readFile(path.join(result.artifacts, "fleet-page", "fleet.html"), "utf8");
    const section = page.slice(page.indexOf(`data-node="${node}"`));
    const at = section.indexOf(`<code>${key}</code>`);
    const row = section.slice(at, section.indexOf("</tr>", at));
    const cells = [...row.matchAll(/<td>(.*?)<\/td>/g)].map((m) => m[1]!.replace(/<[^>]+>/g, ""));
    // After the key's cell: first seen, last seen, cause, pull request.
    return cells[3];
  }
  /** Sets a net.ipv4 sysctl on a host, as `sysctl -w` does. */
  const sysctlW = (name: string, key: string, value: number) =>
    fleet.exec(name, `echo ${value} > /proc/sys/net/ipv4/${key}`);
  /** The open pull requests, each as kind, files changed and title. */
  const summary = (pulls: readonly Pull[]) => pulls.map((p) => [p.kind, p.files, p.title]);
  /** Fails unless every line of `lines` is a line of the PR's body. */
  const hasLines = (pull: Pull, lines: readonly string[]) => {
    for (const line of lines)
      assert.ok(
        pull.lines.includes(line),
        `PR #${pull.number} lacks:\n${line}\n\n${pull.lines.join("\n")}`,
      );
  };
  const ticketFile = (folder: string, pull: Pull) => {
    const [file] = pull.files;
    assert.match(file!, new RegExp(`^${M}/remediations/${folder}/[a-z0-9-]+\\.yaml$`));
    return file!;
  };
  const row = (node: string, key: string, declared: string, live: string, at: string) =>
    `| \`${node}\` | \`${key}\` | \`${declared}\` | \`${live}\` | \`${M}/${at}\` |`;
  const TICKET_MERGE =
    "**Merging records a remediation ticket**: the operator commits to bring the hosts back to the declared state. While the ticket is open, this drift is reported as acknowledged and opens no new PR. When the drift is gone, Quartermaster proposes resolving the ticket.";
  const ACCEPT_MERGE =
    "**Merging accepts the live state into the manifest**: the declared value becomes what the hosts run now, and the next audit reports them clean.";
  const SYSCTL_REMEDIATION =
    "Remediation: Apply the manifest baseline with `sysctl -p` (or `sysctl --system`), or accept the live value into the manifest.";

  /** Asserts what a refresh after a merge did: succeeded, audited nothing, opened and announced nothing. */
  function refreshed(merged: Awaited<ReturnType<FleetSite["mergeAndRefresh"]>>) {
    assert.equal(failures(merged.result), "");
    assert.equal(merged.job.result, "success");
    assert.ok(!merged.job.steps.some((s) => /ssh|audit/i.test(s.name)), "no node is audited");
    assert.doesNotMatch(merged.step.stdout, /^(defer|open) /m, merged.step.stdout);
    assert.doesNotMatch(merged.step.stderr, /not audited|Error|at .*\.js:\d+/, merged.step.stderr);
  }

  test("seven scheduled runs: a pending rollout is a ticket, merges never trap, a rejection rejects its items only, a dark host fails only the scheduled run", async () => {
    const log: string[] = [];
    const say = async (what: string, step?: { stdout: string; stderr: string }) =>
      log.push(
        `== ${what}`,
        step?.stdout ?? "",
        step?.stderr ?? "",
        JSON.stringify(await site.openPulls(), null, 2),
      );
    try {
      dawn(1);
      // Day 1: the fleet as adopted. web-03 listens on tcp/8080, which the web group does not allow.
      const day1 = await scheduledOn(1);
      await say("day 1", day1.propose);
      assert.equal(failures(day1.result), "");
      const [ports] = await site.openPulls();
      assert.deepEqual(summary(await site.openPulls()), [
        [
          "ticket",
          [ticketFile("web", ports!)],
          "Remediate ports drift on web-03: tcp/8080: not in the allow-list → listening",
        ],
      ]);
      hasLines(ports!, [
        "This is a ticket because policy: ports drift is remediated on the host.",
        TICKET_MERGE,
        row("web-03", "tcp/8080", "not in the allow-list", "listening", "groups/web.yaml:6"),
      ]);

      // The team merges tcp_fin_timeout 60 → 30 for the web group; the hosts have not rolled it out.
      // On db-01 an operator persists a keepalive time in a sysctl.d file and applies it.
      dawn(2);
      await push({ [`${M}/groups/web.yaml`]: webGroup(ROLLED_OUT) });
      await edit("db-01", DB_SYSCTL, ">", "net.ipv4.tcp_keepalive_time = 600");
      await sysctlW("db-01", "tcp_keepalive_time", 600);

      // Day 2: the rollout pending on the web hosts is a ticket, never an accept reverting the merge
      // (the audit shard reads the history the rollout is told by).
      const day2 = await scheduledOn(2);
      await say("day 2", day2.propose);
      assert.equal(failures(day2.result), "");
      const [, rollout, keepalive] = await site.openPulls();
      assert.deepEqual(summary(await site.openPulls()), [
        summary([ports!])[0],
        [
          "ticket",
          [ticketFile("web", rollout!)],
          `Remediate sysctl drift from one manifest rollout on web-01, web-02, web-03: net.ipv4.tcp_fin_timeout: ${ROLLED_OUT} → ${finTimeout}`,
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
        SYSCTL_REMEDIATION,
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

      // The reviewer merges the rollout ticket: the refresh announces nothing (no "defer ticket").
      const merged2 = await site.mergeAndRefresh(rollout!.number);
      await say("refresh after the rollout ticket", merged2.step);
      refreshed(merged2);
      assert.match(merged2.step.stdout, /^nothing to propose: every pull request is up to date$/m);
      // The reviewer rejects the keepalive accept.
      await site.double.closePull(keepalive!.number);

      // The hosts roll the change out; db-01's operator adds a line to the same file; db-02 goes dark.
      // The drift first seen today says so.
      seenOn(rollout!, 2);
      seenOn(keepalive!, 2);

      dawn(3);
      for (const name of WEB) await sysctlW(name, "tcp_fin_timeout", ROLLED_OUT);
      await edit("db-01", DB_SYSCTL, ">>", "net.ipv4.tcp_keepalive_intvl = 30");
      await sysctlW("db-01", "tcp_keepalive_intvl", 30);
      await fleet.takeDown("db-02");

      // Day 3: the rejection holds for the keepalive time alone; the interval, a line of the same
      // file, is an accept. The rollout ticket is resolved. db-02 dark fails the run (bit 8) after
      // the pull requests are written.
      const day3 = await scheduledOn(3);
      await say("day 3", day3.propose);
      assert.equal(day3.propose.exitCode, 8, day3.propose.stderr);
      assert.match(
        day3.propose.stderr,
        /more nodes not audited than allowed: 1 of 5 nodes not audited/,
      );
      const [, intvl, rejected, resolve] = await site.openPulls();
      const resolvedTicket = rollout!.files[0]!.replace(
        `${M}/remediations/web/`,
        `${M}/remediations/web/resolved/`,
      );
      assert.deepEqual(summary(await site.openPulls()), [
        summary([ports!])[0],
        [
          // db-01, the only audited taker, drifted: the group file takes the value, and db-02,
          // dark, keeps its old one in its own file.
          "accept",
          [`${M}/groups/db.yaml`, `${M}/nodes/db-02.yaml`],
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
        /^Resolve remediation ticket sysctl-net-ipv4-tcp-fin-timeout-[0-9a-f-]+: drift gone from web-01, web-02, web-03$/,
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
      seenOn(rejected!, 2);
      seenOn(intvl!, 3);
      // The fleet page and the run history link each of db-01's drift items to the PR carrying it.
      for (const [key, pull] of [
        ["net.ipv4.tcp_keepalive_time", rejected!],
        ["net.ipv4.tcp_keepalive_intvl", intvl!],
      ] as const) {
        assert.equal(await pageLink(day3.result, "db-01", key), `#${pull.number} (${pull.kind})`);
        const kept = Object.values((await runHistory()).drift).find(
          (d) => d.node === "db-01" && d.key === key,
        );
        assert.deepEqual(kept?.pull, { number: pull.number, kind: pull.kind });
      }

      // The ports ticket merges first (the last but one ticket in remediations/web/ is the resolved
      // one): the resolve PR still merges after it, and each refresh passes though db-02 is dark.
      const merged3 = await site.mergeAndRefresh(ports!.number);
      await say("refresh after the ports ticket", merged3.step);
      refreshed(merged3);
      const merged4 = await site.mergeAndRefresh(resolve!.number);
      await say("refresh after the resolve", merged4.step);
      refreshed(merged4);
      // The reviewer takes the interval and the keepalive ticket.
      refreshed(await site.mergeAndRefresh(intvl!.number));
      refreshed(await site.mergeAndRefresh(rejected!.number));
      assert.deepEqual(await site.openPulls(), []);

      // Day 4: nothing new; db-02 is still dark.
      dawn(4);
      const day4 = await scheduledOn(4);
      await say("day 4", day4.propose);
      assert.equal(day4.propose.exitCode, 8, day4.propose.stderr);
      assert.match(day4.propose.stdout, /^nothing to propose: every pull request is up to date$/m);

      // db-01's operator removes the keepalive time from the file and restores it; db-02 is back.
      dawn(5);
      await edit("db-01", DB_SYSCTL, ">", "net.ipv4.tcp_keepalive_intvl = 30");
      await sysctlW("db-01", "tcp_keepalive_time", keepaliveTime);
      await fleet.reboot("db-02");

      // Day 5: the keepalive ticket is resolved into remediations/db/resolved/.
      const day5 = await scheduledOn(5);
      await say("day 5", day5.propose);
      assert.equal(failures(day5.result), "");
      const [resolveDb] = await site.openPulls();
      assert.deepEqual(summary(await site.openPulls()), [
        [
          "resolve",
          [
            rejected!.files[0]!,
            rejected!.files[0]!.replace("/remediations/db/", "/remediations/db/resolved/"),
          ].sort(),
          resolveDb!.title,
        ],
      ]);
      refreshed(await site.mergeAndRefresh(resolveDb!.number));

      // An operator's `sysctl -w` on web-01 alone.
      dawn(6);
      await sysctlW("web-01", "tcp_fin_timeout", 45);

      // Day 6: one node of three drifted: an override in its own file.
      const day6 = await scheduledOn(6);
      await say("day 6", day6.propose);
      assert.equal(failures(day6.result), "");
      const [own] = await site.openPulls();
      assert.deepEqual(summary(await site.openPulls()), [
        [
          "accept",
          [`${M}/nodes/web-01.yaml`],
          `Accept sysctl drift on web-01: net.ipv4.tcp_fin_timeout: ${ROLLED_OUT} → 45`,
        ],
      ]);
      seenOn(own!, 6);
      hasLines(own!, [
        ACCEPT_MERGE,
        row("web-01", "net.ipv4.tcp_fin_timeout", String(ROLLED_OUT), "45", "groups/web.yaml:4"),
      ]);
      refreshed(await site.mergeAndRefresh(own!.number));

      // Day 7: the fleet is as declared; nothing to propose.
      dawn(7);
      const day7 = await scheduledOn(7);
      await say("day 7", day7.propose);
      assert.equal(failures(day7.result), "");
      assert.match(day7.propose.stdout, /^nothing to propose: every pull request is up to date$/m);
      assert.deepEqual(await site.openPulls(), []);
      // The run history holds the week's seven scheduled runs, each on its own day.
      const dates = (await runHistory()).runs.map((r) => r.at.slice(0, 10));
      assert.equal(new Set(dates).size, 7, dates.join(", "));
      // Every pull request of the week, open, merged or closed: none says a value became itself.
      assertNoSelfChange(site.double.pulls());
      assert.deepEqual(site.double.violations, []);
    } catch (error) {
      console.log(log.join("\n"));
      throw error;
    }
  });
});
