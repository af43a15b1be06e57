import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { certificateCause } from "../../../src/domains/certificates/cause.js";
import {
  certificates,
  CertificatesDeclared,
  type CertificateDeclared,
} from "../../../src/domains/certificates/index.js";
import type { CertificatesLive } from "../../../src/domains/certificates/parse.js";
import { parseHostRecord } from "../../../src/audit/cause/record.js";
import type { HostRecord } from "../../../src/domains/host-record.js";
import { ProbeParseError } from "../../../src/errors.js";
import { parseContext } from "../../../src/probe/script.js";
import { EXPIRED_PEM } from "../../support/samples/certificates.js";
import { FIXTURE_NONCE, liveFrom } from "./fixtures.js";
import { NOBODY, runProbe } from "./live-probe.js";

const DAY = 86_400_000;
const at = (iso: string, intervalDays = 1) => {
  const now = Date.parse(iso);
  return { now, nextAudit: now + intervalDays * DAY };
};
const declare = (items: unknown[]) => CertificatesDeclared.parse(items);
const ISRG = "/usr/share/ca-certificates/mozilla/ISRG_Root_X1.crt";
const DIGICERT = "/usr/share/ca-certificates/mozilla/DigiCert_Global_Root_G2.crt";

describe("certificates: parse output captured on a Debian 12 host, as nobody", () => {
  const live = liveFrom(certificates, "debian12-nobody.txt") as CertificatesLive;

  it("reads the certificates of the files, and what stands at the other paths", () => {
    const isrg = live.files.get(ISRG);
    assert.ok(isrg && "certificates" in isrg);
    assert.deepEqual(isrg.certificates, [
      {
        subject: "C=US, O=Internet Security Research Group, CN=ISRG Root X1",
        issuer: "C=US, O=Internet Security Research Group, CN=ISRG Root X1",
        names: [],
        notBefore: Date.parse("2015-06-04T11:04:38Z"),
        notAfter: Date.parse("2035-06-04T11:04:38Z"),
      },
    ]);
    assert.deepEqual(live.files.get("/etc/hostname"), { refused: "not a certificate" });
    assert.deepEqual(live.files.get("/etc/ssl/certs/ca-certificates.crt"), {
      refused: "over the cap",
    });
    // /etc/ssl holds no *.pem, *.crt or *.cer of its own.
    assert.deepEqual([...live.folders], [["/etc/ssl", new Set()]]);
    assert.equal(live.other.get("/etc/ssl/missing.pem"), null);
    assert.deepEqual(live.other.get("/etc/ssl/certs/ISRG_Root_X1.pem"), {
      component: "/etc/ssl/certs/ISRG_Root_X1.pem",
      target: ISRG,
    });
    assert.deepEqual(live.unknown, [
      "/etc/ssl/private: a folder the audit user cannot list (root-only: become: sudo)",
    ]);
  });

  it("compares validity left against valid_for, with the days left and the date, and the names", () => {
    const declared = declare([
      { path: ISRG, valid_for: "30d" },
      { path: DIGICERT, valid_for: "30d", names: ["digicert.com"] },
      { path: "/etc/ssl/private", valid_for: "30d" },
    ]);
    assert.deepEqual(certificates.compare(declared, live, at("2035-05-22T11:04:38Z")), [
      {
        key: ISRG,
        declared: "30d",
        live: "expires on 2035-06-04T11:04:38Z",
        path: ["certificates", ISRG, "valid_for"],
        detail: "13 days left, until 2035-06-04T11:04:38Z: under the 30d declared",
      },
      {
        key: `${DIGICERT}:names`,
        declared: ["digicert.com"],
        live: [],
        path: ["certificates", DIGICERT, "names"],
        detail: "not among its names: digicert.com",
      },
    ]);
  });

  it("is latent when the certificate falls under its bound before the next audit, clean when not", () => {
    const declared = declare([{ path: ISRG, valid_for: "30d" }]);
    // 40 days left, weekly audits: clean.
    assert.deepEqual(certificates.compare(declared, live, at("2035-04-25T11:04:38Z", 7)), []);
    // 35 days left: the next audit, in a week, finds 28.
    assert.deepEqual(certificates.compare(declared, live, at("2035-04-30T11:04:38Z", 7)), [
      {
        key: ISRG,
        declared: "30d",
        live: "30d",
        path: ["certificates", ISRG, "valid_for"],
        latent: {
          after: "expiry",
          becomes: "expires on 2035-06-04T11:04:38Z",
          because:
            "expires in 35 days, on 2035-06-04T11:04:38Z: under the 30d declared before the next audit (2035-05-07T11:04:38Z)",
        },
      },
    ]);
    // Expired.
    assert.equal(
      certificates.compare(declared, live, at("2035-06-14T11:04:38Z"))[0]!.detail,
      "expired 10 days ago, on 2035-06-04T11:04:38Z",
    );
  });

  it("is drift before its start (notBefore ahead of the audit's clock), which cannot be accepted", () => {
    const declared = declare([{ path: ISRG, valid_for: "30d" }]);
    const findings = certificates.compare(declared, live, at("2015-06-01T00:00:00Z"));
    assert.deepEqual(findings, [
      {
        key: ISRG,
        declared: "30d",
        live: "not valid before 2015-06-04T11:04:38Z",
        path: ["certificates", ISRG, "valid_for"],
        detail:
          "not valid yet: valid from 2015-06-04T11:04:38Z, in 4 days, until 2035-06-04T11:04:38Z",
      },
    ]);
    assert.equal(
      certificates.driftSentence!(findings[0]!, ISRG, "the host"),
      `${ISRG} is not valid before \`2015-06-04T11:04:38Z\` on the host: not valid yet, so no validity is left of the \`30d\` declared.`,
    );
    assert.throws(() => certificates.accept!(declared, findings[0]!), /not valid yet/);
  });

  it("reports a missing file, a symlink, and a file with no certificate; a file over the cap", () => {
    const declared = declare([
      { path: "/etc/ssl/missing.pem", valid_for: "1d" },
      { path: "/etc/ssl/certs/ISRG_Root_X1.pem", valid_for: "1d" },
      { path: "/etc/hostname", valid_for: "1d" },
      { path: "/etc/ssl/certs/ca-certificates.crt", valid_for: "1d" },
    ]);
    const findings = certificates.compare(declared, live, at("2030-01-01T00:00:00Z"));
    assert.deepEqual(
      findings.map((f) => [f.key, f.declared, f.live]),
      [
        ["/etc/ssl/missing.pem", "certificate", null],
        [
          "/etc/ssl/certs/ISRG_Root_X1.pem",
          "certificate",
          `symlink /etc/ssl/certs/ISRG_Root_X1.pem -> ${ISRG}`,
        ],
        ["/etc/hostname", "certificate", "not a certificate"],
        ["/etc/ssl/certs/ca-certificates.crt", "certificate", "over the cap"],
      ],
    );
  });

  it("refuses output the probe cannot have printed", () => {
    const ctx = parseContext(FIXTURE_NONCE);
    assert.throws(
      () => certificates.parse(`\n${FIXTURE_NONCE} mark bogus /x\n`, ctx),
      ProbeParseError,
    );
    assert.throws(() => certificates.parse("", ctx), /no cap line/);
  });
});

