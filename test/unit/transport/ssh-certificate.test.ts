import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import {
  certificateProblem,
  certificateSettings,
  expandSshPath,
  parseCertificateListing,
} from "../../../src/transport/ssh-certificate.js";
import { REPO_ROOT } from "../../support/cli.js";

// `TZ=UTC ssh-keygen -L -f CERT` of certificates signed here by a local CA (OpenSSH 9.2).
const listing = (name: string) =>
  readFileSync(path.join(REPO_ROOT, "test/fixtures/ssh-certificates", `${name}.txt`), "utf8");
const at = (iso: string) => Date.parse(iso) / 1000;

describe("ssh-keygen -L listings", () => {
  it("reads a certificate valid for minutes: its key ID, bounds in UTC and principals", () => {
    assert.deepEqual(parseCertificateListing(listing("minutes")), {
      keyId: "audit-run-1",
      validAfter: at("2026-12-07T02:00:00Z"),
      validBefore: at("2026-12-07T02:10:00Z"),
      principals: ["qm-audit", "deploy"],
    });
  });

  it("reads open bounds and no principals", () => {
    assert.deepEqual(parseCertificateListing(listing("forever")), {
      keyId: "forever",
      principals: [],
    });
    assert.deepEqual(parseCertificateListing(listing("after")), {
      keyId: "after",
      validAfter: at("2030-01-01T00:00:00Z"),
      principals: ["qm-audit"],
    });
  });

  it("is no certificate's listing for anything else", () => {
    for (const text of [
      "",
      "key.pub:1 is not a certificate\n",
      "Valid: sometimes\nKey ID: x\nPrincipals: (none)\n",
    ])
      assert.equal(parseCertificateListing(text), undefined, text);
  });

  it("reads a listing of a hundred thousand principals", () => {
    const names = Array.from({ length: 100_000 }, (_, i) => `p${i}`);
    const text = listing("minutes").replace(
      /Principals: \n(\s+\S+\n)+/,
      `Principals: \n${names.map((n) => `                ${n}\n`).join("")}`,
    );
    assert.equal(parseCertificateListing(text)?.principals.length, 100_000);
  });
});

describe("why a host refuses a certificate", () => {
  const facts = parseCertificateListing(listing("minutes"))!;
  it("says expired from its end on, and not yet valid before its start, in sshd's words", () => {
    assert.equal(
      certificateProblem(facts, at("2026-12-07T02:10:00Z"), "qm-audit"),
      "certificate expired",
    );
    assert.equal(
      certificateProblem(facts, at("2026-12-07T01:59:59Z"), "qm-audit"),
      "certificate not yet valid",
    );
    assert.equal(certificateProblem(facts, at("2026-12-07T02:05:00Z"), "qm-audit"), undefined);
  });

  it("names a login user the certificate does not list", () => {
    assert.equal(
      certificateProblem(facts, at("2026-12-07T02:05:00Z"), "root"),
      'certificate does not name "root" among its principals (qm-audit, deploy)',
    );
    // No principals, or no user known: the host decides.
    assert.equal(
      certificateProblem(parseCertificateListing(listing("forever"))!, 0, "root"),
      undefined,
    );
    assert.equal(certificateProblem(facts, at("2026-12-07T02:05:00Z"), undefined), undefined);
  });
});

describe("the certificates ssh -G says it offers", () => {
  it("lists CertificateFile lines, then each identity file's -cert.pub, and the user", () => {
    const resolved = [
      "user qm-audit",
      "hostname 10.0.0.5",
      "identityfile ~/.ssh/id_ed25519",
      "certificatefile /run/qm/cert.pub",
      "",
    ].join("\n");
    assert.deepEqual(certificateSettings(resolved), {
      user: "qm-audit",
      files: ["/run/qm/cert.pub", "~/.ssh/id_ed25519-cert.pub"],
    });
  });

  it("expands ~ and the tokens a path may hold, and gives up on one it does not know", () => {
    const home = os.homedir();
    assert.equal(
      expandSshPath("~/certs/%r@%h-%%.pub", { user: "qm-audit", host: "web-01" }),
      path.join(home, "certs/qm-audit@web-01-%.pub"),
    );
    assert.equal(expandSshPath("/c/%C.pub", { user: "u", host: "h" }), undefined);
    assert.equal(expandSshPath("/c/%r.pub", { user: undefined, host: "h" }), undefined);
  });
});
