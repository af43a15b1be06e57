import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { sshd, SshdDeclared, SNAPSHOT_KEYWORDS } from "../../../src/domains/sshd/index.js";
import type { SshdLive } from "../../../src/domains/sshd/parse.js";
import { emptyHostRecord, type HostRecord } from "../../../src/domains/host-record.js";
import { latentRemediation } from "../../../src/domains/latent-words.js";
import { latentSentence } from "../../../src/domains/registry.js";
import { ProbeParseError } from "../../../src/errors.js";
import { parseContext } from "../../../src/probe/script.js";
import { acceptFinding } from "../../../src/propose/accept.js";
import { marked } from "../../support/probe-output.js";
import { fixture, FIXTURE_NONCE, liveFrom, section } from "./fixtures.js";
import { NOBODY, runProbe } from "./live-probe.js";

// Fixtures, captured on this kind of machine (Debian 12, OpenSSH 9.2p1):
// - debian12-default-no-listener.txt: the snapshot probe as root, no sshd listening in the
//   namespace, the package's own /etc/ssh/sshd_config;
// - test-host-listener-dropin-after-start.txt: a real test host (test/support/hosts.ts) through
//   `sudo -n /bin/sh -s`, its sshd started with `-f`, an Include of sshd_config.d, a
//   `Match User nobody` block resolved with `-C user=nobody,…`, and a drop-in written after the
//   listener started (its temp dir written as /srv/qm);
// - test-host-refused-config.txt: the same host once a drop-in holds a value sshd refuses;
// - match-loglevel-alice.txt, match-loglevel-bob.txt: a listener in a network namespace of its own,
//   `LogLevel ERROR` in its main file, a `Match User alice` block there and a `Match User bob`
//   block in an included file each setting LogLevel, probed with `-C user=alice,…` and
//   `-C user=bob,…` (its temp dir written as /srv/qm).
// - test-host-reloaded-dropin-after.txt: a test host whose sshd, started from a config including
//   sshd_config.d, was reloaded (SIGHUP, as `systemctl reload ssh` sends) after an operator wrote
//   50-incident.conf, before another drop-in, 60-x11.conf, was written (its temp dir written as
//   /srv/qm).

const LISTENER = "test-host-listener-dropin-after-start.txt";
const declared = (settings: Record<string, unknown>, more: object = {}) =>
  SshdDeclared.parse({ settings, ...more });

