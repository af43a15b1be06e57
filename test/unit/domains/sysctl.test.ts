import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { sysctl } from "../../../src/domains/sysctl/index.js";
import { parsePersistedSysctl, parseRuntimeSysctl } from "../../../src/domains/sysctl/parse.js";

describe("sysctl", () => {
  it("reads runtime values from grep -H output, joining vector values with spaces", () => {
    const live = parseRuntimeSysctl(
      "/proc/sys/net/core/somaxconn:4096\n/proc/sys/net/ipv4/ip_local_port_range:32768\t60999\n",
    );
    assert.deepEqual(
      [...live],
      [
        ["net.core.somaxconn", "4096"],
        ["net.ipv4.ip_local_port_range", "32768 60999"],
      ],
    );
  });

  it("applies persisted files like sysctl --system: /etc masks same-named files, name order, sysctl.conf last", () => {
    const persisted = parsePersistedSysctl(
      [
        "/usr/lib/sysctl.d/50-default.conf:net.core.somaxconn = 128",
        "/etc/sysctl.d/50-default.conf:net.core.somaxconn = 1024",
        "/usr/lib/sysctl.d/99-late.conf:vm.swappiness=30",
        "/etc/sysctl.d/10-early.conf:# a comment",
        "/etc/sysctl.d/10-early.conf:vm.swappiness = 10",
        "/etc/sysctl.conf:-fs.file-max = 1000",
        "/etc/sysctl.conf:net/ipv4/ip_forward = 1",
        "/etc/sysctl.conf:net.ipv4.conf.*.rp_filter = 2",
      ].join("\n"),
    );
    assert.deepEqual(
      Object.fromEntries([...persisted].map(([k, v]) => [k, `${v.value} (${v.file})`])),
      {
        "net.core.somaxconn": "1024 (/etc/sysctl.d/50-default.conf)",
        "vm.swappiness": "30 (/usr/lib/sysctl.d/99-late.conf)",
        "fs.file-max": "1000 (/etc/sysctl.conf)",
        "net.ipv4.ip_forward": "1 (/etc/sysctl.conf)",
      },
    );
  });

  const live = (runtime: Record<string, string>, persisted: Record<string, string> = {}) => ({
    runtime: new Map(Object.entries(runtime)),
    persisted: new Map(
      Object.entries(persisted).map(([k, v]) => [
        k,
        { value: v, file: "/etc/sysctl.d/99-tuning.conf" },
      ]),
    ),
  });

  const NOT_PERSISTED =
    "no sysctl.conf or sysctl.d file sets it (the live value is the kernel default or a runtime change): " +
    "persist the declared value in sysctl.d to keep it across reboots";

  it("reports a runtime value that differs, and says when it is a hotfix that reverts at reboot", () => {
    const findings = sysctl.compare(
      { "net.core.somaxconn": "4096", "vm.swappiness": "10", "net.ipv4.tcp_syncookies": "1" },
      live(
        { "net.core.somaxconn": "1024", "vm.swappiness": "60", "net.ipv4.tcp_syncookies": "1" },
        { "net.core.somaxconn": "4096" },
      ),
    );
    assert.deepEqual(
      findings.map((f) => [f.key, f.declared, f.live, f.detail]),
      [
        [
          "net.core.somaxconn",
          "4096",
          "1024",
          "runtime-only change: /etc/sysctl.d/99-tuning.conf sets 4096, so the live value will revert at reboot",
        ],
        ["vm.swappiness", "10", "60", NOT_PERSISTED],
      ],
    );
    assert.deepEqual(findings[0]!.path, ["system", "sysctl_parameters", "net.core.somaxconn"]);
  });

  it("says a value reverts at reboot only when a file persists another one: never for a value not changed at runtime", () => {
    const findings = sysctl.compare(
      { "vm.swappiness": "10", "net.core.somaxconn": "4096" },
      live(
        { "vm.swappiness": "60", "net.core.somaxconn": "1024" },
        { "net.core.somaxconn": "1024" },
      ),
    );
    assert.deepEqual(
      findings.map((f) => [f.key, f.detail]),
      [
        ["vm.swappiness", NOT_PERSISTED],
        // Live is what /etc/sysctl.d sets: the drift survives a reboot, so there is no hint.
        ["net.core.somaxconn", undefined],
      ],
    );
    assert.ok(findings.every((f) => !f.detail?.includes("revert")));
  });

  it("a key the kernel does not have is drift with live null", () => {
    const [finding] = sysctl.compare({ "net.ipv4.tcp_bogus": "1" }, live({}));
    assert.deepEqual(
      [finding!.live, finding!.detail],
      [null, "/proc/sys/net/ipv4/tcp_bogus does not exist on this host"],
    );
  });

  it("declared numbers and strings compare as the kernel prints them", () => {
    const declared = sysctl.schema.parse({
      "net.core.somaxconn": 4096,
      "net.ipv4.ip_local_port_range": "1024   65000",
    });
    assert.deepEqual(
      sysctl.compare(
        declared,
        live({ "net.core.somaxconn": "4096", "net.ipv4.ip_local_port_range": "1024 65000" }),
      ),
      [],
    );
  });

  it("a snapshot declares the persisted keys at their runtime values, and audits clean", () => {
    const state = live(
      { "vm.swappiness": "60", "net.core.somaxconn": "4096" },
      { "vm.swappiness": "10" },
    );
    const declared = sysctl.snapshot(state)!;
    assert.deepEqual(declared, { "vm.swappiness": "60" });
    assert.deepEqual(sysctl.compare(declared, state), []);
  });

  it("the list form parses `name = value` items", () => {
    assert.deepEqual(sysctl.listForm!("net.ipv4.tcp_syncookies = 1"), [
      "net.ipv4.tcp_syncookies",
      "1",
    ]);
    assert.equal(sysctl.listForm!("net.ipv4.tcp_syncookies 1"), undefined);
  });
});
