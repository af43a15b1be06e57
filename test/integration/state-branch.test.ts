// The audit history on the bot's state branch, read back through the GitHub double: a large fleet's
// history is over the 1 MB the contents API returns, and is read through the blob instead.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { GitHub, settingsFromEnv } from "../../src/forge/github.js";
import {
  HISTORY_FILE,
  readHistory,
  readLastReport,
  REPORT_FILE,
  STATE_BRANCH,
} from "../../src/propose/state.js";
import { emptyHistory, serializeHistory } from "../../src/report/history.js";
import { startForge, type TestForge } from "../support/forge.js";

let forge: TestForge;
before(async () => {
  forge = await startForge({
    token: "ghs_state_branch",
    owner: "acme",
    repo: "fleet",
    files: { "fleet-manifests/fleet.yaml": "{}\n" },
  });
});
after(async () => {
  await forge?.double.stop();
  await forge?.server.stop();
});

test("a history over 1 MB is read whole (through the blob API), and its entries come back", async () => {
  const history = emptyHistory();
  history.run = "2026-12-01T10:00:00.000Z";
  for (let i = 0; i < 20_000; i++)
    history.nodes.set(`node-${String(i).padStart(5, "0")}`, {
      lastAudited: "2026-12-01T10:00:00.000Z",
      unauditedRuns: 0,
    });
  const text = serializeHistory(history);
  assert.ok(text.length > 1024 * 1024, `${text.length} bytes`);
  await forge.double.pushCommit(STATE_BRANCH, { [HISTORY_FILE]: text });

  const github = new GitHub(settingsFromEnv(forge.double.cliEnv()));
  const read = await readHistory(github);
  assert.equal(read.nodes.size, 20_000);
  assert.equal(serializeHistory(read), text);
  assert.ok(forge.double.requests.some((r) => r.operation === "git/get-blob"));
  assert.deepEqual(forge.double.violations, []);
});

test("a last report of 30 MB (10,000 drifted nodes) is read whole: Octokit's parser gives up on it", async () => {
  const text = JSON.stringify({ nodes: "x".repeat(30_000_000) });
  await forge.double.pushCommit(STATE_BRANCH, { [REPORT_FILE]: text });
  const read = await readLastReport(new GitHub(settingsFromEnv(forge.double.cliEnv())));
  assert.equal(read?.length, text.length);
  assert.ok(read === text);
});

test("no state branch yet: an empty history, nothing said", async () => {
  const fresh = await startForge({
    token: "ghs_state_branch_2",
    owner: "acme",
    repo: "other",
    files: { "README.md": "x\n" },
  });
  try {
    const read = await readHistory(new GitHub(settingsFromEnv(fresh.double.cliEnv())));
    assert.equal(read.nodes.size + read.drift.size, 0);
  } finally {
    await fresh.double.stop();
    await fresh.server.stop();
  }
});
