import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { after, test } from "node:test";
import { firewall, type FirewallDeclared } from "../../../src/domains/firewall/index.js";
import type { FirewallLive } from "../../../src/domains/firewall/parse.js";
import type { Finding } from "../../../src/domains/domain.js";
import type { HostRecord } from "../../../src/domains/host-record.js";
import { ProbeParseError } from "../../../src/errors.js";
import { parseContext } from "../../../src/probe/script.js";
import { chain, nftJson, portRule, table } from "../../support/samples/firewall.js";
import { sampleOf } from "../../support/samples.js";
import { scratchTrees } from "../../support/tree.js";
import { FIXTURE_NONCE, fixture, liveFrom, section } from "./fixtures.js";
import { NOBODY, runProbe } from "./live-probe.js";

const trees = scratchTrees();
const mark = (label: string) => `${FIXTURE_NONCE} mark ${label}`;
const parse = (output: string) => firewall.parse(output, parseContext(FIXTURE_NONCE));
const NOT_ENABLED = "boot-none nftables.service is not enabled: the next boot loads no rules";

/** The declaration with every finding accepted, as an accept PR writes it, one after another. */
const acceptAll = (declared: FirewallDeclared, findings: Finding[]) =>
  findings.reduce((state, finding) => firewall.accept!(state, finding)!, declared);
const drifted = (findings: Finding[]) =>
  findings.filter((f) => JSON.stringify(f.declared) !== JSON.stringify(f.live));

// Captured in a network namespace of a Debian 12 host (nft 1.0.6): the rules file below loaded,
// then `nft add rule inet filter input tcp dport 8080 accept` during an "incident".
const BOOT_RULES = [
  "ct state established,related accept",
  'iifname "lo" accept',
  'tcp dport 22 accept comment "ssh in"',
  "tcp dport { 80, 443 } counter accept",
  "ip saddr @allowed accept",
  'ip saddr 192.168.0.0/16 tcp dport 8080-8090 log prefix "x: " drop',
  "meta l4proto icmp accept",
];

test("the ruleset in nft's words, and what the rules file loads at boot", () => {
  const live = liveFrom(firewall, "debian12-runtime-rule.txt") as FirewallLive;
  assert.deepEqual(firewall.snapshot(live), {
    "inet filter": {
      chains: {
        input: {
          hook: "type filter hook input priority 0",
          policy: "drop",
          rules: [...BOOT_RULES, "tcp dport 8080 accept"],
        },
        forward: { hook: "type filter hook forward priority 0", policy: "accept" },
      },
      sets: { allowed: ["10.0.0.1", "10.0.0.2"] },
    },
    "ip nat": {
      chains: {
        postrouting: {
          hook: "type nat hook postrouting priority 100",
          policy: "accept",
          rules: ['oifname "eth0" masquerade'],
        },
      },
    },
  });
  assert.equal(live.boot?.from, "/etc/nftables.conf");
  assert.deepEqual(live.boot?.ruleset.get("inet filter")?.chains.get("input")?.rules, BOOT_RULES);
  assert.deepEqual(live.boot?.ruleset.get("inet filter")?.sets.get("allowed"), [
    "10.0.0.1",
    "10.0.0.2",
  ]);
});

test("a rule added at runtime is drift in nft's words, gone at reboot, with its cause", () => {
  const live = liveFrom(firewall, "debian12-runtime-rule.txt") as FirewallLive;
  const declared = firewall.snapshot({ ...live, ruleset: live.boot!.ruleset })!;
  const path = ["networking", "firewall", "inet filter", "chains", "input", "rules", 7];
  assert.deepEqual(firewall.compare(declared, live), [
    {
      key: "inet filter input: tcp dport 8080 accept",
      declared: null,
      live: "tcp dport 8080 accept",
      path,
      latent: { after: "reboot", becomes: null, because: "/etc/nftables.conf does not load it" },
    },
  ]);
  // The snapshot of the live ruleset audits clean but for what the next boot drops.
  const clean = firewall.compare(firewall.snapshot(live)!, live);
  assert.deepEqual(
    clean.map((f) => [f.key, f.declared === f.live, f.latent?.becomes]),
    [["inet filter input: tcp dport 8080 accept", true, null]],
  );
});

const BOOT = 1_764_633_600_000;
const NODE = { node: "fw-01" };
/** A host's record with these files' mtimes (epoch milliseconds), booted at BOOT. */
const record = (mtimes: Record<string, number>, more: Partial<HostRecord> = {}): HostRecord => ({
  bootTime: BOOT,
  owned: new Map(),
  digest: new Map(),
  stat: new Map(Object.entries(mtimes).map(([file, mtime]) => [file, { mtime, owner: "root" }])),
  packages: [],
  conffiles: [],
  apt: [],
  ...more,
});

