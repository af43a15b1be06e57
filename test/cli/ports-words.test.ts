// A ports finding in the words of the allow-list, as a user sees it through the real CLI on a real
// sshd test host: an unauthorized listener is "not in the allow-list", never "declared closed"
// (nothing declares a port closed). Needs root.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { runCli } from "../support/cli.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { removeTree, writeTree } from "../support/tree.js";

describe("ports findings in the words of the allow-list", () => {
  let fleet: TestFleet;
  let manifests: string;

  before(async () => {
    fleet = await startFleet([{ name: "web-01", listeners: ["tcp/9999"] }]);
    manifests = await writeTree({
      "fleet.yaml": "networking:\n  listening_ports: [tcp/22, tcp/443]\n",
      "nodes/web-01.yaml": "host: web-01\n",
    });
  });

  after(async () => {
    await fleet?.stop();
    await removeTree(manifests);
  });

  const cli = (...args: string[]) =>
    runCli([...args, "--manifests", manifests, "--ssh-config", fleet.sshConfig]);

  test("audit, text and Markdown: an unauthorized listener is not in the allow-list", async () => {
    const text = await cli("audit", "--format", "text", "--no-color");
    assert.equal(text.exitCode, 1, text.stderr);
    const lines = text.stdout.split("\n");
    assert.ok(
      lines.includes("  [high] ports tcp/9999: declared not in the allow-list, live listening"),
      text.stdout,
    );
    // The harness's listener is root's: the audit user may not read its process.
    assert.ok(lines.includes("    listening on 0.0.0.0 (process unknown, user root)"), text.stdout);
    // A declared port that is closed keeps its declared value: the allow-list does require it.
    assert.ok(
      lines.includes("  [high] ports tcp/443: declared listening, live closed"),
      text.stdout,
    );
    assert.doesNotMatch(text.stdout, /declared "?closed/);

    const markdown = await cli("audit", "--format", "markdown");
    assert.equal(markdown.exitCode, 1, markdown.stderr);
    assert.match(
      markdown.stdout,
      /\| `tcp\/9999` \(cause unknown: `nothing on the host recorded this change`\) \| `not in the allow-list` \| `listening` \(`listening on 0\.0\.0\.0 \(process unknown, user root\)`\) \|/,
    );
    assert.doesNotMatch(markdown.stdout, /`closed` \| `listening`/);
  });
});