describe("sshd: cause from the host's record", () => {
  const since = Date.parse("2026-12-07T06:00:00Z");
  const at = (time: string) => Date.parse(`2026-12-07T${time}Z`);
  const FILE = "/etc/ssh/sshd_config.d/50-incident.conf";
  const item = (file = FILE) => ({
    key: "passwordauthentication",
    declared: "no",
    live: "yes",
    path: ["sshd", "settings", "PasswordAuthentication"],
    cause: { kind: "unknown" as const, evidence: `${file}:1 sets PasswordAuthentication yes` },
  });
  const record = (parts: Partial<HostRecord>): HostRecord => ({
    ...emptyHostRecord(),
    stat: new Map([[FILE, { mtime: at("07:00:00"), owner: "root" }]]),
    ...parts,
  });
  const ctx = { node: "sshd-01", since };

  it("asks for the configuration files' changes and every package's configure steps", () => {
    assert.deepEqual(sshd.records!(declared({ PasswordAuthentication: "no" })), {
      globs: ["/etc/ssh/sshd_config", "/etc/ssh/sshd_config.d/*"],
      steps: true,
    });
  });

  it("the file setting the drifted value changed since the last audit: file-edit, with its file and line", () => {
    assert.deepEqual(sshd.cause!(item(), record({}), ctx), {
      kind: "file-edit",
      at: "2026-12-07T07:00:00Z",
      evidence: `${FILE}:1 sets PasswordAuthentication yes; ${FILE} modified at 2026-12-07T07:00:00Z, owner root, since the last audit`,
      group: `file-edit: sshd-01 ${FILE}`,
    });
  });

  it("a package replaced it: dpkg's conffile prompt, or the file written while dpkg configured a package", () => {
    const prompt = record({
      // dpkg keeps the packaged file's own mtime, from before the last audit.
      stat: new Map([[FILE, { mtime: at("01:00:00"), owner: "root" }]]),
      conffiles: [{ at: at("07:10:00"), path: FILE, choice: "install" }],
      owned: new Map([[FILE, { package: "qm-sshd", digest: "0".repeat(32) }]]),
    });
    assert.deepEqual(sshd.cause!(item(), prompt, ctx), {
      kind: "package",
      at: "2026-12-07T07:10:00Z",
      by: "dpkg",
      evidence: `${FILE}:1 sets PasswordAuthentication yes; ${FILE} replaced by qm-sshd's version at 2026-12-07T07:10:00Z (dpkg's conffile prompt)`,
      group: `package: ${FILE} replaced by qm-sshd`,
    });
    // The local version kept: not the package's doing.
    const kept = record({ conffiles: [{ at: at("07:10:00"), path: FILE, choice: "keep" }] });
    assert.equal(sshd.cause!(item(), kept, ctx)!.kind, "file-edit");
    const configured = record({
      owned: new Map([[FILE, { package: "openssh-server", digest: "0".repeat(32) }]]),
      steps: [
        {
          name: "openssh-server",
          version: "1:9.2p1-2+deb12u10",
          start: at("06:59:59"),
          end: at("07:00:01"),
        },
      ],
    });
    assert.deepEqual(sshd.cause!(item(), configured, ctx), {
      kind: "package",
      at: "2026-12-07T07:00:00Z",
      by: "dpkg",
      evidence: `${FILE}:1 sets PasswordAuthentication yes; ${FILE} written at 2026-12-07T07:00:00Z, while dpkg configured openssh-server 1:9.2p1-2+deb12u10 (its maintainer script)`,
      group: "package: openssh-server 1:9.2p1-2+deb12u10 configured",
    });
    // Another package's step the same second: a hand edit, not that package's doing.
    const other = record({ steps: [{ name: "qm-other", version: "1", start: at("07:00:00") }] });
    assert.equal(sshd.cause!(item(), other, ctx)!.kind, "file-edit");
  });

  it("otherwise unknown, with what is known: the line, and that its file did not change since", () => {
    assert.deepEqual(sshd.cause!(item(), record({}), { node: "sshd-01", since: at("08:00:00") }), {
      kind: "unknown",
      evidence: `${FILE}:1 sets PasswordAuthentication yes; ${FILE} has not changed since this node's last audit at 2026-12-07T08:00:00Z`,
    });
    assert.deepEqual(sshd.cause!(item(), record({}), { node: "sshd-01" }), {
      kind: "unknown",
      evidence: `${FILE}:1 sets PasswordAuthentication yes; with no audit history, when ${FILE} changed is not known`,
    });
    // A file outside those read: its line alone.
    assert.deepEqual(sshd.cause!(item("/srv/sshd.conf"), record({}), ctx), {
      kind: "unknown",
      evidence:
        "/srv/sshd.conf:1 sets PasswordAuthentication yes; when /srv/sshd.conf changed is not read",
    });
    // No line sets it: nothing more to say than the audit's own unknown.
    assert.equal(sshd.cause!({ ...item(), cause: undefined }, record({}), ctx), undefined);
  });

  it("a latent setting's cause: the edit or the package that put in place the line a restart applies", () => {
    const latent = {
      ...item(),
      live: "no",
      cause: undefined,
      latent: {
        after: "restart" as const,
        becomes: "yes",
        because: `${FILE}:1 sets PasswordAuthentication yes (changed at 2026-12-07T07:00:00Z, after sshd started)`,
      },
    };
    assert.deepEqual(sshd.latentCause!(latent, record({}), ctx), {
      kind: "file-edit",
      at: "2026-12-07T07:00:00Z",
      evidence: `${FILE}:1 sets PasswordAuthentication yes; ${FILE} modified at 2026-12-07T07:00:00Z, owner root, since the last audit`,
      group: `file-edit: sshd-01 ${FILE}`,
    });
    const replaced = record({
      stat: new Map([[FILE, { mtime: at("01:00:00"), owner: "root" }]]),
      conffiles: [{ at: at("07:10:00"), path: FILE, choice: "install" }],
      owned: new Map([[FILE, { package: "qm-sshd", digest: "0".repeat(32) }]]),
    });
    assert.equal(sshd.latentCause!(latent, replaced, ctx)!.kind, "package");
    // Unchanged since the last audit, or no history: no cause rather than an unknown one.
    const later = { node: "sshd-01", since: at("08:00:00") };
    assert.equal(sshd.latentCause!(latent, record({}), later), undefined);
    assert.equal(sshd.latentCause!(latent, record({}), { node: "sshd-01" }), undefined);
  });
});

