// An unauthorized listener names its processes and its socket's user through the real CLI on a
// real sshd test host: the audit user's own processes by name, another user's and root's as
// "process unknown" (never a wrong name) unless the probe runs as root (`become: sudo`). A
// process name is host text: a hostile one is escaped. Needs root.
import assert from "node:assert/strict";
import { chmod, mkdtemp, readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Report } from "../../src/report/schema.js";
import { auditThroughCli } from "../support/cli.js";
import { AUDIT_USER, startFleet, type TestFleet } from "../support/hosts.js";
import { removeTree, writeTree } from "../support/tree.js";

// 15 bytes, the most a comm holds: a comment opener, a mention, an IPv6-looking `::`, an escape.
const HOSTILE = "<!--@x::\u001b[2J";

describe("ports: the listener's process and user", () => {
  let fleet: TestFleet;
  let manifests: string;
  let ready: string;
  const pids = new Map<string, number>();

  /** Starts a TCP listener on `port` as `user` inside the host, named `name`; resolves its pid. */
  const listen = async (user: string, port: number, name: string) => {
    const file = path.join(ready, String(port));
    const script = `const fs = require("fs"); fs.writeFileSync("/proc/self/comm", ${JSON.stringify(name)}); require("net").createServer().listen(${port}, "0.0.0.0", () => fs.writeFileSync(${JSON.stringify(file)}, String(process.pid)));`;
    await fleet.exec(
      "web-01",
      `setpriv --reuid ${user} --regid $(id -g ${user}) --init-groups ${process.execPath} -e '${script}' </dev/null >/dev/null 2>&1 & while [ ! -s ${file} ]; do sleep 0.1; done`,
    );
    pids.set(name, Number(await readFile(file, "utf8")));
  };

  before(async () => {
    ready = await mkdtemp(path.join(os.tmpdir(), "qm-holders-"));
    await chmod(ready, 0o777);
    fleet = await startFleet([
      {
        name: "web-01",
        // tcp/8080: root's listener (the harness's own, a node process).
        listeners: ["tcp/8080"],
        files: {
          "/etc/sudoers.d/qm-audit": {
            contents: `${AUDIT_USER} ALL=(root) NOPASSWD: /bin/sh\n`,
            mode: "0440",
          },
        },
      },
    ]);
    await listen(AUDIT_USER, 9001, HOSTILE);
    await listen("nobody", 9002, "other-user");
    manifests = await writeTree({
      "fleet.yaml": "networking:\n  listening_ports: [tcp/22]\n",
      "nodes/web-01.yaml": "host: web-01\n",
      "nodes/web-01-root.yaml": "host: web-01\nssh:\n  become: sudo\n",
    });
  });

  after(async () => {
    await fleet?.stop();
    await removeTree(ready);
    await removeTree(manifests);
  });

  const audit = (format: string, ...more: string[]) =>
    auditThroughCli(manifests, fleet.sshConfig)(format, ...more);

  test("the JSON report names each holder where readable, and says unknown where not", async () => {
    const out = path.join(ready, "report.json");
    const result = await audit("json", "--out", out);
    assert.equal(result.exitCode, 1, result.stderr);
    const report = JSON.parse(await readFile(out, "utf8")) as Report;
    const holders = (node: string) =>
      Object.fromEntries(
        report.nodes.find((n) => n.name === node)!.drift.map((item) => [item.key, item.holders]),
      );
    const nobody = Number((await fleet.exec("web-01", "id -u nobody")).trim());
    const auditUid = Number((await fleet.exec("web-01", `id -u ${AUDIT_USER}`)).trim());
    // As the audit user: its own process by pid and name; root's and nobody's, their user only.
    assert.deepEqual(holders("web-01"), {
      "tcp/8080": [{ uid: 0, user: "root" }],
      "tcp/9001": [{ pid: pids.get(HOSTILE), name: HOSTILE, uid: auditUid, user: AUDIT_USER }],
      "tcp/9002": [{ uid: nobody, user: "nobody" }],
    });
    // As root, through sudo: every process.
    const root = holders("web-01-root");
    // The harness's own root listener: a node process, whatever its pid.
    const [rootListener, ...more] = root["tcp/8080"] ?? [];
    assert.equal(more.length, 0);
    assert.equal(typeof rootListener?.pid, "number");
    assert.deepEqual({ ...rootListener, pid: 0 }, { pid: 0, name: "node", uid: 0, user: "root" });
    assert.deepEqual(root["tcp/9002"], [
      { pid: pids.get("other-user"), name: "other-user", uid: nobody, user: "nobody" },
    ]);
  });

  test("the text and Markdown reports say it in words, the hostile name escaped", async () => {
    const text = await audit("text");
    assert.equal(text.exitCode, 1, text.stderr);
    const shown = "<!--@x::\\x1b[2J";
    assert.match(
      text.stdout,
      new RegExp(
        `listening on 0\\.0\\.0\\.0 \\(${shown.replace(/[[\]\\()]/g, "\\$&")}, pid ${pids.get(HOSTILE)}, user ${AUDIT_USER}\\)`,
      ),
    );
    assert.match(text.stdout, /listening on 0\.0\.0\.0 \(process unknown, user root\)/);
    assert.match(text.stdout, /listening on 0\.0\.0\.0 \(process unknown, user nobody\)/);
    assert.match(
      text.stdout,
      new RegExp(
        `listening on 0\\.0\\.0\\.0 \\(other-user, pid ${pids.get("other-user")}, user nobody\\)`,
      ),
    );
    assert.doesNotMatch(text.stdout, /\u001b/, "no raw escape reaches the terminal");
    const markdown = await audit("markdown");
    assert.match(markdown.stdout, /process unknown, user root/);
    assert.ok(!markdown.stdout.includes("<!--@x"), "the comment opener is not raw Markdown");
  });
});
