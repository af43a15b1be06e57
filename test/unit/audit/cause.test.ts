// Causes from a host's records: the cause section's output as captured on a Debian 12 host, parsed
// and turned into causes. Only a record that explains the live value names a cause.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { attachCauses } from "../../../src/audit/cause/attach.js";
import { MAX_CAUSE_CHARS } from "../../../src/domains/cause.js";
import {
  CAUSE_AWK,
  causeProbe,
  causeSection,
  LOG_TAIL_BYTES,
} from "../../../src/audit/cause/probe.js";
import { parseHostRecord } from "../../../src/audit/cause/record.js";
import type { RecordRequest } from "../../../src/domains/host-record.js";
import { packageChange } from "../../../src/domains/package-transaction.js";
import { domainByName } from "../../../src/domains/registry.js";
import { partsByLabel } from "../../../src/domains/domain.js";
import {
  buildProbe,
  parseContext,
  parseProbeOutput,
  probeContext,
  type BuildContext,
} from "../../../src/probe/script.js";
import type { DriftItem } from "../../../src/report/schema.js";
import { buildRpm } from "../../support/hosts.js";
import { marked } from "../../support/probe-output.js";

const N = "QMcausetest";
/** The whole probe of one cause section, through the shared awk as an audit runs it. */
const causeProbeScript = (script: string, ctx: BuildContext) =>
  buildProbe(N, [{ name: "cause", script, awk: CAUSE_AWK }], ctx.statAsks).script;
/** The cause section's output in a probe's stdout. */
const causeOutput = (stdout: string) => parseProbeOutput(stdout, N).get("cause")!.output;
const captured = marked(N, [
  ["boot", "1796205409\n"],
  ["clock", "2026-12-02 09:11:29 +0100\n"],
  [
    "owned",
    "openssh-client 8a5bddc82befb71d8ef34cc903d3d077 /etc/ssh/ssh_config\n/var/lib/dpkg/info/openssh-client.md5sums:6359eb787f69cc9a76d4a58f35986b54  usr/bin/ssh\n",
  ],
  [
    "md5",
    "8a5bddc82befb71d8ef34cc903d3d077  /etc/ssh/ssh_config\n00000000000000000000000000000000  /usr/bin/ssh\n",
  ],
  [
    "stat",
    "1746701664 root /etc/ssh/ssh_config\n1777976816 root /usr/bin/ssh\n1796205410 alice /etc/app.conf\n1796205477 root /etc/systemd/system/multi-user.target.wants/ssh.service\n",
  ],
  [
    "dpkg-log",
    "2026-12-02 09:57:53 upgrade openssh-client:amd64 1:9.2p1-2+deb12u6 1:9.2p1-2+deb12u10\n2026-12-02 09:57:54 upgrade openssh-server:amd64 1:9.2p1-2+deb12u6 1:9.2p1-2+deb12u10\n",
  ],
  [
    "apt-history",
    "Start-Date: 2026-12-02  09:57:53\nCommandline: /usr/bin/unattended-upgrade\nRequested-By: alice (1000)\nEnd-Date: 2026-12-02  09:58:01\n",
  ],
]);

const item = (
  domain: string,
  key: string,
  live: DriftItem["live"],
  last = "contents",
): DriftItem => ({
  domain: domain as DriftItem["domain"],
  key,
  declared: "x",
  live: live,
  severity: "high",
  fingerprint: key,
  source: { file: "groups/db.yaml", line: 1 },
  remediation: "",
  onDrift: "accept",
  path: [domain, key, last],
});