describe("sshd: parse", () => {
  it("reads sshd -T's settings, the files sshd read and the lines setting each keyword", () => {
    const live = liveFrom(sshd, LISTENER) as SshdLive;
    assert.deepEqual(live.listener, { pid: 6062, startedAt: 1796607688 + 12239 });
    assert.equal(live.config, "/srv/qm/hosts/sshd-01/sshd_config");
    assert.deepEqual(live.settings.get("allowusers"), ["qm-audit", "qm-audit", "alice"]);
    // -ddd makes sshd -T print DEBUG3: the configured level is the line setting it.
    assert.deepEqual(live.settings.get("loglevel"), ["ERROR"]);
    assert.deepEqual(live.setBy.get("permitrootlogin"), [
      // A Match block's line: sshd re-reads the main file to apply it.
      { file: live.config, line: 19, keyword: "PermitRootLogin", value: "yes" },
    ]);
    assert.deepEqual(
      [...live.changed.keys()],
      [live.config, "/etc/ssh/sshd_config.d", "/etc/ssh/sshd_config.d/50-incident.conf"],
    );
  });

  it("reads a host where no sshd listens: the default configuration file", () => {
    const live = liveFrom(sshd, "debian12-default-no-listener.txt") as SshdLive;
    assert.equal(live.listener, undefined);
    assert.equal(live.config, "/etc/ssh/sshd_config");
    assert.deepEqual(live.settings.get("x11forwarding"), ["yes"]);
    assert.deepEqual(live.settings.get("loglevel"), ["INFO"]);
    assert.deepEqual(live.setBy.get("x11forwarding"), [
      { file: "/etc/ssh/sshd_config", line: 90, keyword: "X11Forwarding", value: "yes" },
    ]);
  });

  it("takes LogLevel from a Match block for the declared connection, as sshd -T prints it", () => {
    const [alice, bob] = ["alice", "bob"].map(
      (user) => liveFrom(sshd, `match-loglevel-${user}.txt`) as SshdLive,
    );
    // The main file says ERROR first; each user's Match block says otherwise.
    assert.deepEqual(alice!.settings.get("loglevel"), ["VERBOSE"]);
    assert.deepEqual(bob!.settings.get("loglevel"), ["DEBUG2"]);
    assert.deepEqual(bob!.setBy.get("loglevel"), [
      { file: "/srv/qm/sshd_config", line: 5, keyword: "LogLevel", value: "ERROR" },
      { file: "/srv/qm/d/70-bob.conf", line: 2, keyword: "LogLevel", value: "DEBUG2", match: true },
    ]);
    assert.deepEqual(
      sshd.compare(declared({ LogLevel: "ERROR" }), bob!).map((d) => d.live),
      ["DEBUG2"],
    );
  });

  it("names LogLevel as sshd -T prints it: QUIET is SILENT, DEBUG1 is DEBUG", () => {
    const parse = (level: string) =>
      sshd
        .parse(
          marked(FIXTURE_NONCE, [
            ["state", "config /etc/ssh/sshd_config\n"],
            ["config", "loglevel DEBUG3\n"],
            ["set", `/etc/ssh/sshd_config:1 setting LogLevel ${level}\n`],
          ]),
          parseContext(FIXTURE_NONCE),
        )
        .settings.get("loglevel");
    assert.deepEqual(["quiet", "DEBUG1", "verbose"].map(parse), [
      ["SILENT"],
      ["DEBUG"],
      ["VERBOSE"],
    ]);
  });

  it("tells a configuration sshd refuses as unknown, with sshd's words", () => {
    const out = section(sshd, fixture("sshd", "test-host-refused-config.txt"));
    assert.equal(
      out.unknown,
      'sshd -T refuses the configuration (exit 255); /etc/ssh/sshd_config.d/60-broken.conf line 1: unsupported option "maybe".',
    );
  });

  it("refuses output the probe cannot have printed", () => {
    const parse = (text: string) => sshd.parse(text, parseContext(FIXTURE_NONCE));
    const mark = (label: string, text: string) => marked(FIXTURE_NONCE, [[label, text]]);
    assert.throws(() => parse(mark("config", "passwordauthentication no\n")), ProbeParseError);
    assert.throws(
      () => parse(mark("state", "config /etc/ssh/sshd_config\n") + mark("config", "Not A Line\n")),
      ProbeParseError,
    );
  });
});