describe("certificates: the schema", () => {
  const refused = (item: unknown) => {
    const result = CertificatesDeclared.safeParse([item]);
    assert.equal(result.success, false);
    return result.error.issues.map((i) => i.message).join("; ");
  };

  it("takes whole days, absolute paths without . or .., and names", () => {
    assert.match(refused({ path: "/etc/a.pem", valid_for: "30" }), /whole days/);
    assert.match(refused({ path: "/etc/a.pem", valid_for: "2w" }), /whole days/);
    assert.match(refused({ path: "etc/a.pem", valid_for: "1d" }), /absolute path/);
    assert.match(refused({ path: "/etc/", valid_for: "1d" }), /absolute path/);
    assert.match(refused({ path: "/etc/../a.pem", valid_for: "1d" }), /no \. or \.\./);
    assert.match(refused({ path: "/etc/a.pem", valid_for: "1d", names: [] }), /1/);
    assert.match(refused({ path: "/etc/a.pem", valid_for: "1d", key: "x" }), /key/);
  });
});

describe("certificates: probe and compare on this host", () => {
  let dir: string;
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) =>
    execFileSync("openssl", args, { stdio: ["ignore", "pipe", "ignore"] });
  const make = (name: string, days: number, subject: string, san?: string) =>
    openssl(
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
      ...["-keyout", file(`${name}.key`), "-out", file(name), "-days", String(days)],
      ...["-subj", subject, "-utf8"],
      ...(san ? ["-addext", `subjectAltName=${san}`] : []),
    );
  const KEY_LINE = /^[A-Za-z0-9+/=]{40,}$/m;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "qm-certs-"));
    chmodSync(dir, 0o755);
    mkdirSync(file("live"));
    make("live/web.pem", 10, "/CN=web.example.net/O=Acme", "DNS:web.example.net,IP:10.0.0.1");
    make("live/api.crt", 40, "/CN=api.example.net");
    make("wildcard.pem", 40, "/CN=*.example.net", "DNS:*.example.net,DNS:*.com");
    // Markup, a runner command, a control character and __proto__ in a subject.
    make("hostile.pem", 40, "/CN=<b>x<\\/b> ::error::pwn \u0007 __proto__/O=<!-- x -->");
    // A certificate with its key in one file: refused, the key never sent.
    writeFileSync(
      file("live/combined.pem"),
      Buffer.concat([
        openssl("x509", "-in", file("live/api.crt")),
        Buffer.from(execFileSync("cat", [file("live/api.crt.key")])),
      ]),
    );
    rmSync(file("live/web.pem.key"));
    rmSync(file("live/api.crt.key"));
    symlinkSync(file("live/api.crt"), file("live/link.pem"));
    writeFileSync(file("live/notes.txt"), "not looked at\n");
    writeFileSync(file("huge.pem"), `${EXPIRED_PEM}${"A".repeat(64)}\n`.repeat(50_000));
    writeFileSync(file("binary.pem"), Buffer.from([0xff, 0x00, 0x2d, 0x0a, 0x00]));
    mkdirSync(file("private"), { mode: 0o700 });
    writeFileSync(file("private/a.pem"), EXPIRED_PEM);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const audit = async (items: unknown[], command?: string[]) => {
    const declared = declare(items);
    const run = await runProbe<CertificatesLive>(certificates, declared, {
      maxFileBytes: 65536,
      ...(command ? { command } : {}),
    });
    return {
      ...run,
      findings: certificates.compare(declared, run.live!, at(new Date().toISOString(), 7)),
    };
  };

  it("checks each certificate file of a folder, never a symlink, a key or another name", async () => {
    const { findings, stdout, live } = await audit([
      { path: file("live"), valid_for: "30d", issuer: "CN=api.example.net" },
    ]);
    assert.deepEqual([...live!.folders.get(file("live"))!].sort(), [
      file("live/api.crt"),
      file("live/combined.pem"),
      file("live/web.pem"),
    ]);
    assert.deepEqual(
      findings.map((f) => [f.key, f.declared, f.live]),
      // In the folder's order: api.crt is clean (40 days left), combined.pem holds a key.
      [
        [file("live/combined.pem"), "certificate", "private key"],
        [file("live/web.pem"), "30d", findings[1]!.live],
        [file("live/web.pem:issuer"), "CN=api.example.net", "CN=web.example.net, O=Acme"],
      ],
    );
    assert.match(
      findings[1]!.detail!,
      /^9 days left, until \d{4}-\d\d-\d\dT[\d:]+Z: under the 30d declared$/,
    );
    // No line of the key left the host: only certificate lines and marks.
    assert.doesNotMatch(stdout, /PRIVATE KEY/);
    const sentLines = stdout.split("\n").filter((l) => KEY_LINE.test(l));
    const certLines = new Set(
      ["live/api.crt", "live/web.pem"].flatMap((n) =>
        openssl("x509", "-in", file(n)).toString().split("\n"),
      ),
    );
    for (const line of sentLines)
      assert.ok(certLines.has(line), `sent a line of no certificate: ${line}`);
  });

  it("prints the same under busybox sh, awk and find as under dash, mawk and GNU find", async () => {
    const declared = [
      { path: file("live"), valid_for: "30d" },
      { path: file("huge.pem"), valid_for: "1d" },
      { path: file("binary.pem"), valid_for: "1d" },
    ];
    const dash = await audit(declared);
    const busybox = await audit(declared, ["busybox", "sh", "-s"]);
    assert.deepEqual(busybox.findings, dash.findings);
    assert.equal(dash.findings.length, 4);
  });

  it("a huge file is not read; a binary one is no certificate; a root-only folder is unknown to nobody", async () => {
    const { findings, live, stdout } = await audit(
      [
        { path: file("huge.pem"), valid_for: "1d" },
        { path: file("binary.pem"), valid_for: "1d" },
        { path: file("private"), valid_for: "1d" },
        { path: file("live/link.pem"), valid_for: "1d" },
      ],
      NOBODY,
    );
    assert.ok(stdout.length < 4096, `sent ${stdout.length} bytes`);
    assert.deepEqual(
      findings.map((f) => [f.key, f.live]),
      [
        [file("huge.pem"), "over the cap"],
        [file("binary.pem"), "not a certificate"],
        [file("live/link.pem"), `symlink ${file("live/link.pem")} -> ${file("live/api.crt")}`],
      ],
    );
    assert.deepEqual(live!.unknown, [
      `${file("private")}: a folder the audit user cannot list (root-only: become: sudo)`,
    ]);
  });

  it("keeps a hostile subject as data, and accepting it re-audits clean", async () => {
    const declared = [{ path: file("hostile.pem"), valid_for: "30d", subject: "CN=x" }];
    const { findings } = await audit(declared);
    assert.equal(findings.length, 1);
    assert.equal(findings[0]!.key, `${file("hostile.pem")}:subject`);
    // Node's X.509 parser escapes what RFC 2253 asks: markup's brackets, the control character.
    assert.equal(
      findings[0]!.live,
      "CN=\\<b\\>x\\</b\\> ::error::pwn \\07 __proto__, O=\\<!-- x --\\>",
    );
    const accepted = certificates.accept!(declare(declared), findings[0]!)!;
    assert.deepEqual((await audit(accepted)).findings, []);
  });

  it("accepts a validity drift as the whole days left, which re-audits clean; an expired one cannot be", async () => {
    const declared = [{ path: file("live/web.pem"), valid_for: "30d" }];
    const { findings } = await audit(declared);
    const accepted = certificates.accept!(declare(declared), findings[0]!)!;
    assert.deepEqual(accepted, [{ path: file("live/web.pem"), valid_for: "9d" }]);
    const again = await audit(accepted);
    // Clean now; weekly audits: latent, it falls under 9d before the next one.
    assert.deepEqual(
      again.findings.map((f) => [f.declared, f.live, f.latent?.after]),
      [["9d", "9d", "expiry"]],
    );
    const expired = {
      key: "/x.pem",
      declared: "1d",
      live: "expires on 2019-01-31T00:00:00Z",
      path: ["certificates", "/x.pem", "valid_for"],
    };
    assert.throws(
      () => certificates.accept!(declare([{ path: "/x.pem", valid_for: "1d" }]), expired),
      /expired/,
    );
  });

  it("matches a wildcard name to one whole left-most label, as RFC 6125 says", async () => {
    const names = ["a.example.net", "A.Example.NET", "*.example.net"];
    const wanted = [...names, "a.b.example.net", "example.net", ".example.net", "x.com"];
    const { findings } = await audit([
      { path: file("wildcard.pem"), valid_for: "1d", names: wanted },
    ]);
    assert.deepEqual(
      findings.map((f) => f.detail),
      ["not among its names: a.b.example.net, example.net, .example.net, x.com"],
    );
    assert.deepEqual(
      (await audit([{ path: file("wildcard.pem"), valid_for: "1d", names }])).findings,
      [],
    );
  });

  it("snapshots a folder as each certificate it holds, clean by construction", async () => {
    const declared = declare([{ path: file("live"), valid_for: "5d" }]);
    const { live } = await runProbe<CertificatesLive>(certificates, declared);
    const kept = certificates.snapshotKeeps!(declared, live!);
    assert.deepEqual(kept.map((d: CertificateDeclared) => [d.path, d.subject, d.names]).sort(), [
      [file("live/api.crt"), "CN=api.example.net", undefined],
      [file("live/web.pem"), "CN=web.example.net, O=Acme", ["web.example.net", "10.0.0.1"]],
    ]);
    assert.deepEqual(certificates.compare(kept, live!, at(new Date().toISOString())), []);
  });
});

