// The report a scheduled run keeps on the state branch, read by the next run: over the largest blob
// the forge takes (GitHub's 100 MiB; a few KiB here) it is kept in gzip parts under it, and
// `propose --report-from-repo` plans from those parts, opening what the first run deferred. Real
// sshd test hosts, the real CLI, the real git server and the OpenAPI-checked double, which refuses
// a blob over the limit as GitHub refuses one over 100 MiB. Needs root.
import assert from "node:assert/strict";
import { readFile, stat } from "node:fs/promises";
import { after, describe, it } from "node:test";
import { execa } from "execa";
import { keptReportText, OWNER, REPO, suiteForge } from "../support/forge.js";
import { startFleet, type TestFleet } from "../support/hosts.js";
import { scheduledRun } from "../support/scheduled-run.js";

const TOKEN = "ghs_kept_report";
const M = "fleet-manifests";
// Above every other state file of this fleet (the run history is about 3 KB), below its report:
// the report as one file is refused. The bot cuts its parts smaller, so there are several.
const MAX_BLOB = 4096;
const PART_BYTES = 512;

const KEYS = [
  "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_keepalive_time",
  "net.ipv4.tcp_keepalive_probes",
  "net.ipv4.tcp_keepalive_intvl",
];
const declared = ["60", "7200", "9", "75"];
const node = (owner: string) =>
  [
    "owners: [" + owner + "]",
    "system:",
    "  sysctl_parameters:",
    ...KEYS.map((key, i) => `    ${key}: ${declared[i]}`),
    "",
  ].join("\n");

let fleet: TestFleet;
const forge = suiteForge({
  token: TOKEN,
  workPrefix: "qm-kept-report-",
  maxBlobBytes: MAX_BLOB,
  files: {
    "README.md": "Fleet manifests.\n",
    [`${M}/fleet.yaml`]: "policy:\n  sysctl: { on_drift: accept }\n",
    [`${M}/nodes/web-01.yaml`]: node("alice"),
    [`${M}/nodes/db-01.yaml`]: node("bob"),
  },
  setup: async ({ double }) => {
    const live = Object.fromEntries(KEYS.map((key, i) => [key, String(Number(declared[i]) + 1)]));
    fleet = await startFleet(
      [
        { name: "web-01", sysctls: live },
        { name: "db-01", sysctls: live },
      ],
      { prefix: "qmk" },
    );
    double.addCollaborator("alice", "write");
    double.addCollaborator("bob", "write");
  },
});

after(async () => {
  await fleet?.stop();
});

const run = scheduledRun(forge, () => fleet.sshConfig, {
  env: { QUARTERMASTER_MAX_BLOB_BYTES: String(PART_BYTES) },
});
const openPulls = () => forge.double.pulls().filter((p) => p.state === "open");
/** The state branch's files and their sizes, as the git server holds them. */
async function stateFiles(): Promise<Map<string, number>> {
  const { stdout } = await execa("git", [
    "--git-dir",
    forge.server.barePath(OWNER, REPO),
    "ls-tree",
    "-r",
    "-l",
    "quartermaster-state",
  ]);
  return new Map(
    stdout.split("\n").map((line) => {
      const [meta, file] = line.split("\t") as [string, string];
      return [file, Number(meta.trim().split(/\s+/)[3])];
    }),
  );
}

describe("the kept report across two runs", () => {
  it("a scheduled run keeps its report in parts under the blob limit; the next run plans from them with --report-from-repo and opens what the first deferred", async () => {
    const { file, report } = await run.audit("run-1", 1);
    assert.equal(report.nodes.length, 2);
    assert.ok((await stat(file)).size > MAX_BLOB, "the report as one file is over the limit");
    const first = await run.propose(["--report", file, "--max-new-prs", "1"]);
    assert.doesNotMatch(first.stderr, /failed|refused/i, first.stderr);
    assert.equal(openPulls().length, 1, first.stdout);

    const kept = await stateFiles();
    const parts = [...kept].filter(([name]) => name.startsWith("last-report/part-"));
    assert.ok(parts.length >= 2, [...kept].join("\n"));
    for (const [, size] of parts) assert.ok(size <= PART_BYTES);
    assert.ok(!kept.has("last-report.json"));
    const text = await keptReportText(forge.server.barePath(OWNER, REPO));
    assert.equal(text, await readFile(file, "utf8"), "the parts are the report, byte for byte");

    const before = forge.double.requests.length;
    const second = await run.propose(["--report-from-repo"]);
    assert.match(second.stdout, /^open /m, second.stdout);
    assert.ok(openPulls().length > 1, second.stdout);
    // The same report kept again: its parts are named on the new state commit, not written again;
    // the histories, over this test's part size too, are the only parts written.
    const written = forge.double.requests.slice(before).map((r) => r.operation);
    const after = await stateFiles();
    const historyParts = [...after.keys()].filter((name) =>
      /^(audit|run)-history\/part-/.test(name),
    );
    assert.ok(written.includes("git/create-tree"));
    assert.equal(written.filter((op) => op === "git/create-blob").length, historyParts.length);
    assert.deepEqual(
      [...after].filter(([name]) => name.startsWith("last-report/")),
      [...kept].filter(([name]) => name.startsWith("last-report/")),
    );
    assert.deepEqual(forge.double.violations, []);
  });
});
