// Certificates end to end, on real sshd test hosts through the real CLI: certificates made with
// openssl, audited against `valid_for: 30d` with weekly audits (`audit.interval: 7d`). One that
// expires in 10 days is drift with its date; one in 40 days is clean, latent once the clock is
// faked 4 days forward (libfaketime under the CLI's process), drift at 12 days. The accept PR of
// the first lowers valid_for and re-audits clean; a certificate replaced on the host since the last
// audit is a ticket (its cause a file edit), which acknowledges it once merged. A hostile host's
// subjects, huge file, non-PEM file, key and symlink stay its own problem, escaped. Needs root.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { parse } from "yaml";
import { Report } from "../../src/report/schema.js";
import { runBuiltCli, ensureBuilt } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { assertNoSelfChange } from "../support/pull-text.js";
import { runnerCommandLines } from "../support/runner-commands.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_certificates";
const M = "fleet-manifests";
const NODE = "certs-01";
const HOSTILE = "certs-02";
const DIR = "/etc/qm-certs";
const SOON = `${DIR}/soon.pem`;
const LATER = `${DIR}/later.pem`;
const WEB = `${DIR}/web.pem`;
const FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
const DAY = 86_400_000;

let scratch: string;
/** A self-signed certificate openssl makes now, valid for `days`; its key is left behind. */
function certificate(days: number, subject: string, san?: string): string {
  return execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
      ...["-keyout", path.join(scratch, "key.pem"), "-days", String(days), "-subj", subject],
      ...(san ? ["-addext", `subjectAltName=${san}`] : []),
    ],
    { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
  );
}
/** The expiry openssl wrote, as the report states it. */
const expiryOf = (pem: string) =>
  new Date(
    execFileSync("openssl", ["x509", "-noout", "-enddate"], { input: pem, encoding: "utf8" })
      .trim()
      .replace("notAfter=", ""),
  )
    .toISOString()
    .replace(/\.000Z$/, "Z");

const pems: Record<string, string> = {};
let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-certificates-",
  files: {
    "README.md": "Fleet manifests.\n",
    // Aged certificates (no recorded cause) are accepted; one replaced on the host is a ticket.
    [`${M}/fleet.yaml`]: [
      "audit: { interval: 7d }   # the weekly cron",
      "policy:",
      "  certificates: { on_drift: { unknown: accept, otherwise: ticket } }",
      "",
    ].join("\n"),
    [`${M}/nodes/${NODE}.yaml`]: [
      "certificates:",
      `  - { path: ${SOON}, valid_for: 30d }`,
      `  - { path: ${LATER}, valid_for: 30d }`,
      `  - path: ${WEB}`,
      "    valid_for: 30d",
      "    subject: CN=web.example.net, O=Acme",
      "    names: [web.example.net]",
      "",
    ].join("\n"),
    [`${M}/nodes/${HOSTILE}.yaml`]: `certificates:\n  - { path: ${DIR}, valid_for: 30d, issuer: CN=ca.example.net }\n`,
  },
  setup: async () => {
    scratch = await mkdtemp(path.join(tmpdir(), "qm-certs-e2e-"));
    pems.soon = certificate(10, "/CN=soon.example.net");
    pems.later = certificate(40, "/CN=later.example.net");
    pems.web = certificate(100, "/CN=web.example.net/O=Acme", "DNS:web.example.net");
    const hostile = certificate(100, "/CN=<img src=x> ::error::pwned \u001b[31m/O=__proto__");
    const key = readFileSync(path.join(scratch, "key.pem"), "utf8");
    fleet = await startFleet(
      [
        {
          name: NODE,
          files: {
            [SOON]: { contents: pems.soon },
            [LATER]: { contents: pems.later },
            [WEB]: { contents: pems.web },
          },
        },
        {
          name: HOSTILE,
          files: {
            [`${DIR}/a-markup.pem`]: { contents: hostile },
            [`${DIR}/b-huge.pem`]: { contents: `${pems.soon}${"A".repeat(63)}\n`.repeat(10_000) },
            [`${DIR}/c-notpem.crt`]: { contents: "<!-- not a certificate -->\n::warning::x\n" },
            [`${DIR}/d-key.pem`]: { contents: `${hostile}${key}` },
          },
        },
      ],
      { prefix: "qmc" },
    );
    // A symlink in the folder is skipped, never followed (to a key, here).
    await fleet.exec(HOSTILE, `ln -s ${DIR}/d-key.pem ${DIR}/e-link.pem`);
  },
});