describe("sshd: compare", () => {
  const live = liveFrom(sshd, LISTENER) as SshdLive;

  it("a line of a file changed after sshd started is latent: a restart applies it", () => {
    const findings = sshd.compare(
      declared({ PasswordAuthentication: "no", X11Forwarding: "no", LogLevel: "ERROR" }),
      live,
    );
    assert.deepEqual(findings, [
      {
        key: "passwordauthentication",
        declared: "no",
        live: "no",
        path: ["sshd", "settings", "PasswordAuthentication"],
        latent: {
          after: "restart",
          becomes: "yes",
          because:
            "/etc/ssh/sshd_config.d/50-incident.conf:1 sets PasswordAuthentication yes (changed at 2026-12-07T05:05:33.000Z, after sshd started)",
        },
        detail:
          "sshd (pid 6062) started at 2026-12-07T05:05:27.000Z, before /etc/ssh/sshd_config.d/50-incident.conf changed: it applies what it read then, and a reload or restart applies what sshd -T reads now",
      },
    ]);
  });

  it("a latent line reads as applied by a reload or a restart: SIGHUP re-reads sshd_config", () => {
    const [finding] = sshd.compare(declared({ PasswordAuthentication: "no" }), live);
    const quote = (text: string) => `\`${text}\``;
    assert.equal(
      latentSentence({ ...finding!, domain: "sshd", latent: finding!.latent! }, quote),
      "a reload or restart of sshd applies `passwordauthentication` `yes`, as `/etc/ssh/sshd_config.d/50-incident.conf:1 sets PasswordAuthentication yes (changed at 2026-12-07T05:05:33.000Z, after sshd started)` says: make the file set the declared value, or declare its value, before sshd is reloaded or restarted",
    );
    assert.equal(
      latentRemediation(sshd.latentWords, "restart"),
      "Make the sshd configuration set the declared value (check with `sshd -T`) before sshd is reloaded or restarted, or declare the value it now sets.",
    );
  });

  it("a value from a file sshd read as it is drifts now, with the line that sets it", () => {
    const [finding, ...more] = sshd.compare(declared({ PermitRootLogin: "no" }), live);
    assert.equal(more.length, 0);
    assert.deepEqual(finding, {
      key: "permitrootlogin",
      declared: "no",
      live: "yes",
      path: ["sshd", "settings", "PermitRootLogin"],
      // What the files show; when and by whom, the host's record tells (below).
      cause: {
        kind: "unknown",
        evidence: "/srv/qm/hosts/sshd-01/sshd_config:19 sets PermitRootLogin yes",
      },
    });
  });

  it("a keyword no file sets drifts, saying a removed line would still run", () => {
    const [finding] = sshd.compare(declared({ ciphers: "aes256-gcm@openssh.com" }), live);
    assert.equal(finding?.live, live.settings.get("ciphers")![0]);
    assert.equal(finding?.latent, undefined);
    assert.match(
      finding!.detail!,
      /^no file sets it now, and \/etc\/ssh\/sshd_config\.d\/50-incident\.conf changed after sshd started/,
    );
  });

  it("multi-line keywords compare as lists, and a keyword sshd does not print is absent", () => {
    const settled = liveFrom(sshd, "debian12-default-no-listener.txt") as SshdLive;
    const findings = sshd.compare(
      declared({ X11Forwarding: true, maxauthtries: 6, NoSuchKeyword: "x" }),
      settled,
    );
    assert.deepEqual(
      findings.map((f) => [f.key, f.declared, f.live, f.detail]),
      [
        [
          "nosuchkeyword",
          "x",
          null,
          "sshd -T prints no nosuchkeyword: not a keyword of this sshd, or the probe's bound left it out",
        ],
      ],
    );
    const users = { ...settled, settings: new Map([["allowusers", ["alice", "bob"]]]) };
    assert.deepEqual(sshd.compare(declared({ AllowUsers: "alice  bob" }), users), []);
    assert.deepEqual(sshd.compare(declared({ AllowUsers: ["alice", "bob"] }), users), []);
    assert.equal(sshd.compare(declared({ AllowUsers: ["bob", "alice"] }), users).length, 1);
  });

  it("a reload applies what the files held then: a line written before it drifts now, one after it is latent", () => {
    // A reload re-executes sshd under its pid, whose start time stays: its pid file tells when.
    const reloaded = liveFrom(sshd, "test-host-reloaded-dropin-after.txt") as SshdLive;
    assert.deepEqual(reloaded.listener, {
      pid: 454,
      startedAt: 1796651534,
      reloadedAt: 1796651541,
    });
    assert.ok(!reloaded.changed.has("/srv/qm/hosts/sshd-01/sshd.pid"));
    const findings = sshd.compare(
      declared({ PasswordAuthentication: "no", X11Forwarding: "no" }),
      reloaded,
    );
    assert.deepEqual(
      findings.map((f) => [f.key, f.declared, f.live, f.latent?.becomes, f.detail]),
      [
        ["passwordauthentication", "no", "yes", undefined, undefined],
        [
          "x11forwarding",
          "no",
          "no",
          "yes",
          "sshd (pid 454) was last reloaded at 2026-12-07T13:52:21.000Z, before /etc/ssh/sshd_config.d/60-x11.conf changed: it applies what it read then, and a reload or restart applies what sshd -T reads now",
        ],
      ],
    );
  });

  it("an accepted finding makes the declaration clean", () => {
    const spec = declared({ PermitRootLogin: "no", PasswordAuthentication: "no" });
    const findings = sshd.compare(spec, live);
    const drift = findings.find((f) => f.key === "permitrootlogin")!;
    const accepted = acceptFinding(sshd, spec, drift) as SshdDeclared;
    assert.deepEqual(accepted.settings, { PermitRootLogin: "yes", PasswordAuthentication: "no" });
    assert.deepEqual(
      sshd.compare(SshdDeclared.parse(accepted), live).map((f) => f.key),
      ["passwordauthentication"],
    );
  });
});

