import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, writeFile, chmod, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { runCli } from "../support/cli.js";
import { removeTree, writeTree } from "../support/tree.js";

// Declares, for every domain this machine can show, a value that differs from its live state,
// and checks what the operator sees for each drift item: domain, key, declared, live, severity,
// source.

const live = async (file: string) => (await readFile(file, "utf8")).trim();

describe("drift is found in every domain this machine can show", () => {
  let dir: string;
  let scratch: string;
  let listener: net.Server;
  let port: number;
  let report: any;
  let exitCode: number;

  before(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), "qm-drift-"));
    await writeFile(path.join(scratch, "app.conf"), "workers = 8\n");
    await chmod(path.join(scratch, "app.conf"), 0o644);
    listener = net.createServer().listen(0, "127.0.0.1");
    await new Promise((resolve) => listener.once("listening", resolve));
    port = (listener.address() as net.AddressInfo).port;
    const device = execFileSync(
      "sh",
      ["-c", "grep -l '\\[' /sys/block/*/queue/scheduler | head -1"],
      { encoding: "utf8" },
    )
      .trim()
      .split("/")[3];
    dir = await writeTree({
      "fleet.yaml": "policy:\n  files: { severity: critical }\n",
      "groups/lab.yaml": [
        "system:",
        "  sysctl_parameters:",
        "    vm.swappiness: 7",
        "packages:",
        "  installed_manifest:",
        "    bash: 1.0-1",
        "    telnetd: absent",
        "",
      ].join("\n"),
      "nodes/localhost.yaml": [
        "groups: [lab]",
        "system:",
        "  kernel_version: 0.0.1-declared",
        "storage:",
        `  io_scheduler: { ${device}: kyber }`,
        "networking:",
        "  routes:",
        "    - { dst: 198.51.100.0/24, via: 192.0.2.77 }",
        "  listening_ports: [tcp/1]",
        "files:",
        `  - path: ${path.join(scratch, "app.conf")}`,
        '    contents: "workers = 4\\n"',
        '    mode: "0600"',
        "",
      ].join("\n"),
    });
    const result = await runCli(["audit", "--local", "--manifests", dir, "--format", "json"]);
    exitCode = result.exitCode;
    report = JSON.parse(result.stdout);
  });

  after(async () => {
    listener.close();
    await removeTree(dir);
    await rm(scratch, { recursive: true, force: true });
  });

  const item = (domain: string, key: string) => {
    const found = report.nodes[0].drift.find((d: any) => d.domain === domain && d.key === key);
    assert.ok(
      found,
      `no ${domain} drift for ${key}; got ${JSON.stringify(report.nodes[0].drift.map((d: any) => `${d.domain} ${d.key}`))}`,
    );
    return found;
  };
  const base = (p: string) => p.split("/").slice(-2).join("/");

  it("exits 1 with the node drifted", () => {
    assert.equal(exitCode, 1);
    assert.equal(report.nodes[0].status, "drift");
  });

  it("kernel", async () => {
    const d = item("kernel", "kernel_version");
    assert.deepEqual(
      [d.declared, d.live, d.severity, base(d.source.file), d.source.line],
      [
        "0.0.1-declared",
        await live("/proc/sys/kernel/osrelease"),
        "high",
        "nodes/localhost.yaml",
        3,
      ],
    );
  });

  it("sysctl, declared in a group", async () => {
    const d = item("sysctl", "vm.swappiness");
    assert.deepEqual(
      [d.declared, d.live, d.severity, base(d.source.file), d.source.line],
      ["7", await live("/proc/sys/vm/swappiness"), "medium", "groups/lab.yaml", 3],
    );
  });

  it("io_scheduler", () => {
    const d = report.nodes[0].drift.find((x: any) => x.domain === "io_scheduler");
    assert.ok(d, "io_scheduler drift");
    assert.equal(d.declared, "kyber");
    assert.notEqual(d.live, "kyber");
    assert.deepEqual(
      [d.severity, base(d.source.file), d.source.line],
      ["low", "nodes/localhost.yaml", 5],
    );
  });

  it("routes: a declared route missing", () => {
    const d = item("routes", "198.51.100.0/24 via 192.0.2.77");
    assert.equal(d.live, null);
    assert.deepEqual(
      [d.severity, base(d.source.file), d.source.line],
      ["critical", "nodes/localhost.yaml", 8],
    );
  });

  it("packages: a changed version, from the group", () => {
    const d = item("packages", "bash");
    const version = execFileSync("dpkg-query", ["-W", "-f", "${Version}", "bash"], {
      encoding: "utf8",
    });
    assert.deepEqual(
      [d.declared, d.live, d.severity, base(d.source.file), d.source.line],
      ["1.0-1", version, "high", "groups/lab.yaml", 6],
    );
  });

  it("ports: an unauthorized listener and a declared port not listening", () => {
    const unauthorized = item("ports", `tcp/${port}`);
    assert.deepEqual(
      [unauthorized.declared, unauthorized.live, unauthorized.severity],
      ["closed", "listening", "high"],
    );
    assert.match(unauthorized.detail, /127\.0\.0\.1/);
    const missing = item("ports", "tcp/1");
    assert.deepEqual(
      [missing.declared, missing.live, base(missing.source.file), missing.source.line],
      ["listening", "closed", "nodes/localhost.yaml", 9],
    );
  });

  it("files: contents with a -want +got diff, and mode, at the policy's severity", () => {
    const file = path.join(scratch, "app.conf");
    const contents = item("files", file);
    assert.deepEqual(
      [contents.declared, contents.live, contents.severity],
      ["workers = 4\n", "workers = 8\n", "critical"],
    );
    assert.match(contents.diff, /^-workers = 4$/m);
    assert.match(contents.diff, /^\+workers = 8$/m);
    const mode = item("files", `${file}:mode`);
    assert.deepEqual(
      [mode.declared, mode.live, base(mode.source.file), mode.source.line],
      ["0600", "0644", "nodes/localhost.yaml", 13],
    );
  });

  it("a package declared absent and absent is not drift", () => {
    assert.equal(
      report.nodes[0].drift.some((d: any) => d.key === "telnetd"),
      false,
    );
  });
});
