// The bot's state branch, written and read back through the GitHub double: a large fleet's history
// is over the 1 MB the contents API returns, and is read through the blob instead; a report over the
// largest blob the forge takes (GitHub's 100 MiB, a small limit here) is kept in gzip parts under it.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { ForgeError, StateError } from "../../src/errors.js";
import { GitHub, settingsFromEnv } from "../../src/forge/github.js";
import {
  LEGACY_REPORT_FILE,
  REPORT_INDEX,
  reportFileToKeep,
} from "../../src/propose/kept-report.js";
import {
  HISTORY_FILE,
  partsDir,
  readHistory,
  readLastReport,
  readLastReportIndex,
  readRuns,
  RUNS_FILE,
  STATE_BRANCH,
  writeState,
  type StateFiles,
} from "../../src/propose/state.js";
import { emptyHistory, serializeHistory } from "../../src/report/history.js";
import { readReport } from "../../src/report/read.js";
import { appendRun, emptyRuns, serializeRuns } from "../../src/report/runs.js";
import type { NodeResult } from "../../src/report/schema.js";
import { startForge, type TestForge } from "../support/forge.js";
import { largeReport } from "../support/reports.js";

// The largest blob the double takes here: a 3,000-node report (190 KB gzipped) is several parts.
const MAX_BLOB = 32 * 1024;

/** The kept report read back whole. */
async function lastReport(github: GitHub) {
  const nodes: NodeResult[] = [];
  const read = await readLastReport(github, (node) => nodes.push(node));
  return read && { ...read, report: { ...read.report, nodes } };
}

let forge: TestForge;