after(async () => {
  await fleet?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const run = scheduledRun(forge, () => fleet.sshConfig);

/** An audit of `NODE` by the built CLI with the clock `days` ahead (libfaketime), as JSON. */
async function auditAhead(name: string, days: number, exitCode: number) {
  await ensureBuilt();
  const file = path.join(forge.work, `${name}.json`);
  const result = await runBuiltCli(
    [
      ...["audit", ...forge.repoArgs(), "--ssh-config", fleet.sshConfig, "--nodes", NODE],
      ...["--format", "json", "--out", file],
    ],
    { env: { ...forge.double.cliEnv(), LD_PRELOAD: FAKETIME, FAKETIME: `+${days}d` } },
  );
  assert.equal(result.exitCode, exitCode, result.stderr);
  const report = Report.parse(JSON.parse(await readFile(file, "utf8")));
  // The clock the audit ran on: `days` ahead of this one.
  assert.ok(Math.abs(Date.parse(report.startedAt) - (Date.now() + days * DAY)) < DAY / 2);
  return report.nodes.find((n) => n.name === NODE)!;
}

describe("certificates", () => {
  before(() => assert.ok(existsSync(FAKETIME), "libfaketime (apt-get install faketime)"));

  it("expiring in 10 days against valid_for: 30d is drift with its date; 40 days is clean", async () => {
    const { report } = await run.auditAndPropose("run-1", 1);
    const node = report.nodes.find((n) => n.name === NODE)!;
    assert.deepEqual(
      node.drift.map((d) => [d.key, d.declared, d.live, d.detail]),
      [
        [
          SOON,
          "30d",
          `expires on ${expiryOf(pems.soon!)}`,
          `9 days left, until ${expiryOf(pems.soon!)}: under the 30d declared`,
        ],
      ],
    );
    assert.equal(node.drift[0]!.onDrift, "accept");
  });

  it("a certificate replaced on the host since the last audit is a ticket; the accept lowers valid_for; merged, both re-audit clean", async () => {
    await fleet.exec(NODE, `cat > ${WEB} <<'EOF'\n${certificate(100, "/CN=rogue.example.net")}EOF`);
    const { report } = await run.auditAndPropose("run-2", 1);
    const node = report.nodes.find((n) => n.name === NODE)!;
    const byKey = new Map(node.drift.map((d) => [d.key, d]));
    assert.deepEqual([...byKey.keys()].sort(), [`${WEB}:names`, `${WEB}:subject`, SOON].sort());
    const subject = byKey.get(`${WEB}:subject`)!;
    assert.deepEqual(
      [subject.live, subject.cause?.kind, subject.onDrift],
      ["CN=rogue.example.net", "file-edit", "ticket"],
    );
    const pulls = forge.double.pulls().filter((p) => p.state === "open" && p.title.includes(NODE));
    assertNoSelfChange(pulls);
    const accept = pulls.find((p) => p.title.startsWith("Accept"))!;
    assert.match(
      accept.body ?? "",
      /expires on `[^`]+` on the host: less validity left than the `30d` declared/,
    );
    assert.deepEqual(await forge.changedFiles(accept.head), [`${M}/nodes/${NODE}.yaml`]);
    assert.match(
      await forge.fileAt(accept.head, `${M}/nodes/${NODE}.yaml`),
      new RegExp(`- \\{ path: ${SOON}, valid_for: 9d \\}`),
    );
    assert.ok(
      pulls.some((p) => p.title.startsWith("Remediate")),
      pulls.map((p) => p.title).join("\n"),
    );
    for (const pull of pulls) await forge.double.mergePull(pull.number);

    // Clean: the accepted bound holds today (latent only: under it at next week's audit), and the
    // replaced certificate is acknowledged by its ticket.
    // Exit 1: the hostile node's own drift.
    const { report: again } = await run.audit("run-3", 1);
    const clean = again.nodes.find((n) => n.name === NODE)!;
    assert.equal(clean.status, "clean");
    assert.deepEqual(
      clean.drift.map((d) => [d.key, d.latent?.after ?? null, d.acknowledged ?? false]).sort(),
      [
        [SOON, "expiry", false],
        [`${WEB}:names`, null, true],
        [`${WEB}:subject`, null, true],
      ],
    );
  });

  it("40 days left with weekly audits: latent 4 days on (under 30d before the next audit), drift at 12", async () => {
    const soon = await auditAhead("ahead-4", 4, 1);
    const later = soon.drift.find((d) => d.key === LATER)!;
    assert.deepEqual([later.declared, later.live, later.latent?.after], ["30d", "30d", "expiry"]);
    assert.match(
      later.latent!.because,
      /^expires in 35 days, on [^:]+:\d\d:\d\dZ: under the 30d declared before the next audit/,
    );
    assert.equal(later.latent!.becomes, `expires on ${expiryOf(pems.later!)}`);

    const late = await auditAhead("ahead-12", 12, 1);
    const drifted = late.drift.find((d) => d.key === LATER)!;
    assert.deepEqual(
      [drifted.live, drifted.detail],
      [
        `expires on ${expiryOf(pems.later!)}`,
        `27 days left, until ${expiryOf(pems.later!)}: under the 30d declared`,
      ],
    );
  });

  it("snapshot judges expiry against the weekly audits of fleet.yaml: 4 days on, 40 days left is declared latent", async () => {
    await ensureBuilt();
    const shot = await runBuiltCli(
      ["snapshot", ...forge.repoArgs(), "--ssh-config", fleet.sshConfig, "--node", NODE],
      { env: { ...forge.double.cliEnv(), LD_PRELOAD: FAKETIME, FAKETIME: "+4d" } },
    );
    assert.equal(shot.exitCode, 0, shot.stderr);
    assert.doesNotMatch(shot.stdout, /later\.pem has expired/);
    // Under 30d at next week's audit, not by tomorrow's.
    assert.match(
      shot.stdout,
      new RegExp(
        `later\\.pem\n +valid_for: 30d # will become "expires on ${expiryOf(pems.later!)}" at expiry: expires in 35 days`,
      ),
    );
  });

  it("a hostile host: markup and runner commands in subjects escaped, a huge file, no PEM, a key and a symlink are its own drift", async () => {
    const env = { env: forge.double.cliEnv() };
    const result = await runBuiltCli(
      [
        ...["audit", ...forge.repoArgs(), "--ssh-config", fleet.sshConfig, "--nodes", HOSTILE],
        ...["--format", "text"],
      ],
      env,
    );
    assert.equal(result.exitCode, 1, result.stderr);
    const out = result.stdout;
    assert.deepEqual(runnerCommandLines(out), []);
    assert.doesNotMatch(out, /\u001b/);
    assert.doesNotMatch(out, /PRIVATE KEY/);
    for (const name of ["b-huge.pem", "c-notpem.crt", "d-key.pem"])
      assert.match(out, new RegExp(`${DIR}/${name}`));
    assert.doesNotMatch(out, /e-link\.pem/);
    // The subject as Node's X.509 parser escapes it (RFC 2253), shown as text.
    assert.match(
      out,
      /a-markup\.pem:issuer: declared CN=ca\.example\.net, live "CN=.*<img src=x.*> ::error::pwned .*1B\[31m, O=__proto__"$/m,
    );
    const md = await runBuiltCli(
      ["audit", ...forge.repoArgs(), "--ssh-config", fleet.sshConfig, "--format", "markdown"],
      env,
    );
    assert.deepEqual(runnerCommandLines(md.stdout), []);
    // Host text only inside code spans.
    for (const line of md.stdout.split("\n").filter((l) => l.includes("pwned")))
      assert.match(line, /`[^`]*pwned[^`]*`/, line);
    // One node's problem: the other node is audited as before.
    assert.match(md.stdout, new RegExp(`${NODE}`));
  });

  it("snapshot declares each certificate of a declared folder, hostile text quoted, and it audits clean", async () => {
    const env = { env: forge.double.cliEnv() };
    const shot = await runBuiltCli(
      ["snapshot", ...forge.repoArgs(), "--ssh-config", fleet.sshConfig, "--node", HOSTILE],
      env,
    );
    assert.equal(shot.exitCode, 0, shot.stderr);
    assert.deepEqual(runnerCommandLines(shot.stdout), []);
    const spec = parse(shot.stdout) as { certificates: { path: string; issuer: string }[] };
    // The refused files stay out; the one certificate is declared with what it holds.
    assert.deepEqual(
      spec.certificates.map((c) => c.path),
      [`${DIR}/a-markup.pem`],
    );
    assert.match(spec.certificates[0]!.issuer, /::error::pwned/);
  });
});