describe("sshd: schema", () => {
  const issues = (value: unknown) =>
    SshdDeclared.safeParse(value).error?.issues.map((i) => [i.path.join("."), i.message]);

  it("refuses a keyword twice in two cases, a value of several lines, a connection word with a comma", () => {
    assert.deepEqual(
      issues({ settings: { PasswordAuthentication: "no", passwordauthentication: "no" } }),
      [
        [
          "settings.passwordauthentication",
          "passwordauthentication and PasswordAuthentication are one keyword (sshd reads keywords case-insensitively)",
        ],
      ],
    );
    assert.equal(issues({ settings: { Banner: "a\nb" } })?.length, 1);
    assert.deepEqual(
      issues({ settings: { "Bad Key": "x" } })?.[0]?.[1],
      "not an sshd keyword (like PasswordAuthentication)",
    );
    assert.deepEqual(issues({ connection: { user: "a,host=b" }, settings: {} })?.[0], [
      "connection.user",
      "one word, without commas, `=` or blanks",
    ]);
    assert.equal(issues({ connection: { port: "22" }, settings: {} })?.length, 1);
  });

  it("reads YAML's booleans and numbers as sshd prints them", () => {
    assert.deepEqual(declared({ X11Forwarding: false, MaxAuthTries: 3 }).settings, {
      X11Forwarding: "no",
      MaxAuthTries: "3",
    });
  });
});

describe("sshd: snapshot", () => {
  it("declares the chosen keywords only, at their live values", () => {
    const live = liveFrom(sshd, "debian12-default-no-listener.txt") as SshdLive;
    const snapshot = sshd.snapshot(live)!;
    assert.deepEqual(
      Object.keys(snapshot.settings),
      [...SNAPSHOT_KEYWORDS].filter((k) => live.settings.has(k)),
    );
    assert.equal(snapshot.settings.permitrootlogin, "without-password");
    assert.deepEqual(sshd.compare(snapshot, live), []);
  });
});

describe("sshd: the probe, run for real", () => {
  it("as anyone but root, the domain is unknown with the reason", async () => {
    const run = await runProbe(sshd, declared({ PasswordAuthentication: "no" }), {
      command: NOBODY,
    });
    assert.equal(run.unknown, "sshd -T needs root: declare ssh: { become: sudo } for this node");
  });

  it("sends nothing and runs nothing for a declaration without settings", () => {
    assert.equal(
      sshd.probe(declared({}), {
        quote: String,
        mark: String,
        unknown: String,
        maxFileBytes: 0,
        lastAudit: "",
        awk: String,
        stat: String,
      }),
      "true",
    );
  });
});