test("cause from the rules file's mtime: runtime where it has not changed, persisted where it has and loads the rule", () => {
  const live = liveFrom(firewall, "debian12-runtime-rule.txt") as FirewallLive;
  // Declared as the file loads it, less one rule: the incident differs from the file, the other
  // rule is as the file loads it.
  const boot = firewall.snapshot({ ...live, ruleset: live.boot!.ruleset })!;
  const rules = boot["inet filter"]!.chains!.input!.rules!;
  boot["inet filter"]!.chains!.input!.rules = rules.filter((r) => r !== "meta l4proto icmp accept");
  const findings = drifted(firewall.compare(boot, live));
  assert.deepEqual(
    findings.map((f) => [f.key, f.detail, f.latent?.because]),
    [
      ["inet filter input: meta l4proto icmp accept", "/etc/nftables.conf loads it", undefined],
      [
        "inet filter input: tcp dport 8080 accept",
        undefined,
        "/etc/nftables.conf does not load it",
      ],
    ],
  );
  const [persisted, runtime] = findings as [Finding, Finding];
  const FILE = "/etc/nftables.conf";
  const since = { ...NODE, since: BOOT + 60_000 };
  // The file unchanged since the last audit: the incident was made at runtime.
  assert.deepEqual(firewall.cause!(runtime, record({ [FILE]: BOOT - 1000 }), since), {
    kind: "runtime",
    evidence:
      "/etc/nftables.conf does not load it and has not changed since this node's last audit at 2025-12-02T00:01:00Z: added at runtime (nft add, insert or an iptables-nft command)",
  });
  // The file changed since: what it says and what runs differ, and neither tells why.
  assert.equal(firewall.cause!(runtime, record({ [FILE]: BOOT + 120_000 }), since), undefined);
  // No record of the file: no cause.
  assert.equal(firewall.cause!(runtime, record({}), since), undefined);
  // The file loads it and changed since the last audit: persisted, naming the file.
  assert.deepEqual(firewall.cause!(persisted, record({ [FILE]: BOOT + 120_000 }), since), {
    kind: "persisted",
    at: "2025-12-02T00:02:00Z",
    evidence:
      "/etc/nftables.conf loads it: /etc/nftables.conf changed at 2025-12-02T00:02:00Z, owner root",
    group: "persisted: /etc/nftables.conf",
  });
  // An item that names no rules file (nftables.service not enabled) has no cause from it.
  assert.equal(
    firewall.cause!(
      { ...runtime, latent: { after: "reboot", becomes: null, because: NOT_ENABLED.slice(10) } },
      record({ [FILE]: BOOT - 1000 }),
      since,
    ),
    undefined,
  );
  // Changed while dpkg configured a package (its maintainer script), or while apt ran: that run.
  const configured = record(
    { [FILE]: BOOT + 120_000 },
    {
      steps: [{ name: "fw-rules", version: "2.0", start: BOOT + 119_000, end: BOOT + 121_000 }],
      apt: [
        {
          start: BOOT + 100_000,
          end: BOOT + 130_000,
          commandline: "apt-get install fw-rules",
          requestedBy: "alice (1000)",
        },
      ],
    },
  );
  assert.deepEqual(firewall.cause!(persisted, configured, since), {
    kind: "package",
    at: "2025-12-02T00:02:00Z",
    by: "apt-get (alice)",
    evidence:
      "/etc/nftables.conf loads it: /etc/nftables.conf changed at 2025-12-02T00:02:00Z, while dpkg configured fw-rules 2.0 (its maintainer script)",
    group: "package: fw-rules 2.0 configured",
  });
  assert.deepEqual(
    firewall.cause!(persisted, { ...configured, steps: [] }, since)?.evidence,
    "/etc/nftables.conf loads it: /etc/nftables.conf changed at 2025-12-02T00:02:00Z, while `apt-get install fw-rules` ran",
  );
  // A package run before the change tells nothing: the edit after it made it.
  assert.equal(
    firewall.cause!(persisted, record({ [FILE]: BOOT + 140_000 }, { apt: configured.apt }), since)
      ?.kind,
    "persisted",
  );
  // What the cause asks the host for: the rules files' mtimes, and the package runs.
  assert.deepEqual(firewall.records!(boot), {
    steps: true,
    stat: [
      { under: "/etc", entries: ["nftables.conf"] },
      { under: "/etc/sysconfig", entries: ["nftables.conf"] },
    ],
  });
  assert.deepEqual(firewall.records!({ "iptables filter": {} }).stat?.length, 2);
});