describe("causes from the host's records", () => {
  const record = parseHostRecord(parseContext(N).parts(captured));
  const causes = (items: DriftItem[], since?: number) =>
    attachCauses(items, record, { node: "db-01", ...(since !== undefined && { since }) }).map(
      (i) => i.cause,
    );

  it("a package at the version a transaction installed: that transaction, in UTC, with who ran it and its group", () => {
    const [cause] = causes([item("packages", "openssh-client", "1:9.2p1-2+deb12u10")]);
    assert.deepEqual(cause, {
      kind: "package",
      at: "2026-12-02T08:57:53Z",
      by: "unattended-upgrades (alice)",
      evidence: "openssh-client 1:9.2p1-2+deb12u6 → 1:9.2p1-2+deb12u10",
      group:
        "package: openssh-client 1:9.2p1-2+deb12u6 → 1:9.2p1-2+deb12u10, openssh-server 1:9.2p1-2+deb12u6 → 1:9.2p1-2+deb12u10",
    });
  });

  it("a drift the last audit saw keeps the cause known when it was first seen; a cause read now wins", () => {
    const first = {
      kind: "package",
      at: "2026-11-30T08:00:00Z",
      by: "apt-get (bob)",
      evidence: "openssh-client 1:9.1 → 1:9.3",
      group: "package: openssh-client 1:9.1 → 1:9.3",
    } as const;
    const seen = (fingerprint: string) => ({
      firstSeen: "2026-11-30T09:00:00.000Z",
      ...(fingerprint !== "plain" && { cause: first }),
    });
    const [kept, read, none] = attachCauses(
      [
        item("packages", "openssh-client", "1:9.3"),
        item("packages", "openssh-client", "1:9.2p1-2+deb12u10"),
        item("packages", "plain", "1:9.3"),
      ],
      record,
      { node: "db-01", seen },
    ).map((i) => i.cause);
    assert.deepEqual(kept, first);
    assert.equal(read?.kind, "package");
    assert.equal(read?.at, "2026-12-02T08:57:53Z");
    assert.equal(none?.kind, "unknown");
  });

  it("a latent item keeps the cause read when its coming value was first seen, unless one is read now", () => {
    const installed = {
      kind: "package",
      at: "2026-11-30T08:00:00Z",
      evidence: "linux-image-6.1.0-30-amd64 (new) → 6.1.0-30",
    } as const;
    const latent = {
      ...item("kernel", "kernel_version", "6.1.0-28-amd64"),
      declared: "6.1.0-28-amd64",
      latent: { after: "reboot", becomes: "6.1.0-30-amd64", because: "6.1.0-30-amd64 installed" },
      latentPolicy: "ticket",
    } as const;
    const seen = () => ({ firstSeen: "2026-11-30T09:00:00.000Z", cause: installed });
    const empty = parseHostRecord([]);
    assert.deepEqual(attachCauses([latent], empty, { node: "db-01", seen })[0]!.cause, installed);
    assert.equal(attachCauses([latent], empty, { node: "db-01" })[0]!.cause, undefined);
  });

  it("a drift first seen with an unknown cause keeps its why while none is read: a runtime write seen before is no news", () => {
    const first = {
      kind: "unknown",
      evidence: "nothing on the host recorded this change",
    } as const;
    const runtime = { kind: "runtime", evidence: "live 5 is set by no persisted file" } as const;
    const sysctl = { ...item("sysctl", "net.ipv4.tcp_keepalive_probes", "5"), cause: runtime };
    const seen = () => ({ firstSeen: "2026-11-30T09:00:00.000Z", cause: first });
    assert.deepEqual(attachCauses([sysctl], record, { node: "db-01", seen })[0]!.cause, first);
    // Seen before the history kept unknown causes: why it is unknown now.
    const bare = () => ({ firstSeen: "2026-11-30T09:00:00.000Z" });
    assert.deepEqual(attachCauses([sysctl], record, { node: "db-01", seen: bare })[0]!.cause, {
      kind: "unknown",
      evidence:
        "the live value is the one an audit first saw at 2026-11-30T09:00:00.000Z: it changed before then",
    });
  });

  it("a version no recorded transaction installed is unknown, never the nearest transaction", () => {
    assert.equal(causes([item("packages", "openssh-client", "1:9.3")])[0]!.kind, "unknown");
  });

  it("a file with the md5 its package shipped is package-file; one with other contents, or no package, is file-edit", () => {
    const [shipped, edited, own] = causes([
      item("files", "/etc/ssh/ssh_config", "a"),
      item("files", "/usr/bin/ssh", "b"),
      item("files", "/etc/app.conf", "c"),
    ]);
    assert.equal(shipped!.kind, "package-file");
    assert.equal(shipped!.at, "2026-12-02T08:57:53Z");
    assert.equal(edited!.kind, "file-edit");
    assert.match(edited!.evidence, /a local edit of openssh-client's file/);
    assert.deepEqual(own, {
      kind: "file-edit",
      at: new Date(1796205410000).toISOString().replace(".000Z", "Z"),
      evidence: `/etc/app.conf modified at ${new Date(1796205410000).toISOString().replace(".000Z", "Z")}, owner alice`,
      group: "file-edit: db-01 /etc/app.conf",
    });
  });

  it("a mode change is not an edit of the contents: unknown", () => {
    assert.equal(causes([item("files", "/etc/app.conf:mode", "0600", "mode")])[0]!.kind, "unknown");
  });

  it("kernel drift after a boot since the last audit is a reboot; a boot before it names nothing", () => {
    const kernel = item("kernel", "kernel_version", "6.1.0-29-amd64");
    assert.equal(causes([kernel], 1796205409000 - 1000)[0]!.kind, "reboot");
    assert.equal(causes([kernel], 1796205409000 + 1000)[0]!.kind, "unknown");
  });

  it("a unit enabled since the last audit: its link, with the link's mtime", () => {
    const [cause] = causes(
      [item("systemd", "ssh.service:enabled", true, "enabled")],
      1796205000000,
    );
    assert.equal(cause!.kind, "persisted");
    assert.match(cause!.evidence, /multi-user\.target\.wants\/ssh\.service created/);
  });

  it("without the host's UTC offset no log is read", () => {
    const blind = parseHostRecord(parseContext(N).parts(captured.replace("+0100", "")));
    assert.deepEqual(blind.packages, []);
    assert.deepEqual(blind.apt, []);
  });

  it("the probe runs under /bin/sh, reads this machine's records and parses", () => {
    const ctx = probeContext(N, 1024);
    const script = causeProbeScript(
      causeProbe({ packages: ["dpkg"], files: ["/etc/hostname"] }, ctx),
      ctx,
    );
    const out = execFileSync("/bin/sh", ["-s"], {
      input: `QM_SINCE=0\nQM_N=${N}\n${script}`,
    }).toString();
    const section = parseProbeOutput(out, N).get("cause")!;
    const host = parseHostRecord(parseContext(N).parts(section.output));
    assert.ok(host.bootTime! > 0);
    assert.ok(host.stat.has("/etc/hostname"));
  });

  // dpkg.log and apt's history.log of a host, each line at 2026-12-01 (UTC) as the host wrote it.
  // A configure step as dpkg 1.21 logs it (this machine's dpkg.log): its postinst runs between the
  // `configure` line and `status installed`.
  const DPKG_LOG = [
    "2026-12-01 10:00:01 upgrade qm-demo:all 1.0 1.1",
    "2026-12-01 11:00:01 upgrade other:all 1.0 1.1",
    "2026-12-01 11:00:01 configure other:all 1.1 <none>",
    "2026-12-01 11:00:01 status half-configured other:all 1.1",
    "2026-12-01 11:00:02 status installed other:all 1.1",
    "2026-12-01 12:00:01 remove qm-extra:all 1.0 <none>",
    "2026-12-01 13:00:01 upgrade openssh-client:amd64 1.0 1.1",
    "",
  ];
  const tx = (start: string, command: string, end?: string) =>
    `\nStart-Date: 2026-12-01  ${start}\nCommandline: ${command}\n${end ? `End-Date: 2026-12-01  ${end}\n` : ""}`;
  const HISTORY_LOG =
    tx("10:00:00", "apt-get install qm-demo", "10:00:02") +
    tx("11:00:00", "apt-get install other", "11:00:02") +
    tx("12:00:00", "apt-get remove qm-extra");

  /**
   * The cause section for qm-demo and qm-extra over those logs, on a host in UTC; `lists`: dpkg's
   * file lists by name, in a folder of their own that the awk reads them from.
   */
  const sectionOverLogs = (
    since: string,
    targets: RecordRequest = { packages: ["qm-demo", "qm-extra"], files: [] },
    lists: Record<string, string> = {},
    dpkgLog: readonly string[] = DPKG_LOG,
    modified?: number,
    awk = "",
  ): string => {
    const dir = mkdtempSync(path.join(tmpdir(), "qm-cause-logs-"));
    try {
      mkdirSync(path.join(dir, "info"));
      for (const [name, text] of Object.entries(lists))
        writeFileSync(path.join(dir, "info", name), text);
      writeFileSync(path.join(dir, "dpkg.log"), dpkgLog.join("\n"));
      writeFileSync(path.join(dir, "history.log"), HISTORY_LOG);
      if (modified !== undefined)
        for (const log of ["dpkg.log", "history.log"])
          utimesSync(path.join(dir, log), modified, modified);
      const ctx = probeContext(N, 1024);
      const script = causeProbeScript(causeProbe(targets, ctx), ctx)
        .replaceAll('"/var/lib/dpkg/info/"', `"${dir}/info/"`)
        .replaceAll("/var/log/dpkg.log", `${dir}/dpkg.log`)
        .replaceAll("/var/log/apt/history.log", `${dir}/history.log`);
      return causeOutput(
        execFileSync("/bin/sh", ["-s"], {
          input: `QM_SINCE=${since}\n${awk}${script}`,
          env: { TZ: "UTC" },
        }).toString(),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it("a declared path holding a backslash is matched as written: its conffile line is sent", () => {
    // A unit's escaped name, as systemd-escape writes it: `awk -v` would read `\x2d` as `-`.
    const file = String.raw`/etc/systemd/system/qm\x2dback.service`;
    const line = `2026-12-01 10:00:01 conffile ${file} keep`;
    const section = sectionOverLogs("", { packages: [], files: [file] }, {}, [line, ""]);
    const host = parseHostRecord(parseContext(N).parts(section));
    assert.deepEqual(
      host.conffiles.map((c) => c.path),
      [file],
      section,
    );
  });

  it("only the apt transactions a sent dpkg event ran in are sent, an unfinished one included", () => {
    const section = sectionOverLogs("");
    assert.doesNotMatch(section, /other/);
    const host = parseHostRecord(parseContext(N).parts(section));
    assert.deepEqual(
      host.apt.map((t) => t.commandline),
      ["apt-get install qm-demo", "apt-get remove qm-extra"],
    );
  });

  it("steps: every package's configure step since the last audit, ended by its `status installed`; none without a last audit", () => {
    const targets = { steps: true };
    const host = parseHostRecord(
      parseContext(N).parts(sectionOverLogs(String(Date.UTC(2026, 11, 1, 10, 30) / 1000), targets)),
    );
    assert.deepEqual(host.steps, [
      {
        name: "other",
        version: "1.1",
        start: Date.UTC(2026, 11, 1, 11, 0, 1),
        end: Date.UTC(2026, 11, 1, 11, 0, 2),
      },
    ]);
    assert.deepEqual(
      host.apt.map((t) => t.commandline),
      ["apt-get install other"],
    );
    assert.doesNotMatch(sectionOverLogs("", targets), /configure|status/);
  });

  it("shippedSince: the asked paths a package configured since the last audit ships, by its file list; none without one", () => {
    const UNIT = "/usr/lib/systemd/system/srv-my\\x2ddata.mount";
    const lists = {
      // `other` is configured since; qm-demo only unpacked, its list is never read.
      "other.list": `/.\n/usr/lib/systemd/system\n${UNIT}\n/usr/share/doc/other\n`,
      "qm-demo.list": "/lib/systemd/system/x.mount\n",
    };
    const targets = { shippedSince: [UNIT, "/lib/systemd/system/x.mount", "/usr/share/none"] };
    const since = String(Date.UTC(2026, 11, 1, 9, 30) / 1000);
    const host = parseHostRecord(parseContext(N).parts(sectionOverLogs(since, targets, lists)));
    assert.deepEqual([...host.shippedBy!], [[UNIT, "other"]]);
    assert.deepEqual(
      host.steps?.map((s) => [s.name, s.version]),
      [["other", "1.1"]],
    );
    // A list named by architecture, where several may be installed.
    const byArch = { "other:all.list": `${UNIT}\n` };
    assert.deepEqual(
      [
        ...parseHostRecord(parseContext(N).parts(sectionOverLogs(since, targets, byArch)))
          .shippedBy!,
      ],
      [[UNIT, "other"]],
    );
    // Without a last audit, asked for nothing else of dpkg's log, the log is not read at all.
    const first = sectionOverLogs("", targets, lists);
    assert.doesNotMatch(first, /upgrade|other/);
    assert.equal(parseHostRecord(parseContext(N).parts(first)).shippedBy, undefined);
    assert.ok(parseHostRecord(parseContext(N).parts(first)).bootTime! > 0);
  });

  it("shippedMatching: the paths a package configured since the last audit ships that a domain's pattern matches, with its upgrade: the cause of a library replaced under a running unit", () => {
    const systemd = domainByName("systemd")!;
    const targets = systemd.records!([{ name: "qm-lib.service", active: true }]);
    const lists = {
      // Listed where dpkg installed it; a process maps it through the merged /usr.
      "other.list":
        "/.\n/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu/libother.so.1\n/usr/share/doc/other/README\n",
      "qm-demo.list": "/usr/lib/x86_64-linux-gnu/libdemo.so.2\n",
    };
    const since = String(Date.UTC(2026, 11, 1, 9, 30) / 1000);
    const host = parseHostRecord(parseContext(N).parts(sectionOverLogs(since, targets, lists)));
    // qm-demo was only unpacked since (no configure step): its list is not read.
    assert.deepEqual([...host.shippedBy!], [["/lib/x86_64-linux-gnu/libother.so.1", "other"]]);
    assert.deepEqual([...host.shippedIn!.values()].map(packageChange), ["other 1.0 → 1.1"]);
    // No other package's event joins the record of every domain's causes.
    assert.deepEqual(host.packages, []);
    const library = "/usr/lib/x86_64-linux-gnu/libother.so.1";
    const unitItem = (because: string): DriftItem => ({
      ...item("systemd", "qm-lib.service:libraries", "active with the libraries it started with"),
      declared: "active with the libraries it started with",
      latent: { after: "restart", becomes: "restarted with the libraries on disk", because },
      latentPolicy: "ticket",
    });
    const [replaced, unrecorded] = attachCauses(
      [
        unitItem(`/usr/lib/x86_64-linux-gnu/libgone.so.1, ${library}`),
        unitItem("/usr/lib/libx.so.1"),
      ],
      host,
      { node: "cache-07", since: Number(since) * 1000 },
    );
    assert.deepEqual(replaced!.cause, {
      kind: "package-file",
      at: "2026-12-01T11:00:01Z",
      by: "apt-get",
      evidence: `${library} replaced by other 1.0 → 1.1`,
      group: "package: other 1.0 → 1.1",
    });
    assert.equal(unrecorded!.cause, undefined);
  });

  it("globs: each existing match's mtime (at most 500), and the package whose conffile it is", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "qm-cause-globs-"));
    try {
      for (let i = 0; i < 501; i++) writeFileSync(path.join(dir, `f${i}`), "");
      const ctx = probeContext(N, 1024);
      const script = causeProbeScript(
        causeProbe({ globs: ["/etc/ssh/ssh_config", `${dir}/*`, `${dir}/none-*`] }, ctx),
        ctx,
      );
      const out = execFileSync("/bin/sh", ["-s"], { input: `QM_SINCE=\nQM_N=${N}\n${script}` });
      const section = parseProbeOutput(out.toString(), N).get("cause")!;
      const host = parseHostRecord(parseContext(N).parts(section.output));
      assert.equal(host.stat.size, 500);
      assert.equal([...host.stat.keys()].filter((f) => f.startsWith(dir)).length, 499);
      assert.ok(!host.stat.has(`${dir}/none-*`));
      // This machine's openssh-client ships it as a conffile.
      if (existsSync("/var/lib/dpkg/status") && existsSync("/etc/ssh/ssh_config"))
        assert.equal(host.owned.get("/etc/ssh/ssh_config")?.package, "openssh-client");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("stat without entries: the matches of the domain's own glob alone, and nothing where none", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "qm-cause-stat-"));
    try {
      mkdirSync(path.join(dir, "a.d"));
      writeFileSync(path.join(dir, "a.d/one.conf"), "");
      writeFileSync(path.join(dir, "a.d/two.txt"), "");
      const ctx = probeContext(N, 1024);
      const stat = [{ under: `${dir}/*.d/*.conf` }, { under: `${dir}/*.none/*.conf` }];
      const script = causeProbeScript(causeProbe({ stat }, ctx), ctx);
      const out = execFileSync("/bin/sh", ["-s"], { input: `QM_SINCE=\nQM_N=${N}\n${script}` });
      const section = parseProbeOutput(out.toString(), N).get("cause")!;
      const host = parseHostRecord(parseContext(N).parts(section.output));
      assert.deepEqual([...host.stat.keys()], [`${dir}/a.d/one.conf`]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // This machine's own dpkg records: openssh-client ships /usr/bin/ssh (its md5sums list) and the
  // conffile /etc/ssh/ssh_config (its status entry).
  it("the events of a declared file's package are sent, named by its md5sums list or its status", () => {
    assert.doesNotMatch(sectionOverLogs(""), /openssh-client/);
    for (const file of ["/usr/bin/ssh", "/etc/ssh/ssh_config"])
      assert.match(
        sectionOverLogs("", { packages: ["qm-demo", "qm-extra"], files: [file] }),
        /^2026-12-01 13:00:01 upgrade openssh-client:amd64 1\.0 1\.1$/m,
        file,
      );
  });

  it("since the last audit (11:30), only the events and transactions after it are sent", () => {
    const section = sectionOverLogs(String(Date.UTC(2026, 11, 1, 11, 30) / 1000));
    assert.match(section, /^2026-12-01 12:00:01 remove qm-extra/m);
    assert.doesNotMatch(section, /qm-demo/);
  });

  // Every action dpkg logs, as it writes them.
  const EVERY_ACTION = [
    "2026-12-01 10:00:00 startup archives unpack",
    "2026-12-01 10:00:01 install qm-demo:all <none> 1.0",
    "2026-12-01 10:00:01 status half-installed qm-demo:all 1.0",
    "2026-12-01 10:00:02 upgrade qm-extra:all 1.0 1.1",
    "2026-12-01 10:00:02 trigproc man-db:amd64 2.11.2-2 <none>",
    "2026-12-01 10:00:03 configure qm-demo:all 1.0 <none>",
    "2026-12-01 10:00:03 conffile /etc/qm/demo.conf keep",
    "2026-12-01 10:00:03 conffile /etc/qm/other.conf install",
    "2026-12-01 10:00:04 status installed qm-demo:all 1.0",
    "2026-12-01 10:00:05 remove qm-extra:all 1.1 <none>",
    "2026-12-01 10:00:06 purge qm-extra:all 1.1 <none>",
    "2026-12-01 10:00:07 install other:all <none> 1.0",
    "2026-12-01 10:00:08 status config-files qm-extra:all 1.1",
    "",
  ];
  for (const awk of ["", 'awk() { busybox awk "$@"; }\n'])
    it(`each action's dpkg.log lines are sent or not by what is asked: a first audit, and configure steps since a last audit (${awk ? "busybox awk" : "the host's awk"})`, () => {
      const sent = (since: string, steps: boolean) => {
        const targets = { packages: ["qm-demo", "qm-extra"], files: ["/etc/qm/demo.conf"], steps };
        const section = sectionOverLogs(since, targets, {}, EVERY_ACTION, undefined, awk);
        return partsByLabel("cause", parseContext(N).parts(section)).get("dpkg-log");
      };
      const lines = (...at: number[]) => at.map((i) => `${EVERY_ACTION[i]}\n`).join("");
      // The declared packages' changes and the declared conffile's lines.
      assert.equal(sent("", true), lines(1, 3, 6, 9, 10));
      assert.equal(sent(String(Date.UTC(2026, 11, 1, 9) / 1000), false), lines(1, 3, 6, 9, 10));
      // Also every configure step, every conffile line and each step's end.
      assert.equal(
        sent(String(Date.UTC(2026, 11, 1, 9) / 1000), true),
        lines(1, 3, 5, 6, 7, 8, 9, 10),
      );
    });

  it("a log not modified since the last audit is not read at all: nothing was appended to it since", () => {
    const since = Date.UTC(2026, 11, 1, 11, 30) / 1000;
    const targets = { packages: ["qm-demo", "qm-extra"], files: [], steps: true };
    // Its lines after 11:30 would be sent (host clocks go back, logs get copied): only the mtime
    // tells the log unchanged.
    const unchanged = sectionOverLogs(String(since), targets, {}, DPKG_LOG, since - 1);
    assert.doesNotMatch(unchanged, /qm-extra|Start-Date/);
    assert.match(unchanged, /mark apt-history\n(.|\n)*mark boot\n\d+\n$/);
    for (const modified of [since, since + 60])
      assert.match(
        sectionOverLogs(String(since), targets, {}, DPKG_LOG, modified),
        /^2026-12-01 12:00:01 remove qm-extra(.|\n)*^Commandline: apt-get remove qm-extra$/m,
      );
    // Without a last audit the mtime does not matter.
    assert.match(sectionOverLogs("", targets, {}, DPKG_LOG, since - 1), /remove qm-extra/);
  });

  it("a log larger than LOG_TAIL_BYTES is read as its last LOG_TAIL_BYTES", () => {
    const filler = "2026-12-01 09:00:00 status installed filler:all 1.0";
    const log = [
      "2026-12-01 09:00:00 upgrade qm-demo:all 0.9 1.0",
      ...Array<string>(Math.ceil(LOG_TAIL_BYTES / filler.length)).fill(filler),
      ...DPKG_LOG,
    ];
    const section = sectionOverLogs("", undefined, {}, log);
    assert.doesNotMatch(section, /qm-demo:all 0\.9/);
    assert.match(section, /^2026-12-01 10:00:01 upgrade qm-demo:all 1\.0 1\.1$/m);
    assert.match(section, /^2026-12-01 12:00:01 remove qm-extra/m);
  });
});

describe("the host's clock, without date", () => {
  // Fixed offsets (POSIX TZ strings, no time zone files): the offset now is the offset then.
  const zones = ["UTC0", "<+0530>-5:30", "<-0930>9:30", "<+1400>-14"];
  // Leap days, a century that is not a leap year, the ends of days and years.
  const times = [86399, 951782400, 951868799, 1709164800, 1767225599, 1796661856, 4107542400];
  const clockOf = (since: string, awk: string, TZ: string) => {
    const ctx = probeContext(N, 1024);
    const script = causeProbeScript(causeProbe({}, ctx), ctx);
    const out = execFileSync("/bin/sh", ["-s"], {
      input: `QM_SINCE=${since}\n${awk}${script}`,
      env: { TZ, PATH: "/usr/bin:/bin" },
    }).toString();
    return partsByLabel("cause", parseContext(N).parts(causeOutput(out))).get("clock");
  };
  for (const awk of ["", 'awk() { busybox awk "$@"; }\n'])
    it(`the last audit's local time as date prints it, from the epoch and stat's offset (${awk ? "busybox awk" : "the host's awk"})`, () => {
      for (const TZ of zones) {
        for (const t of times) {
          const date = execFileSync("date", ["-d", `@${t}`, "+%Y-%m-%d %H:%M:%S %z"], {
            env: { TZ },
          }).toString();
          assert.equal(clockOf(String(t), awk, TZ), date, `${TZ} ${t}`);
        }
        const offset = execFileSync("date", ["+%z"], { env: { TZ } }).toString();
        assert.equal(clockOf("", awk, TZ), `- - ${offset}`, TZ);
      }
    });

  it("across a DST change since the last audit, no log line is placed before it", () => {
    // The last audit at 00:30 UTC, 01:30 CET; the clocks went forward at 01:00 UTC, and the probe
    // picked the lines from 02:30 at today's +0200. A line placed before the last audit (an older
    // probe's, which picked them from 01:30) is no change since.
    const since = Date.UTC(2026, 2, 29, 0, 30);
    const output = marked(N, [
      ["clock", "2026-03-29 02:30:00 +0200\n"],
      [
        "dpkg-log",
        "2026-03-29 01:45:00 upgrade qm-early:all 1.0 1.1\n2026-03-29 01:45:00 configure qm-early:all 1.1 <none>\n2026-03-29 03:10:00 upgrade qm-late:all 1.0 1.1\n",
      ],
      [
        "apt-history",
        "Start-Date: 2026-03-29  01:44:59\nCommandline: apt-get install qm-early\nEnd-Date: 2026-03-29  01:45:01\nStart-Date: 2026-03-29  03:09:59\nCommandline: apt-get install qm-late\nEnd-Date: 2026-03-29  03:10:01\n",
      ],
    ]);
    const host = parseHostRecord(parseContext(N).parts(output), since);
    assert.deepEqual(
      host.packages.map((p) => [p.name, new Date(p.at).toISOString()]),
      [["qm-late", "2026-03-29T01:10:00.000Z"]],
    );
    assert.deepEqual(host.steps, []);
    assert.deepEqual(
      host.apt.map((t) => t.commandline),
      ["apt-get install qm-late"],
    );
    // Without a last audit, every line is kept.
    assert.equal(parseHostRecord(parseContext(N).parts(output)).packages.length, 2);
  });
});

describe("dpkg's status, read one package at a time", () => {
  const md5 = (c: string) => c.repeat(32);
  const STATUS = [
    ["Package: qm-a", "Status: install ok installed", "Conffiles:"],
    [` /etc/qm/a.conf ${md5("a")}`, ` /etc/qm/other.conf ${md5("b")}`],
    ["Description: a", " long one", " .", ""],
    // A record without conffiles whose text names a declared path is not read as one.
    [
      "Package: qm-b",
      "Status: install ok installed",
      "Description: names",
      ` /etc/qm/a.conf ${md5("0")}`,
      "",
    ],
    ["Package: qm-c", "Conffiles:", ` /etc/qm/c.conf ${md5("c")} obsolete`, "", ""],
  ]
    .flat()
    .join("\n");
  for (const awk of ["", 'awk() { busybox awk "$@"; }\n'])
    it(`names the owner of each declared conffile; the main input's lines after it keep their blank lines (${awk ? "busybox awk" : "the host's awk"})`, () => {
      const dir = mkdtempSync(path.join(tmpdir(), "qm-cause-status-"));
      try {
        writeFileSync(path.join(dir, "status"), STATUS);
        const ctx = probeContext(N, 1024);
        const targets = { files: ["/etc/qm/a.conf", "/etc/qm/c.conf"] };
        const script = causeProbeScript(
          `${causeProbe(targets, ctx)}\nprintf 'x\\n\\n\\ny\\n'`,
          ctx,
        ).replaceAll("/var/lib/dpkg/status", path.join(dir, "status"));
        const section = causeOutput(
          execFileSync("/bin/sh", ["-s"], { input: `QM_SINCE=\n${awk}${script}` }).toString(),
        );
        const host = parseHostRecord(parseContext(N).parts(section));
        assert.deepEqual(
          [...host.owned],
          [
            ["/etc/qm/a.conf", { package: "qm-a", digest: md5("a") }],
            ["/etc/qm/c.conf", { package: "qm-c", digest: md5("c") }],
          ],
        );
        // With RS left at "", the lines after would have lost their blank lines.
        assert.ok(section.endsWith("\nx\n\n\ny\n"), section);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

  for (const shell of [["dash"], ["bash", "--posix"], ["busybox", "sh"]])
    for (const awk of ["", 'awk() { busybox awk "$@"; }\n'])
      it(`read once where the packages domain reads it too, each section sending what it sends alone (${shell.join(" ")}, ${awk ? "busybox awk" : "the host's awk"})`, () => {
        const dir = mkdtempSync(path.join(tmpdir(), "qm-cause-status-"));
        try {
          const status = path.join(dir, "status");
          writeFileSync(status, STATUS);
          const ctx = probeContext(N, 1024);
          const packages = domainByName("packages")!;
          const sections = {
            packages: {
              name: "packages",
              script: packages.probe({ "qm-a": "*", "qm-c": "*" }, ctx),
              awk: packages.awk,
            },
            cause: causeSection({ files: ["/etc/qm/a.conf", "/etc/qm/c.conf"] }, ctx),
          };
          /** Each section's output, and how many times the status was opened. */
          const run = (...names: (keyof typeof sections)[]) => {
            const trace = path.join(dir, "trace");
            const script = buildProbe(
              N,
              names.map((name) => sections[name]),
            ).script.replaceAll("/var/lib/dpkg/status", status);
            const output = execFileSync(
              "strace",
              ["-f", "-qq", "-e", "trace=openat", "-o", trace, shell[0]!, ...shell.slice(1), "-s"],
              { input: `QM_SINCE=\n${awk}${script}` },
            ).toString();
            const opens = readFileSync(trace, "utf8")
              .split("\n")
              .filter((l) => l.includes(`"${status}"`) && !l.includes("ENOENT")).length;
            return { sections: parseProbeOutput(output, N), opens };
          };
          const both = run("packages", "cause");
          assert.equal(both.opens, 1);
          for (const name of ["packages", "cause"] as const) {
            const alone = run(name);
            assert.equal(alone.opens, 1, name);
            assert.equal(both.sections.get(name)!.output, alone.sections.get(name)!.output, name);
          }
          const owned = parseHostRecord(
            parseContext(N).parts(both.sections.get("cause")!.output),
          ).owned;
          assert.deepEqual([...owned.keys()], ["/etc/qm/a.conf", "/etc/qm/c.conf"]);
          assert.match(both.sections.get("packages")!.output, /^Package: qm-c$/m);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      });
});

// The cause section of an rpm host (RHEL 9): rpm's records of qm-rpm, the owner of two declared
// files, and the live sha256 of those files.
const RPM_CONF_SHA = "9259f773c2857bee7f8193586fb1b40161256df4ed0d29b892316a80f2373719";
const rpmCaptured = marked(N, [
  ["boot", "1796205409\n"],
  ["clock", "2026-12-02 09:11:29 +0100\n"],
  ["stat", "1796285200 root /etc/qm-rpm.conf\n1796285300 alice /etc/qm-app.conf\n"],
  [
    "rpm",
    "qm-rpm 1796285253 1796285250 (none):1.1-1\nqm-old 1700000000 1700000000 2:3.0-1\npackage qm-gone is not installed\n",
  ],
  [
    "rpm-owned",
    [
      `qm-rpm 1796285253 1796285250 (none):1.1-1 8 ${RPM_CONF_SHA} /etc/qm-rpm.conf`,
      `qm-rpm 1796285253 1796285250 (none):1.1-1 8 ${"1".repeat(64)} /etc/qm-app.conf`,
      `qm-md5 1796285253 1796285240 (none):1.0-1 1 ${"2".repeat(32)} /etc/qm-md5.conf`,
      "file /etc/qm-own.conf is not owned by any package",
      "",
    ].join("\n"),
  ],
  ["sha256", `${RPM_CONF_SHA}  /etc/qm-rpm.conf\n${"3".repeat(64)}  /etc/qm-app.conf\n`],
]);

describe("causes from an rpm host's records", () => {
  const since = 1796285000000;
  const causes = (items: DriftItem[], last: number | undefined = since) =>
    attachCauses(items, parseHostRecord(parseContext(N).parts(rpmCaptured), last), {
      node: "rhel-01",
      ...(last !== undefined && { since: last }),
    }).map((i) => i.cause);

  it("a package at the version rpm installed since the last audit: its install time, its transaction as group, no `by`", () => {
    assert.deepEqual(causes([item("packages", "qm-rpm", "1.1-1")])[0], {
      kind: "package",
      at: "2026-12-03T08:07:33Z",
      evidence: "qm-rpm 1.1-1 installed",
      group: "package: qm-rpm 1.1-1 installed",
    });
  });

  it("a package installed before the last audit, or at another version, is unknown", () => {
    const [old, other] = causes([
      item("packages", "qm-old", "2:3.0-1"),
      item("packages", "qm-rpm", "1.2-1"),
    ]);
    assert.equal(old!.kind, "unknown");
    assert.equal(other!.kind, "unknown");
  });

  it("a file with the sha256 rpm recorded is package-file at its package's install time; other contents a local edit", () => {
    const [shipped, edited] = causes([
      item("files", "/etc/qm-rpm.conf", "level = 2\n"),
      item("files", "/etc/qm-app.conf", "port = 8080\n"),
    ]);
    assert.deepEqual(shipped, {
      kind: "package-file",
      at: "2026-12-03T08:07:33Z",
      evidence: "/etc/qm-rpm.conf replaced by qm-rpm 1.1-1 installed",
      group: "package: qm-rpm 1.1-1 installed",
    });
    assert.equal(edited!.kind, "file-edit");
    assert.match(edited!.evidence, /owner alice, a local edit of qm-rpm's file$/);
  });

  it("a file whose package was installed before the last audit, or whose digest the probe does not compute, is unknown", () => {
    const shipped = item("files", "/etc/qm-rpm.conf", "level = 2\n");
    assert.equal(causes([shipped], 1796285300000)[0]!.kind, "unknown");
    assert.equal(causes([item("files", "/etc/qm-md5.conf", "x")])[0]!.kind, "unknown");
  });

  it("the probe's rpm section reads a real rpm database under /bin/sh", async (t) => {
    if (!existsSync("/usr/bin/rpmbuild")) return t.skip("needs rpm");
    const dir = mkdtempSync(path.join(tmpdir(), "qm-cause-rpm-"));
    try {
      const conf = "/etc/qm-cause-unit.conf";
      const rpm = await buildRpm(
        {
          name: "qm-cause-unit",
          version: "1.0",
          release: "1",
          files: { [conf]: { contents: "level = 1\n", config: true } },
        },
        path.join(dir, "build"),
      );
      const db = path.join(dir, "db");
      execFileSync("rpm", ["--dbpath", db, "--initdb"]);
      execFileSync("rpm", ["--dbpath", db, "-i", "--justdb", "--nodeps", rpm], { stdio: "ignore" });
      // This machine's dpkg database would hide rpm's from the probe: the section runs with its
      // test for an rpm host passed, and an `rpm` on PATH that reads the test's database.
      writeFileSync(path.join(dir, "rpm"), `#!/bin/sh\nexec /usr/bin/rpm --dbpath ${db} "$@"\n`, {
        mode: 0o755,
      });
      const ctx = probeContext(N, 1024);
      const targets = { packages: ["qm-cause-unit", "qm-none"], files: [conf] };
      const probe = causeProbeScript(causeProbe(targets, ctx), ctx);
      // The probe without its own PATH, so the `rpm` above is found.
      const script = probe
        .replace(/^if .*command -v rpm .*; then$/m, "if true; then")
        .replace(/^PATH=.*$/m, "");
      assert.notEqual(script, probe);
      const section = causeOutput(
        execFileSync("/bin/sh", ["-s"], {
          input: `QM_SINCE=\n${script}`,
          env: { PATH: `${dir}:/usr/bin:/bin` },
        }).toString(),
      );
      const host = parseHostRecord(parseContext(N).parts(section));
      assert.deepEqual(
        host.packages.map((e) => [e.name, e.action, e.to]),
        [["qm-cause-unit", "installed", "1.0-1"]],
      );
      // The file is not on this machine: rpm's record of it, no live digest.
      assert.deepEqual(host.owned.get(conf), {
        package: "qm-cause-unit",
        digest: "9259f773c2857bee7f8193586fb1b40161256df4ed0d29b892316a80f2373719",
      });
      assert.equal(host.digest.size, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("causes on an apk host (busybox userland)", () => {
  it("a file with the sha1 apk recorded is unknown (apk records no time); other contents a local edit", (t) => {
    if (process.getuid?.() !== 0 || !existsSync("/bin/busybox"))
      return t.skip("needs root (chroot) and busybox");
    const root = mkdtempSync(path.join(tmpdir(), "qm-cause-apk-"));
    try {
      mkdirSync(path.join(root, "bin"));
      mkdirSync(path.join(root, "etc"));
      mkdirSync(path.join(root, "dev"));
      execFileSync("/usr/bin/mknod", ["-m", "666", path.join(root, "dev/null"), "c", "1", "3"]);
      mkdirSync(path.join(root, "lib/apk/db"), { recursive: true });
      copyFileSync("/bin/busybox", path.join(root, "bin/busybox"));
      // A link per applet, as Alpine has: without /proc busybox's shell cannot find itself.
      const applets = execFileSync("/bin/busybox", ["--list"]).toString().split("\n");
      for (const applet of applets.filter((a) => a && a !== "busybox"))
        symlinkSync("busybox", path.join(root, "bin", applet));
      const sha1 = (text: string) => createHash("sha1").update(text).digest("base64");
      writeFileSync(
        path.join(root, "lib/apk/db/installed"),
        [
          "C:Q1abc=",
          "P:qm-apk",
          "V:1.1-r0",
          "F:etc",
          "R:qm-apk.conf",
          "a:0:0:644",
          `Z:Q1${sha1("level = 2\n")}`,
          "R:qm-edit.conf",
          `Z:Q1${sha1("port = 80\n")}`,
          "",
          "P:other",
          "F:usr/bin",
          "R:qm-apk.conf",
          `Z:Q1${sha1("x")}`,
          "",
        ].join("\n"),
      );
      writeFileSync(path.join(root, "etc/qm-apk.conf"), "level = 2\n");
      writeFileSync(path.join(root, "etc/qm-edit.conf"), "port = 8080\n");
      writeFileSync(path.join(root, "etc/qm-own.conf"), "mine\n");
      const files = ["/etc/qm-apk.conf", "/etc/qm-edit.conf", "/etc/qm-own.conf"];
      const ctx = probeContext(N, 1024);
      const section = causeOutput(
        execFileSync("/usr/sbin/chroot", [root, "/bin/sh", "-s"], {
          input: `QM_SINCE=\n${causeProbeScript(causeProbe({ packages: ["qm-apk"], files }, ctx), ctx)}`,
          env: { PATH: "/bin" },
        }).toString(),
      );
      const host = parseHostRecord(parseContext(N).parts(section));
      assert.deepEqual(
        [...host.owned.keys()].sort(),
        ["/etc/qm-apk.conf", "/etc/qm-edit.conf"],
        section,
      );
      const [shipped, edited, own, pkg] = attachCauses(
        [...files.map((f) => item("files", f, "x")), item("packages", "qm-apk", "1.1-r0")],
        host,
        { node: "alpine-01" },
      ).map((i) => i.cause!);
      assert.equal(shipped!.kind, "unknown");
      assert.equal(edited!.kind, "file-edit");
      assert.match(edited!.evidence, /a local edit of qm-apk's file$/);
      assert.equal(own!.kind, "file-edit");
      assert.equal(pkg!.kind, "unknown");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("host times that are not times", () => {
  const record = (parts: [string, string][]) =>
    parseHostRecord(parseContext(N).parts(marked(N, parts)));
  const causeOf = (it: DriftItem, parts: [string, string][]) =>
    attachCauses([it], record(parts), { node: "n" })[0]!.cause!;

  it("an rpm INSTALLTIME past the audit's tolerance, or a boot time that is no number, gives unknown saying why", () => {
    const rpm = causeOf(item("packages", "qm-rpm", "1.1-1"), [
      ["rpm", "qm-rpm 999999999999 1796285250 (none):1.1-1\n"],
    ]);
    assert.deepEqual(rpm, {
      kind: "unknown",
      evidence:
        "the time the host recorded for this package change, +033658-09-27T01:46:39Z, is later than the audit by more than a day: the host's clock or records cannot be trusted for this change",
    });
    const boot = causeOf(item("kernel", "kernel_version", "6.1.0-29-amd64"), [["boot", "x1\n"]]);
    assert.equal(boot.kind, "unknown");
    assert.match(
      boot.evidence,
      /^the time the host recorded for this reboot change, NaN, is not a time: /,
    );
    // Within a day ahead of the auditor's clock, a time stands: clocks drift.
    const soon = Math.floor(Date.now() / 1000) + 3600;
    const reboot = causeOf(item("kernel", "kernel_version", "6.1.0-29-amd64"), [
      ["boot", `${soon}\n`],
    ]);
    assert.equal(reboot.kind, "reboot");
  });
});

describe("a host sending its whole dpkg.log", () => {
  it("gives causes bounded whatever it sent: the group cut with the whole one's digest, `by` and evidence cut", () => {
    // 150,000 upgrades in one apt transaction, 20 of them declared packages; a 50,000-character user.
    const upgrades = Array.from(
      { length: 150_000 },
      (_, i) => `2026-12-02 09:57:53 upgrade pkg-${i}:amd64 1.0-${i} 2.0-${i}\n`,
    ).join("");
    const history = (user: string) =>
      `Start-Date: 2026-12-02  09:57:53\nCommandline: apt-get upgrade\nRequested-By: ${user} (1000)\nEnd-Date: 2026-12-02  09:58:01\n`;
    const parts = (user: string, extra = ""): [string, string][] => [
      ["clock", "2026-12-02 09:11:29 +0100\n"],
      ["dpkg-log", upgrades + extra],
      ["apt-history", history(user)],
    ];
    const declared = Array.from({ length: 20 }, (_, i) => 149_980 + i);
    const items = declared.map((i) => item("packages", `pkg-${i}`, `2.0-${i}`));
    const causesOf = (p: [string, string][]) =>
      attachCauses(items, parseHostRecord(parseContext(N).parts(marked(N, p))), {
        node: "db-01",
      }).map((i) => i.cause!);
    const causes = causesOf(parts("a".repeat(50_000)));
    for (const cause of causes) {
      assert.equal(cause.kind, "package");
      assert.ok(cause.group!.length <= MAX_CAUSE_CHARS.group, `${cause.group!.length}`);
      assert.ok(cause.by!.length <= MAX_CAUSE_CHARS.by);
      assert.match(
        cause.group!,
        /^package: pkg-\d+ 1\.0-\d+ → 2\.0-\d+, .*… \(\d+ characters, sha256 [0-9a-f]{32}\)$/,
      );
    }
    // One transaction: one group on every item, and another transaction another group.
    assert.equal(new Set(causes.map((c) => c.group)).size, 1);
    const other = causesOf(parts("bob", "2026-12-02 09:57:54 upgrade pkg-x:amd64 1 2\n"));
    assert.notEqual(other[0]!.group, causes[0]!.group);
    assert.ok(JSON.stringify(causes).length < 20 * 3000);
  });
});