/** The blobs written since request `before`, each checked to be within the forge's largest. */
function blobsSince(before: number) {
  const blobs = forge.double.requests
    .slice(before)
    .filter((r) => r.operation === "git/create-blob");
  for (const blob of blobs) {
    const { content } = blob.body as { content: string };
    assert.ok(Buffer.from(content, "base64").length <= MAX_BLOB);
  }
  return blobs;
}
let work: string;
before(async () => {
  forge = await startForge({
    token: "ghs_state_branch",
    owner: "acme",
    repo: "fleet",
    files: { "fleet-manifests/fleet.yaml": "{}\n" },
    maxBlobBytes: MAX_BLOB,
  });
  work = await mkdtemp(path.join(tmpdir(), "qm-state-branch-"));
});
after(async () => {
  await forge?.double.stop();
  await forge?.server.stop();
  if (work) await rm(work, { recursive: true, force: true });
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

test("histories over the largest blob are kept in gzip parts under it and read back; a small one stays one file", async () => {
  const github = new GitHub(settingsFromEnv(forge.double.cliEnv()));
  const base = (await github.branchHead("main"))!;
  const history = emptyHistory();
  history.run = "2026-12-01T10:00:00.000Z";
  for (let i = 0; i < 3000; i++)
    history.nodes.set(`node-${String(i).padStart(5, "0")}`, {
      lastAudited: "2026-12-01T10:00:00.000Z",
      unauditedRuns: 0,
    });
  const runs = appendRun(emptyRuns(), largeReport(3000, 6000));
  for (const text of [serializeHistory(history), serializeRuns(runs)])
    assert.ok(text.length > 2 * MAX_BLOB, `${text.length} bytes`);
  const before = forge.double.requests.length;
  await writeState(github, { ...stateWith(), history, runs }, stateWith(), base);
  const blobs = blobsSince(before);
  assert.ok(blobs.length >= 4, `${blobs.length} parts`);
  for (const file of [HISTORY_FILE, RUNS_FILE]) {
    assert.equal(await github.readFile(STATE_BRANCH, file, "test"), undefined, file);
    assert.ok(await github.readFile(STATE_BRANCH, `${partsDir(file)}/index.json`, "test"), file);
  }
  assert.equal(serializeHistory(await readHistory(github)), serializeHistory(history));
  assert.equal(serializeRuns((await readRuns(github)).runs), serializeRuns(runs));

  // Grown small again: one file, as before parts, and read from it.
  const small = emptyHistory();
  small.run = "2026-12-02T10:00:00.000Z";
  await writeState(github, { ...stateWith(), history: small }, stateWith(), base);
  assert.equal(
    await github.readFile(STATE_BRANCH, `${partsDir(HISTORY_FILE)}/index.json`, "t"),
    undefined,
  );
  assert.equal((await readHistory(github)).run, small.run);
  assert.deepEqual(forge.double.violations, []);
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

/** The state a run with nothing else to keep leaves, with `lastReport`. */
const stateWith = (lastReport?: StateFiles["lastReport"]): StateFiles => ({
  waiting: new Map(),
  history: emptyHistory(),
  runs: emptyRuns(),
  nodeLists: new Map(),
  ...(lastReport && { lastReport }),
});

test("a report over the largest blob is kept in gzip parts under it, read back node for node, and kept again without writing a part", async () => {
  const file = path.join(work, "report.json");
  await writeFile(file, JSON.stringify(largeReport(3000, 6000)));
  const github = new GitHub(settingsFromEnv(forge.double.cliEnv()));
  assert.equal(github.settings.maxBlobBytes, MAX_BLOB);
  const base = (await github.branchHead("main"))!;
  // The form before parts: one file, which the forge refuses at this size.
  await assert.rejects(
    github.commitFiles(
      base,
      { [LEGACY_REPORT_FILE]: JSON.stringify(largeReport(3000, 6000)) },
      "x",
    ),
    (error) => error instanceof ForgeError && error.status === 422,
  );

  const before = forge.double.requests.length;
  await writeState(github, stateWith(await reportFileToKeep(file)), stateWith(), base);
  const blobs = blobsSince(before);
  assert.ok(blobs.length >= 3, `${blobs.length} parts`);
  const read = await lastReport(github);
  assert.deepEqual(read?.report, await readReport(file));
  assert.equal(read?.kept.parts?.length, blobs.length);

  // The next run keeps the same report beside a new history: the parts are named again, not written.
  const history = emptyHistory();
  history.run = "2026-12-02T10:00:00.000Z";
  const previous = {
    ...stateWith((await readLastReportIndex(github)).kept),
    history: emptyHistory(),
  };
  const again = forge.double.requests.length;
  await writeState(github, { ...stateWith(read.kept), history }, previous, base);
  const writes = forge.double.requests.slice(again).map((r) => r.operation);
  assert.ok(!writes.includes("git/create-blob"), writes.join(" "));
  assert.ok(writes.includes("git/create-commit"), writes.join(" "));
  assert.deepEqual((await lastReport(github))?.report, read?.report);
  assert.equal((await readHistory(github)).run, history.run);
  assert.deepEqual(forge.double.violations, []);
});

test("a state branch holding the report as one file, as before parts, is still read: 8 MB through the blob API", async () => {
  const report = largeReport(3000, 24000);
  await forge.double.pushCommit(STATE_BRANCH, {
    [REPORT_INDEX]: null,
    [LEGACY_REPORT_FILE]: JSON.stringify(report),
  });
  const github = new GitHub(settingsFromEnv(forge.double.cliEnv()));
  assert.ok(JSON.stringify(report).length > 8_000_000);
  assert.deepEqual((await lastReport(github))?.report, report);
  assert.deepEqual(await readLastReportIndex(github), {});
});

test("an index whose parts are not the report it names is refused, naming the file", async () => {
  const github = new GitHub(settingsFromEnv(forge.double.cliEnv()));
  const file = path.join(work, "small.json");
  await writeFile(file, JSON.stringify(largeReport(20, 20)));
  const base = (await github.branchHead("main"))!;
  await writeState(github, stateWith(await reportFileToKeep(file)), stateWith(), base);
  const index = JSON.parse(
    (await github.readFile(STATE_BRANCH, REPORT_INDEX, "reading the index"))!,
  ) as { sha256: string };
  await forge.double.pushCommit(STATE_BRANCH, {
    [REPORT_INDEX]: JSON.stringify({ ...index, sha256: "0".repeat(64) }),
  });
  await assert.rejects(lastReport(github), (error) => {
    assert.ok(error instanceof StateError);
    assert.equal(error.file, `${STATE_BRANCH}:last-report`);
    return true;
  });
  await forge.double.pushCommit(STATE_BRANCH, { [REPORT_INDEX]: "{}" });
  const { warning } = await readLastReportIndex(github);
  assert.match(
    warning ?? "",
    /^quartermaster-state:last-report\/index\.json is not an index of the last report's parts/,
  );
});