test("a latent-only item's cause: the rules file's edit since the last audit, or the package run that made it", () => {
  const live = liveFrom(firewall, "debian12-runtime-rule.txt") as FirewallLive;
  // Declared as the kernel holds it: the incident rule, which the rules file does not load.
  const findings = firewall.compare(firewall.snapshot(live)!, live);
  const coming = findings.filter((f) => f.latent);
  assert.deepEqual(
    coming.map((f) => [f.key, f.live, f.latent?.becomes, f.latent?.because]),
    [
      [
        "inet filter input: tcp dport 8080 accept",
        "tcp dport 8080 accept",
        null,
        "/etc/nftables.conf does not load it",
      ],
    ],
  );
  const item = { ...coming[0]!, latent: coming[0]!.latent! };
  const FILE = "/etc/nftables.conf";
  const since = { ...NODE, since: BOOT + 60_000 };
  assert.deepEqual(firewall.latentCause!(item, record({ [FILE]: BOOT + 120_000 }), since), {
    kind: "file-edit",
    at: "2025-12-02T00:02:00Z",
    evidence:
      "/etc/nftables.conf drops it at the next boot: /etc/nftables.conf changed at 2025-12-02T00:02:00Z, owner root",
    group: "file-edit: fw-01 /etc/nftables.conf",
  });
  const configured = record(
    { [FILE]: BOOT + 120_000 },
    { steps: [{ name: "fw-rules", version: "2.0", start: BOOT + 119_000, end: BOOT + 121_000 }] },
  );
  assert.equal(firewall.latentCause!(item, configured, since)?.kind, "package");
  // Unchanged since the last audit, or no last audit: nothing tells who.
  assert.equal(firewall.latentCause!(item, record({ [FILE]: BOOT - 1000 }), since), undefined);
  assert.equal(firewall.latentCause!(item, record({ [FILE]: BOOT + 120_000 }), NODE), undefined);
});

test("cause with what the rules file includes: an included file changed after it times the change; includes not all read tell no runtime", () => {
  const FILE = "/etc/nftables.conf";
  const INCLUDED = "/etc/nftables.d/incident.nft";
  const since = { ...NODE, since: BOOT + 60_000 };
  /** The fixture with the includes part as the probe prints it, then `newer` stat lines. */
  const withIncludes = (includes: string[], newer: string[] = []) => {
    const text = fixture("firewall", "debian12-runtime-rule.txt").replace(
      `${mark("includes")}\n`,
      `${mark("includes")}\n${includes.join("\n")}\n${newer.length ? `${mark("includes-newer")}\n${newer.join("\n")}\n` : ""}`,
    );
    const live = parse(section(firewall, text).output);
    const boot = firewall.snapshot({ ...live, ruleset: live.boot!.ruleset })!;
    const rules = boot["inet filter"]!.chains!.input!.rules!;
    boot["inet filter"]!.chains!.input!.rules = rules.filter(
      (r) => r !== "meta l4proto icmp accept",
    );
    const [persisted, runtime] = drifted(firewall.compare(boot, live)) as [Finding, Finding];
    const unchanged = record({ [FILE]: BOOT - 1000 });
    return {
      persisted: firewall.cause!(persisted, unchanged, since),
      runtime: firewall.cause!(runtime, unchanged, since),
      compared: runtime.cause,
    };
  };
  // An included file older than the rules file: the rules file's mtime tells, as without includes.
  const older = withIncludes(["/etc/nftables.d", INCLUDED]);
  assert.equal(older.runtime?.kind, "runtime");
  assert.equal(older.compared, undefined);
  // Changed after the rules file and since the last audit: no runtime change; the persisted rule
  // is timed by the included file.
  const changedAt = (BOOT + 120_000) / 1000;
  const changed = withIncludes(["/etc/nftables.d", INCLUDED], [`${changedAt} alice ${INCLUDED}`]);
  assert.deepEqual(changed.persisted, {
    kind: "persisted",
    at: "2025-12-02T00:02:00Z",
    evidence: `${FILE} loads it: ${INCLUDED} changed at 2025-12-02T00:02:00Z, owner alice`,
    group: `persisted: ${FILE}`,
  });
  assert.equal(changed.runtime, undefined);
  // With no record the item keeps what compare found: the included file's change, unknown.
  assert.deepEqual(changed.compared, {
    kind: "unknown",
    evidence: `${INCLUDED}, which ${FILE} includes, changed at 2025-12-02T00:02:00Z after it, owner alice`,
  });
  // Changed after the rules file but before the last audit: still a runtime change.
  const before = withIncludes([INCLUDED], [`${(BOOT + 30_000) / 1000} root ${INCLUDED}`]);
  assert.equal(before.runtime?.kind, "runtime");
  // Not all read: nothing says the includes are unchanged.
  const cut = withIncludes(["cut more than 64 files", INCLUDED]);
  assert.equal(cut.runtime, undefined);
  assert.deepEqual(cut.persisted, {
    kind: "persisted",
    evidence: `${FILE} loads it`,
    group: `persisted: ${FILE}`,
  });
});

