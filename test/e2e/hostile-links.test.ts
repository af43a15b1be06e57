// A hostile host's symlinks over real ssh, audited with `become: sudo`: a folder an app user owns,
// swapped for a link to a root-only folder, and unit files or drop-in folders linked to root-only
// files. Nothing behind a link is read, whichever component of the path it is: each is drift
// naming the link, and the root-only text is nowhere in what the audit prints. Needs root.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { stringify } from "yaml";
import { Report } from "../../src/report/schema.js";
import { runCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { removeTree, writeTree } from "../support/tree.js";

const HOST = "links-01";
const APP_DIR = "/etc/qm-links/app";
const VAULT = "/etc/qm-links/vault";
// The same file, written with an empty and a `.` component.
const ODD_PATH = "/etc/qm-links//app/./app.env";
const PLAIN = "/etc/qm-links/plain.conf";
const UNIT = "[Service]\nExecStart=/bin/true\n";
const OVERRIDE = "[Service]\nEnvironment=MODE=prod\n";

describe("symlinks on the way to declared paths, audited with become: sudo", () => {
  let fleet: TestFleet;
  let manifests: string;

  before(async () => {
    fleet = await startFleet([
      {
        name: HOST,
        files: {
          "/etc/sudoers.d/qm-audit": {
            contents: "qm-audit ALL=(root) NOPASSWD: /bin/sh\n",
            mode: "0440",
          },
          [PLAIN]: { contents: "plain = yes\n", mode: "0644" },
          [`${APP_DIR}/app.env`]: { contents: "DB_HOST=db\n", mode: "0644" },
          [`${VAULT}/app.env`]: { contents: "DB_PASSWORD=QM-TOPSECRET-1\n", mode: "0600" },
          [`${VAULT}/unit.service`]: { contents: "[Service]\nQM-TOPSECRET-2\n", mode: "0600" },
          "/etc/systemd/system/qm-app.service": { contents: UNIT, mode: "0644" },
        },
      },
    ]);
    // The app user's folder becomes a link to the root-only folder; a unit file and a drop-in
    // folder become links to root-only places.
    await fleet.exec(
      HOST,
      [
        `chown -R nobody ${APP_DIR}`,
        `rm -r ${APP_DIR} && ln -s ${VAULT} ${APP_DIR}`,
        `ln -s ${VAULT}/unit.service /etc/systemd/system/qm-linked.service`,
        `ln -s ${VAULT} /etc/systemd/system/qm-app.service.d`,
      ].join(" && "),
    );
    manifests = await writeTree({
      [`nodes/${HOST}.yaml`]: stringify({
        ssh: { become: "sudo" },
        files: [
          { path: `${APP_DIR}/app.env`, contents: "DB_HOST=db\n" },
          { path: ODD_PATH, sha256: "0".repeat(64) },
          { path: PLAIN, contents: "plain = yes\n", mode: "0644" },
        ],
        systemd: {
          units: [
            { name: "qm-linked.service", contents: UNIT },
            { name: "qm-app.service", contents: UNIT, dropins: { "override.conf": OVERRIDE } },
          ],
        },
      }),
    });
  });
  after(async () => {
    await fleet?.stop();
    if (manifests) await removeTree(manifests);
  });

  test("each link is drift naming it, nothing behind it is read, a plain file is still read and matches", async () => {
    const cli = (format: string) =>
      runCli([
        "audit",
        "--format",
        format,
        "--verbose",
        "--manifests",
        manifests,
        "--ssh-config",
        fleet.sshConfig,
      ]);
    const json = await cli("json");
    assert.equal(json.exitCode, 1, json.stderr);
    const [node] = Report.parse(JSON.parse(json.stdout)).nodes;
    assert.equal(node!.unknown, undefined, JSON.stringify(node!.unknown));
    assert.deepEqual(
      node!.drift.map((d) => [d.domain, d.key, d.live, d.path.at(-1)]),
      [
        ["files", `${APP_DIR}/app.env`, `symlink ${APP_DIR} -> ${VAULT}`, "type"],
        ["files", ODD_PATH, `symlink ${APP_DIR} -> ${VAULT}`, "type"],
        [
          "systemd",
          "qm-linked.service:contents",
          `symlink /etc/systemd/system/qm-linked.service -> ${VAULT}/unit.service`,
          "contents",
        ],
        [
          "systemd",
          "qm-app.service.d/override.conf",
          `symlink /etc/systemd/system/qm-app.service.d -> ${VAULT}`,
          "override.conf",
        ],
      ],
    );
    for (const output of [json, await cli("text"), await cli("markdown")])
      assert.doesNotMatch(output.stdout + output.stderr, /TOPSECRET/, "a link was followed");
  });
});
