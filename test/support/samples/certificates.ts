import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { marked, PROTOTYPE_NAMES } from "../probe-output.js";
import type { DomainSample } from "./domain-sample.js";
import type { certificates } from "../../../src/domains/certificates/index.js";

/** A certificate made with openssl under faketime: valid from 2019-01-01 to 2019-01-31. */
export const EXPIRED_PEM = readFileSync(
  new URL("../../fixtures/certificates/expired-2019.pem", import.meta.url),
  "utf8",
);
const EXPIRED = "expires on 2019-01-31T00:00:00Z";

const WEB = "/etc/qm-certs/web.pem";

export const sample: DomainSample<typeof certificates> = {
  reads: ["/etc/ssl"],
  declared: [
    { path: "/etc/ssl/constructor.pem", valid_for: "30d", subject: "CN=x", names: ["toString"] },
    { path: "/etc/ssl/certs", valid_for: "1d", issuer: "CN=y" },
  ],
  fuzzLines: (mark) => [
    mark("cap 1024"),
    ...["file", "over", "private", "unreadable", "link", "other", "missing", "more"].map((kind) =>
      mark(`${kind} /etc/ssl/constructor.pem`),
    ),
    mark("folder /etc/ssl/certs"),
    mark("file /etc/ssl/certs/a.pem"),
    ...EXPIRED_PEM.split("\n"),
    "-----BEGIN CERTIFICATE-----",
    "-----END CERTIFICATE-----",
    "12",
  ],
  bench: {
    declared: [{ path: "/etc/ssl/certs", valid_for: "30d" }],
    output: (n, { mark, lines }) =>
      `${mark("cap 1024")}\n${mark("folder /etc/ssl/certs")}\n` +
      lines(n, (i) => `${mark(`file /etc/ssl/certs/c${i}.pem`)}\n${EXPIRED_PEM}`),
  },
  hostile: {
    section: (nonce) =>
      marked(nonce, [
        ["cap 1024", ""],
        ["folder /etc/ssl/h", ""],
        ...PROTOTYPE_NAMES.map((n): [string, string] => [`file /etc/ssl/h/${n}`, EXPIRED_PEM]),
      ]),
    declared: [{ path: "/etc/ssl/h", valid_for: "30d" }],
    drift: (items) =>
      assert.deepEqual(
        items.map((d) => [d.key, d.declared, d.live]),
        PROTOTYPE_NAMES.map((n) => [`/etc/ssl/h/${n}`, "30d", EXPIRED]),
      ),
  },
  fleet: {
    host: { files: { [WEB]: { contents: EXPIRED_PEM } } },
    declared: [{ path: WEB, valid_for: "30d" }],
    drift: (items) => assert.deepEqual(items, [{ key: WEB, declared: "30d", live: EXPIRED }]),
  },
};