test("a removed rule, a changed policy, an added table: each its own item, and accepting them all is clean", () => {
  const live = liveFrom(firewall, "debian12-runtime-rule.txt") as FirewallLive;
  const declared: FirewallDeclared = {
    "inet filter": {
      chains: {
        input: { policy: "accept", rules: ["tcp dport 23 accept", ...BOOT_RULES.slice(1)] },
        forward: { policy: "accept" },
      },
      sets: { allowed: ["10.0.0.1", "10.0.0.9"] },
    },
  };
  const findings = firewall.compare(declared, live);
  assert.deepEqual(
    drifted(findings).map((f) => [f.key, f.declared, f.live]),
    [
      ["inet filter input policy", "accept", "drop"],
      ["inet filter input: tcp dport 23 accept", "tcp dport 23 accept", null],
      [
        "inet filter input: ct state established,related accept",
        null,
        "ct state established,related accept",
      ],
      ["inet filter input: tcp dport 8080 accept", null, "tcp dport 8080 accept"],
      ["inet filter @allowed: 10.0.0.9", "10.0.0.9", null],
      ["inet filter @allowed: 10.0.0.2", null, "10.0.0.2"],
      ["ip nat", null, {}],
      [
        "ip nat postrouting",
        null,
        { hook: "type nat hook postrouting priority 100", policy: "accept" },
      ],
      ['ip nat postrouting: oifname "eth0" masquerade', null, 'oifname "eth0" masquerade'],
    ],
  );
  const accepted = acceptAll(declared, drifted(findings));
  assert.deepEqual(drifted(firewall.compare(accepted, live)), []);
  assert.deepEqual(accepted["inet filter"]!.chains!.input!.rules, [
    ...BOOT_RULES,
    "tcp dport 8080 accept",
  ]);
});

test("the same rules in another order are one item; accepting it takes the live order", () => {
  const live = parse(
    `${mark("live")}\n${nftJson([
      table("filter"),
      chain("filter", "input"),
      portRule("filter", "input", 22),
      portRule("filter", "input", 80),
    ])}\n${mark(NOT_ENABLED)}\n`,
  );
  const declared: FirewallDeclared = {
    "inet filter": { chains: { input: { rules: ["tcp dport 80 accept", "tcp dport 22 accept"] } } },
  };
  const findings = drifted(firewall.compare(declared, live));
  assert.deepEqual(
    findings.map((f) => [f.key, f.live]),
    [["inet filter input: rule order", ["tcp dport 22 accept", "tcp dport 80 accept"]]],
  );
  assert.deepEqual(drifted(firewall.compare(acceptAll(declared, findings), live)), []);
});

test("a pull request and the text report say each item in the ruleset's words", () => {
  const say = (item: { declared: unknown; live: unknown }, hosts = "the host") =>
    firewall.driftSentence!(item, "`k`", hosts);
  assert.equal(
    say({ declared: null, live: "tcp dport 8080 accept" }),
    "`k` is in the host's ruleset, and networking.firewall does not declare it.",
  );
  assert.equal(
    say({ declared: "tcp dport 23 accept", live: null }, "the hosts"),
    "`k` is declared in networking.firewall, but the hosts' ruleset does not hold it.",
  );
  assert.equal(
    say({ declared: ["a", "b"], live: ["b", "a"] }),
    "`k`: the host's ruleset holds the declared rules in another order, and the kernel applies them top to bottom.",
  );
  assert.equal(
    say({ declared: "drop", live: "accept" }),
    "`k` in the host's ruleset differs from its declaration in networking.firewall.",
  );
  assert.equal(
    firewall.declaredWords!({ declared: null, live: "x" }),
    "not in networking.firewall",
  );
  assert.equal(firewall.declaredWords!({ declared: "drop", live: "accept" }), undefined);
  // An undeclared rule's live value is its key's own text; a table's or set's is empty.
  for (const live of ["tcp dport 8080 accept", {}, []])
    assert.equal(firewall.liveWords!({ declared: null, live }), "in the running ruleset");
  // An undeclared chain's hook and policy say more than where it is.
  assert.equal(firewall.liveWords!({ declared: null, live: { hook: "input" } }), undefined);
  assert.equal(firewall.liveWords!({ declared: "tcp dport 22 accept", live: null }), undefined);
  assert.equal(firewall.liveWords!({ declared: "drop", live: "accept" }), undefined);
});

test("iptables-nft rules read through nft; with nftables.service not enabled every rule is gone at reboot", () => {
  const live = liveFrom(firewall, "debian12-iptables-nft.txt") as FirewallLive;
  assert.deepEqual(firewall.snapshot(live)!["ip filter"]!.chains!.INPUT!.rules, [
    "tcp dport 22 counter accept",
    'xt match "conntrack" counter accept',
    'ip saddr 10.0.0.0/8 xt match "comment" counter accept',
  ]);
  const findings = firewall.compare(firewall.snapshot(live)!, live);
  assert.equal(findings.length, 4);
  for (const f of findings)
    assert.deepEqual(f.latent, {
      after: "reboot",
      becomes: null,
      because: "nftables.service is not enabled: the next boot loads no rules",
    });
});

// Captured in a network namespace of a Debian 12 host (iptables 1.8.9): rules added with
// iptables-legacy and ip6tables-legacy, saved to /etc/iptables/rules.v4 and rules.v6 with
// netfilter-persistent.service enabled, then `iptables-legacy -A INPUT -p tcp --dport 8080 -j
// ACCEPT` during an "incident"; nft hidden, as on a host without it.
const LEGACY_INPUT = [
  "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
  "-i lo -j ACCEPT",
  '-p tcp -m tcp --dport 22 -m comment --comment "ssh in" -j ACCEPT',
  "-s 192.168.0.0/16 -p tcp -m multiport --dports 8080:8090 -j LOGDROP",
];
const LEGACY_INCIDENT = "-p tcp -m tcp --dport 8080 -j ACCEPT";

