// A ports finding in the words of the allow-list, as a user sees it through the real CLI on a real
// sshd test host: an unauthorized listener is "not in the allow-list", never "declared closed"
// (nothing declares a port closed), in the audit's text and Markdown and in the ticket pull request
// propose opens on the real git server and the GitHub double. Needs root.
import assert from "node:assert/strict";
import path from "node:path";
import { after, describe, test } from "node:test";
import { runCli } from "../support/cli.js";
import { suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";

const M = "fleet-manifests";
let fleet: TestFleet;
const forge = suiteForge({
  token: "ghs_ports_words",
  workPrefix: "qm-ports-words-",
  files: {
    "README.md": "Fleet manifests.\n",
    [`${M}/fleet.yaml`]: "networking:\n  listening_ports: [tcp/22]\n",
    // The same host twice: one node allows only ssh, the other requires tcp/443 too.
    [`${M}/nodes/web-01.yaml`]: "host: web-01\n",
    [`${M}/nodes/web-02.yaml`]: "host: web-01\nnetworking:\n  listening_ports: [tcp/22, tcp/443]\n",
  },
  setup: async () => {
    // tcp/9999: the harness's listener, root's: the audit user may not read its process.
    fleet = await startFleet([{ name: "web-01", listeners: ["tcp/9999"] }]);
  },
});

after(async () => {
  await fleet?.stop();
});

describe("ports findings in the words of the allow-list", () => {
  const cli = (...args: string[]) =>
    runCli([...args, ...forge.repoArgs(), "--ssh-config", fleet.sshConfig], {
      env: forge.double.cliEnv(),
    });

  test("audit, text and Markdown: an unauthorized listener is not in the allow-list", async () => {
    const text = await cli("audit", "--format", "text", "--no-color");
    assert.equal(text.exitCode, 1, text.stderr);
    const lines = text.stdout.split("\n");
    for (const line of [
      "  [high] ports tcp/9999: declared not in the allow-list, live listening",
      "    listening on 0.0.0.0 (process unknown, user root)",
      // A declared port that is closed keeps its declared value: the allow-list does require it.
      "  [high] ports tcp/443: declared listening, live closed",
    ])
      assert.ok(lines.includes(line), `${line}\nnot in\n${text.stdout}`);
    assert.doesNotMatch(text.stdout, /declared "?closed/);

    const markdown = await cli("audit", "--format", "markdown");
    assert.equal(markdown.exitCode, 1, markdown.stderr);
    assert.match(
      markdown.stdout,
      /\| `tcp\/9999` \(cause unknown: `nothing on the host recorded this change`\) \| `not in the allow-list` \| `listening` \(`listening on 0\.0\.0\.0 \(process unknown, user root\)`\) \|/,
    );
    assert.doesNotMatch(markdown.stdout, /`closed` \| `listening`/);
  });

  test("propose: the ticket pull request says it in the allow-list's words, title, sentence and table", async () => {
    const report = path.join(forge.work, "report.json");
    const audit = await cli("audit", "--format", "json", "--out", report);
    assert.equal(audit.exitCode, 1, audit.stderr);
    const propose = await runCli(["propose", "--report", report, ...forge.repoArgs()], {
      env: forge.double.cliEnv(),
    });
    assert.equal(propose.exitCode, 0, propose.stderr);
    const pull = forge.double
      .pulls()
      .find((p) => p.state === "open" && p.title.includes("on web-01:"));
    assert.ok(
      pull,
      forge.double
        .pulls()
        .map((p) => p.title)
        .join("\n"),
    );
    assert.equal(
      pull.title,
      "Remediate ports drift on web-01: tcp/9999: not in the allow-list → listening",
    );
    const body = pull.body ?? "";
    for (const words of [
      "Quartermaster found **high** ports drift on 1 node: `tcp/9999` listens on the host, and networking.listening_ports (the allow-list) does not allow it.",
      "Detail: `listening on 0.0.0.0 (process unknown, user root)`",
      "| `web-01` | `tcp/9999` | `not in the allow-list` | `listening` | `fleet-manifests/fleet.yaml:2` |",
    ])
      assert.ok(body.includes(words), `${words}\nnot in\n${body}`);
    assert.doesNotMatch(body, /`closed`/);
    // web-02's two items are one pull request: each row says its own declared value and detail.
    const both = forge.double
      .pulls()
      .find((p) => p.state === "open" && p.title.includes("on web-02:"));
    assert.ok(both);
    for (const row of [
      "| `web-02` | `tcp/443` | `listening` | `closed` (`nothing listens on it`) |",
      "| `web-02` | `tcp/9999` | `not in the allow-list` | `listening` (`listening on 0.0.0.0 (process unknown, user root)`) |",
    ])
      assert.ok(both.body?.includes(row), `${row}\nnot in\n${both.body}`);
  });
});