describe("certificates: cause", () => {
  // A host that recorded nothing (an empty cause section), then `over`.
  const record = (over: Partial<HostRecord>): HostRecord => ({ ...parseHostRecord([]), ...over });
  const item = (key: string, declaredPath = key) => ({
    key,
    declared: "30d",
    live: "expires on 2026-01-01T00:00:00Z",
    path: ["certificates", declaredPath, "valid_for"],
  });
  const since = Date.parse("2026-12-01T00:00:00Z");
  const changed = Date.parse("2026-12-03T10:00:00Z");

  it("a file changed since the last audit; one unchanged since only aged; none without a last audit", () => {
    const host = record({ stat: new Map([["/etc/a.pem", { mtime: changed, owner: "root" }]]) });
    assert.deepEqual(certificateCause(item("/etc/a.pem"), host, { node: "n", since }), {
      kind: "file-edit",
      at: "2026-12-03T10:00:00Z",
      evidence: "/etc/a.pem changed at 2026-12-03T10:00:00Z (since the last audit), owner root",
      group: "file-edit: n /etc/a.pem",
    });
    // Unchanged since: its validity only ran short.
    assert.deepEqual(
      certificateCause(item("/etc/a.pem"), host, { node: "n", since: changed + 1000 }),
      {
        kind: "unknown",
        evidence:
          "/etc/a.pem has not changed since this node's last audit at 2026-12-03T10:00:01Z: the certificate only aged",
      },
    );
    assert.equal(
      certificateCause({ ...item("/etc/a.pem:issuer"), live: "CN=R2" }, host, {
        node: "n",
        since: changed + 1000,
      }),
      undefined,
    );
    assert.equal(certificateCause(item("/etc/a.pem"), host, { node: "n" }), undefined);
    // A folder's file: the record holds only declared paths.
    assert.equal(
      certificateCause(item("/etc/d/a.pem", "/etc/d"), host, { node: "n", since }),
      undefined,
    );
  });

  it("the package transaction that shipped the file as it is", () => {
    const path = "/usr/share/ca-certificates/mozilla/ISRG_Root_X1.crt";
    const host = record({
      owned: new Map([[path, { package: "ca-certificates", digest: "abc" }]]),
      digest: new Map([[path, "abc"]]),
      packages: [
        {
          at: changed,
          action: "upgrade",
          name: "ca-certificates",
          from: "20230311",
          to: "20240203",
        },
      ],
    });
    const cause = certificateCause(item(`${path}:issuer`, path), host, { node: "n", since });
    assert.equal(cause?.kind, "package-file");
    assert.equal(cause?.evidence, `${path} replaced by ca-certificates 20230311 → 20240203`);
  });
});