test("legacy iptables in iptables' words; a rule the saved rules do not restore is gone at reboot", () => {
  const live = liveFrom(firewall, "debian12-legacy.txt") as FirewallLive;
  const snapshot = firewall.snapshot(live)!;
  assert.deepEqual(Object.keys(snapshot), ["iptables nat", "iptables filter", "ip6tables filter"]);
  assert.deepEqual(snapshot["iptables filter"], {
    chains: {
      INPUT: { policy: "DROP", rules: [...LEGACY_INPUT, LEGACY_INCIDENT] },
      FORWARD: { policy: "ACCEPT" },
      OUTPUT: { policy: "ACCEPT" },
      LOGDROP: { rules: ['-j LOG --log-prefix "dropped: "', "-j DROP"] },
    },
  });
  assert.deepEqual(snapshot["iptables nat"]!.chains!.POSTROUTING, {
    policy: "ACCEPT",
    rules: ["-o eth0 -j MASQUERADE"],
  });
  assert.deepEqual(firewall.schema.safeParse(snapshot).success, true);
  // Declared as the saved rules restore it: the incident is drift, latent and of runtime cause.
  const saved = new Map([...live.legacyBoot!.values()].flatMap((boot) => [...boot.ruleset]));
  const declared = firewall.snapshot({ ...live, ruleset: saved })!;
  const findings = firewall.compare(declared, live);
  assert.deepEqual(findings, [
    {
      key: `iptables filter INPUT: ${LEGACY_INCIDENT}`,
      declared: null,
      live: LEGACY_INCIDENT,
      path: ["networking", "firewall", "iptables filter", "chains", "INPUT", "rules", 4],
      latent: {
        after: "reboot",
        becomes: null,
        because: "/etc/iptables/rules.v4 does not load it",
      },
    },
  ]);
  // The saved rules unchanged since the boot: made at runtime, by an iptables command.
  assert.deepEqual(
    firewall.cause!(findings[0]!, record({ "/etc/iptables/rules.v4": BOOT - 1 }), NODE),
    {
      kind: "runtime",
      evidence:
        "/etc/iptables/rules.v4 does not load it and has not changed since the boot at 2025-12-02T00:00:00Z: added at runtime (an iptables command)",
    },
  );
  // Accepted, the rule is declared at its live place and the audit is clean but for the reboot.
  const accepted = acceptAll(declared, findings);
  assert.deepEqual(accepted["iptables filter"]!.chains!.INPUT!.rules, [
    ...LEGACY_INPUT,
    LEGACY_INCIDENT,
  ]);
  assert.deepEqual(drifted(firewall.compare(accepted, live)), []);
  // The snapshot audits clean but for what the next boot drops.
  assert.deepEqual(
    firewall.compare(snapshot, live).map((f) => [f.key, f.declared === f.live, f.latent?.becomes]),
    [[`iptables filter INPUT: ${LEGACY_INCIDENT}`, true, null]],
  );
});

test("legacy iptables: nothing restores the saved rules, a saved file iptables-save did not write, a listing cut", () => {
  const lines = fixture("firewall", "debian12-legacy.txt").split("\n");
  const disabled = lines.map((line) => (line === " netfilter-persistent.service" ? "" : line));
  const live = section(firewall, disabled.join("\n"));
  const parsed = firewall.parse(live.output, parseContext(FIXTURE_NONCE));
  assert.equal(
    parsed.legacyBoot?.get("ip")?.from,
    "no service restores saved rules at boot (netfilter-persistent.service, iptables.service not enabled)",
  );
  assert.equal(
    firewall.compare(firewall.snapshot(parsed)!, parsed).filter((f) => f.latent?.becomes === null)
      .length,
    10,
  );
  const handWritten = lines.map((line) =>
    line === "/etc/iptables/rules.v4:-A INPUT -i lo -j ACCEPT"
      ? "/etc/iptables/rules.v4:-I INPUT -i lo -j ACCEPT"
      : line,
  );
  const foreign = firewall.parse(
    section(firewall, handWritten.join("\n")).output,
    parseContext(FIXTURE_NONCE),
  );
  assert.deepEqual(foreign.unknown, [
    "what the next boot restores of the iptables tables: /etc/iptables/rules.v4 holds a line iptables-save does not write",
  ]);
  assert.equal(foreign.legacyBoot?.has("ip"), false);
  assert.equal(foreign.legacyBoot?.has("ip6"), true);
  // Cut inside the filter table: what came before is read, the rest is unknown.
  const text = fixture("firewall", "debian12-legacy.txt");
  const cut = parse(
    text.slice(text.indexOf(`${mark("legacy ip")}`), text.indexOf("-A INPUT -i lo")),
  );
  assert.equal(cut.cut, true);
  assert.equal(cut.legacyBoot, undefined);
  assert.deepEqual(firewall.snapshot(cut)!["iptables filter"]!.chains!.INPUT!.rules, [
    LEGACY_INPUT[0],
  ]);
  assert.throws(
    () => parse(`${mark("legacy ip")}\n*filter\n-Z INPUT\nCOMMIT\n${mark("legacy-boot")}\n\n`),
    ProbeParseError,
  );
});

