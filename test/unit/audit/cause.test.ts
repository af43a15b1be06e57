// Causes from a host's records: the cause section's output as captured on a Debian 12 host, parsed
// and turned into causes. Only a record that explains the live value names a cause.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { attachCauses } from "../../../src/audit/cause/attach.js";
import { causeProbe } from "../../../src/audit/cause/probe.js";
import { parseHostRecord } from "../../../src/audit/cause/record.js";
import {
  buildProbe,
  parseContext,
  parseProbeOutput,
  probeContext,
} from "../../../src/probe/script.js";
import type { DriftItem } from "../../../src/report/schema.js";
import { marked } from "../../support/probe-output.js";

const N = "QMcausetest";
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

const item = (domain: string, key: string, live: unknown, last = "contents"): DriftItem => ({
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
    const { script } = buildProbe(N, [
      {
        name: "cause",
        script: causeProbe({ packages: ["dpkg"], files: ["/etc/hostname"], units: [] }, ctx),
      },
    ]);
    const out = execFileSync("/bin/sh", ["-s"], {
      input: `QM_SINCE=0\nQM_N=${N}\n${script}`,
    }).toString();
    const section = parseProbeOutput(out, N).get("cause")!;
    const host = parseHostRecord(parseContext(N).parts(section.output));
    assert.ok(host.bootTime! > 0);
    assert.ok(host.stat.has("/etc/hostname"));
  });

  it("only the apt transactions a sent dpkg event ran in are sent, an unfinished one included", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "qm-cause-logs-"));
    try {
      const dpkgLog = [
        "2026-12-01 10:00:01 upgrade qm-demo:all 1.0 1.1",
        "2026-12-01 11:00:01 upgrade other:all 1.0 1.1",
        "2026-12-01 12:00:01 remove qm-extra:all 1.0 <none>",
        "",
      ];
      const tx = (start: string, command: string, end?: string) =>
        `\nStart-Date: 2026-12-01  ${start}\nCommandline: ${command}\n${end ? `End-Date: 2026-12-01  ${end}\n` : ""}`;
      writeFileSync(path.join(dir, "dpkg.log"), dpkgLog.join("\n"));
      writeFileSync(
        path.join(dir, "history.log"),
        tx("10:00:00", "apt-get install qm-demo", "10:00:02") +
          tx("11:00:00", "apt-get install other", "11:00:02") +
          tx("12:00:00", "apt-get remove qm-extra"),
      );
      // The logs' own paths are fixed: a `tail` on PATH hands out these instead.
      writeFileSync(
        path.join(dir, "tail"),
        `#!/bin/sh\ncase "$3" in *dpkg.log) cat ${dir}/dpkg.log;; *history.log) cat ${dir}/history.log;; esac\n`,
        { mode: 0o755 },
      );
      const ctx = probeContext(N, 1024);
      const targets = { packages: ["qm-demo", "qm-extra"], files: [], units: [] };
      // The section alone: the whole probe sets its own PATH.
      const section = execFileSync("/bin/sh", ["-s"], {
        input: `QM_SINCE=\nQM_N=${N}\n${causeProbe(targets, ctx)}`,
        env: { PATH: `${dir}:/usr/bin:/bin` },
      }).toString();
      assert.doesNotMatch(section, /other/);
      const host = parseHostRecord(parseContext(N).parts(section));
      assert.deepEqual(
        host.apt.map((t) => t.commandline),
        ["apt-get install qm-demo", "apt-get remove qm-extra"],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