test("without root the domain is unknown, with the reason", () => {
  const out = section(firewall, fixture("firewall", "debian12-nonroot.txt"));
  assert.equal(
    out.unknown,
    "nft could not list the ruleset: listing it needs root (declare ssh: { become: sudo } for this node)",
  );
});

test("a listing cut at the probe's bound: what was read is compared, nothing is missing, the rest is unknown", () => {
  const json = nftJson([
    table("filter"),
    chain("filter", "input"),
    portRule("filter", "input", 22),
    portRule("filter", "input", 8080),
  ]);
  const live = parse(`${mark("live")}\n${json.slice(0, json.lastIndexOf('{"rule"') + 30)}`);
  assert.equal(live.cut, true);
  assert.equal(live.boot, undefined);
  assert.match(live.unknown.join(), /past the probe's bound/);
  const findings = firewall.compare(
    { "inet filter": { chains: { input: { rules: ["tcp dport 443 accept"] } } }, "ip nat": {} },
    live,
  );
  assert.deepEqual(
    findings.map((f) => [f.key, f.declared, f.live]),
    [["inet filter input: tcp dport 22 accept", null, "tcp dport 22 accept"]],
  );
});

test("a rules file that does not load: the next boot loads nothing", () => {
  // nft -i says why the include failed, then lists the scratch namespace's empty ruleset.
  const failed = [
    "In file included from <cmdline>:1:1-28:",
    "/etc/nftables.conf:3:22-22: Error: syntax error, unexpected newline",
    "  tcp dport 1 acceptx",
    "                     ^",
    nftJson([]),
  ].join("\n");
  const live = parse(
    `${mark("live")}\n${nftJson([table("filter"), chain("filter", "input"), portRule("filter", "input", 22)])}\n${mark("boot")}\n/etc/nftables.conf\n${failed}\n`,
  );
  assert.equal(
    live.boot?.from,
    "/etc/nftables.conf fails to load (/etc/nftables.conf:3:22-22: Error: syntax error, unexpected newline)",
  );
  const [rule] = firewall
    .compare(firewall.snapshot(live)!, live)
    .filter((f) => f.key.endsWith("accept"));
  assert.equal(rule?.latent?.becomes, null);
  // No listing at all (an nft built without its interactive mode): what the boot loads is unknown,
  // never nothing.
  const unlisted = parse(
    `${mark("live")}\n${nftJson([table("filter")])}\n${mark("boot")}\n/etc/nftables.conf\nnft: interactive mode is not supported\n`,
  );
  assert.equal(unlisted.boot, undefined);
  assert.deepEqual(unlisted.unknown, [
    "what /etc/nftables.conf loads at boot: nft listed no ruleset (nft: interactive mode is not supported)",
  ]);
});

// Captured in a network namespace on a Debian 12 host (nft 1.0.6): the probe run as root against a
// tree whose /etc/nftables.conf, loaded first, reads
//   flush ruleset
//   table inet filter { chain input { type filter hook input priority 0; policy drop;
//     tcp dport 22 accept; tcp dport 80 accept } }
//   table ip old { chain c { tcp dport 9 accept } }
//   delete table ip old
//   flush chain inet filter input
//   add rule inet filter input tcp dport 443 accept
//   table inet t3 { set s { type ipv4_addr; elements = { 1.2.3.4, 5.6.7.8 } } }
//   delete element inet t3 s { 1.2.3.4 }
//   table inet t4 { chain y { tcp dport 1 accept } }
//   flush table inet t4
// (one statement a line in the file). `nft -e -f` echoed only its adds: table ip old, the rules on
// ports 22, 80 and 1 and both elements of @s, none of which the boot keeps.
test("a rules file that deletes and flushes: the next boot holds what it leaves", () => {
  const live = liveFrom(firewall, "debian12-boot-deletes.txt") as FirewallLive;
  const bootHolds = firewall.snapshot({ ...live, ruleset: live.boot!.ruleset });
  assert.deepEqual(bootHolds, {
    "inet filter": {
      chains: {
        input: {
          hook: "type filter hook input priority 0",
          policy: "drop",
          rules: ["tcp dport 443 accept"],
        },
      },
    },
    "inet t3": { sets: { s: ["5.6.7.8"] } },
    "inet t4": { chains: { y: {} } },
  });
  // The host runs what the file left: its snapshot audits clean, nothing latent.
  assert.deepEqual(bootHolds, firewall.snapshot(live));
  assert.deepEqual(firewall.compare(firewall.snapshot(live)!, live), []);
});

test("a rule only the boot file loads: latent, loaded at the next boot", () => {
  const boot = nftJson([
    table("filter"),
    chain("filter", "input"),
    portRule("filter", "input", 443),
  ]);
  const live = parse(
    `${mark("live")}\n${nftJson([table("filter"), chain("filter", "input")])}\n${mark("boot")}\n/etc/nftables.conf\n${boot}\n`,
  );
  const findings = firewall.compare(firewall.snapshot(live)!, live);
  assert.deepEqual(
    findings.map((f) => [f.key, f.declared, f.live, f.latent]),
    [
      [
        "inet filter input: tcp dport 443 accept",
        null,
        null,
        { after: "reboot", becomes: "tcp dport 443 accept", because: "/etc/nftables.conf" },
      ],
    ],
  );
  const quote = (text: string) => `\`${text}\``;
  assert.equal(
    firewall.latentWords!.sentence!({ ...findings[0]!, latent: findings[0]!.latent! }, quote),
    "the next boot loads `inet filter input: tcp dport 443 accept` (`/etc/nftables.conf`)",
  );
});

test("output the probe cannot have printed is a parse error", () => {
  assert.throws(() => parse(`${mark("live")}\nError: oops\n`), ProbeParseError);
  assert.throws(
    () => parse(`${mark("live")}\n{"nftables": [{"rule": {]}\n${mark(NOT_ENABLED)}\n`),
    ProbeParseError,
  );
  assert.throws(() => parse(`${mark(NOT_ENABLED)}\n`), ProbeParseError);
  const deep = `{"nftables": [{"rule": {"family": "inet", "table": "t", "chain": "c", "expr": [${'{"set": ['.repeat(100_000)}1${"]}".repeat(100_000)}]}}]}`;
  assert.throws(() => parse(`${mark("live")}\n${deep}\n${mark(NOT_ENABLED)}\n`), ProbeParseError);
});

test("the schema names tables as nft does and takes rules on one line", () => {
  assert.equal(
    firewall.schema.safeParse({ "inet filter": { chains: { input: { rules: ["accept"] } } } })
      .success,
    true,
  );
  const bad = firewall.schema.safeParse({
    filter: {},
    "inet x": { chains: { c: { rules: ["a\nb"], policy: "DROP" } } },
    "iptables filter": { chains: { INPUT: { policy: "drop" } } },
  });
  assert.equal(bad.success, false);
  assert.deepEqual(
    bad.error.issues.map((i) => [i.path.join("."), i.message]),
    [
      [
        "inet x.chains.c.rules.0",
        "a rule on one line, as `nft list ruleset` prints it, like tcp dport 22 accept (in an iptables table, as iptables-save does: -p tcp -m tcp --dport 22 -j ACCEPT)",
      ],
      [
        "filter",
        'a table as nft names it, its family then its name, like "inet filter", or a legacy iptables table as "iptables filter" (families: ip, ip6, inet, arp, bridge, netdev, iptables, ip6tables)',
      ],
      ["inet x.chains.c.policy", "accept or drop, as nft writes a policy in this table"],
      [
        "iptables filter.chains.INPUT.policy",
        "ACCEPT or DROP, as iptables-save writes a policy in this table",
      ],
    ],
  );
});

/**
 * What the probe starts when `command` (ending in `sh -s`) runs it: each exec attempt after the
 * shell's own succeeded (a failed PATH lookup too), by path, sorted.
 */
async function execs(command: string[]): Promise<{ programs: string[]; command: string[] }> {
  const dir = await trees({});
  const trace = `${dir}/trace`;
  return {
    command: ["strace", "-f", "-qq", "-e", "trace=execve", "-o", trace, ...command],
    get programs() {
      const lines = readFileSync(trace, "latin1").split("\n");
      const shell = lines.findIndex((line) => /execve\("[^"]*\/sh", .* = 0$/.test(line));
      return lines
        .slice(shell + 1)
        .map((line) => /execve\("([^"]*)"/.exec(line)?.[1])
        .filter((file) => file !== undefined)
        .sort();
    },
  };
}

test("the probe run for real: unknown as nobody; as root in a namespace of its own, the ruleset it holds", async (t) => {
  const nobodyTrace = await execs([...NOBODY, "sh", "-s"]);
  const nobody = await runProbe<FirewallLive>(firewall, undefined, {
    command: nobodyTrace.command,
  });
  assert.match(nobody.unknown ?? "", /needs root/);
  // The listing failed: nothing more is started (no scratch namespace for the boot file).
  assert.deepEqual(nobodyTrace.programs, ["/usr/bin/head", "/usr/sbin/nft"]);
  if (process.getuid?.() !== 0) return t.skip("needs root for a network namespace");
  const ns = `qm-fw-unit-${process.pid}`;
  execFileSync("ip", ["netns", "add", ns]);
  after(() => execFileSync("ip", ["netns", "del", ns]));
  execFileSync("ip", ["netns", "exec", ns, "nft", "-f", "-"], {
    input:
      'table inet t {\nchain c {\ntype filter hook input priority 0; policy accept;\niifname "lo" accept\n}\n}\n',
  });
  const dir = await trees({
    "etc/nftables.conf":
      "table inet t {\nchain c {\ntype filter hook input priority 0; policy accept;\n}\n}\n",
    "etc/systemd/system/sysinit.target.wants/nftables.service": "",
  });
  const rootTrace = await execs(["ip", "netns", "exec", ns, "sh", "-s"]);
  const run = await runProbe<FirewallLive>(firewall, undefined, {
    command: rootTrace.command,
    root: { dir },
  });
  // One nft lists, one `unshare -n` starts the other on the boot file by its path, one head
  // bounds both.
  assert.deepEqual(rootTrace.programs, [
    "/usr/bin/head",
    "/usr/bin/unshare",
    "/usr/sbin/nft",
    "/usr/sbin/nft",
  ]);
  assert.deepEqual(firewall.snapshot(run.live!), {
    "inet t": {
      chains: {
        c: {
          hook: "type filter hook input priority 0",
          policy: "accept",
          rules: ['iifname "lo" accept'],
        },
      },
    },
  });
  assert.deepEqual(
    firewall
      .compare(firewall.snapshot(run.live!)!, run.live!)
      .map((f) => [f.key, f.latent?.because]),
    [['inet t c: iifname "lo" accept', "/etc/nftables.conf does not load it"]],
  );
  // The rules file includes a glob of the tree (an absolute path, as nft reads it) whose one file
  // changed after it: read with the shell's own `read`, and that file alone asked its mtime.
  const conf = `${dir}/etc/nftables.conf`;
  const extra = `${dir}/etc/nftables.d/extra.nft`;
  mkdirSync(`${dir}/etc/nftables.d`);
  writeFileSync(extra, 'add rule inet t c iifname "lo" accept\n');
  appendFileSync(conf, `include "${dir}/etc/nftables.d/*.nft"\n`);
  utimesSync(conf, 1_700_000_000, 1_700_000_000);
  utimesSync(`${dir}/etc/nftables.d`, 1_700_000_000, 1_700_000_000);
  utimesSync(extra, 1_700_000_100, 1_700_000_100);
  const includingTrace = await execs(["ip", "netns", "exec", ns, "sh", "-s"]);
  const including = await runProbe<FirewallLive>(firewall, undefined, {
    command: includingTrace.command,
    root: { dir },
  });
  assert.deepEqual(including.live!.boot!.includes, {
    files: ["/etc/nftables.d", "/etc/nftables.d/extra.nft"],
    newer: [{ file: "/etc/nftables.d/extra.nft", mtime: 1_700_000_100_000, owner: "root" }],
  });
  assert.deepEqual(firewall.compare(firewall.snapshot(including.live!)!, including.live!), []);
  assert.deepEqual(includingTrace.programs, [
    "/usr/bin/head",
    "/usr/bin/stat",
    "/usr/bin/unshare",
    "/usr/sbin/nft",
    "/usr/sbin/nft",
  ]);
});

test("the probe run for real on legacy iptables tables: listed by iptables-save beside nft's, the saved rules read", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root for a network namespace");
  const ns = `qm-fw-legacy-${process.pid}`;
  execFileSync("ip", ["netns", "add", ns]);
  after(() => execFileSync("ip", ["netns", "del", ns]));
  const iptables = (...args: string[]) =>
    execFileSync("ip", ["netns", "exec", ns, "iptables-legacy", ...args]);
  iptables("-P", "INPUT", "DROP");
  iptables("-A", "INPUT", "-p", "tcp", "--dport", "22", "-j", "ACCEPT");
  const saved = execFileSync("ip", ["netns", "exec", ns, "iptables-legacy-save"], {
    encoding: "utf8",
  });
  iptables("-A", "INPUT", "-p", "tcp", "--dport", "8080", "-j", "ACCEPT");
  const dir = await trees({
    "etc/iptables/rules.v4": saved,
    "etc/systemd/system/multi-user.target.wants/netfilter-persistent.service": "",
  });
  const trace = await execs(["ip", "netns", "exec", ns, "sh", "-s"]);
  // The namespace's own /proc/net says which legacy tables it holds.
  const paths = (await sampleOf(firewall)).reads.filter((p) => !p.startsWith("/proc/"));
  const run = await runProbe<FirewallLive>(firewall, undefined, {
    command: trace.command,
    root: { dir, paths },
  });
  assert.deepEqual(firewall.snapshot(run.live!), {
    "iptables filter": {
      chains: {
        INPUT: {
          policy: "DROP",
          rules: ["-p tcp -m tcp --dport 22 -j ACCEPT", "-p tcp -m tcp --dport 8080 -j ACCEPT"],
        },
        FORWARD: { policy: "ACCEPT" },
        OUTPUT: { policy: "ACCEPT" },
      },
    },
  });
  assert.deepEqual(
    firewall
      .compare(firewall.snapshot(run.live!)!, run.live!)
      .map((f) => [f.key, f.latent?.because]),
    [
      [
        "iptables filter INPUT: -p tcp -m tcp --dport 8080 -j ACCEPT",
        "/etc/iptables/rules.v4 does not load it",
      ],
    ],
  );
  // nftables.service is not enabled here: no scratch namespace.
  assert.deepEqual(trace.programs, [
    "/usr/bin/grep",
    "/usr/bin/head",
    "/usr/sbin/iptables-legacy-save",
    "/usr/sbin/nft",
  ]);
});
