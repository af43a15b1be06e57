// The report a propose run keeps on the state branch, at fleet scale: written (gzip parts of at most
// QUARTERMASTER_MAX_BLOB_BYTES, 16 MiB by default) and read back (`--report-from-repo`) through the
// GitHub double on the real git server, which refuses a blob over GitHub's 100 MiB. Each step runs
// in a process of its own, for its own peak RSS and CPU time; in the same run, the baselines: the
// form before parts (the report as one string in one file, at the size GitHub still takes), and the
// same report read from a local file (`propose --report`). Stand-in reports: every node drifted on
// the same eight items, about 3.7 KB of JSON per node, as the 100,000-node audit writes.
// Usage: npx tsx bench/kept-report.ts [nodes=10000,100000]
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { ForgeError } from "../src/errors.js";
import { GitHub, settingsFromEnv } from "../src/forge/github.js";
import { LEGACY_REPORT_FILE, reportFileToKeep } from "../src/propose/kept-report.js";
import { readLastReport, STATE_BRANCH, writeState } from "../src/propose/state.js";
import { emptyHistory } from "../src/report/history.js";
import { parseReport, readReport } from "../src/report/read.js";
import { emptyRuns } from "../src/report/runs.js";
import type { DriftItem, NodeResult } from "../src/report/schema.js";
import { ReportTally } from "../src/report/tally.js";
import { startForge } from "../test/support/forge.js";
import { GITHUB_MAX_BLOB_BYTES } from "../test/support/github-double/repository.js";

const SELF = fileURLToPath(import.meta.url);
const TOKEN = "ghs_bench_kept_report";
const MB = 1024 * 1024;

type Step = "write" | "read" | "write-one-file" | "read-one-file" | "read-local";

/** Node `i` of the stand-in fleet: eight drift items, each with its own fingerprint. */
function standInNode(i: number): NodeResult {
  const name = `node-${String(i).padStart(6, "0")}`;
  const drift: DriftItem[] = Array.from({ length: 8 }, (_, k) => ({
    domain: "files",
    key: `/etc/app/conf.d/${k}.conf`,
    declared: `sha256:${"a".repeat(64)}`,
    live: `sha256:${"b".repeat(64)}`,
    severity: "medium",
    fingerprint: ((i * 8 + k) * 2654435761).toString(16).slice(-16).padStart(16, "0"),
    source: { file: "fleet-manifests/groups/app.yaml", line: 10 + k },
    remediation: "Restore the file from the manifest.",
    onDrift: "accept",
    path: ["files", `/etc/app/conf.d/${k}.conf`],
    diff: `--- declared\n+++ live\n@@ -1,2 +1,2 @@\n listen 8080\n-workers ${k}\n+workers ${k + 1}\n`,
  }));
  return { name, host: `${name}.example.net`, status: "drift", durationMs: 1200, drift };
}

/** A report of `nodes` stand-in nodes, written a node at a time (never held whole). */
async function writeStandIn(file: string, nodes: number): Promise<void> {
  const out = createWriteStream(file);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, "drain");
  };
  const tally = new ReportTally();
  await write(
    `{"schemaVersion":1,"startedAt":"2026-12-01T06:00:00.000Z","finishedAt":"2026-12-01T06:20:00.000Z","manifestRevision":null,"nodes":[`,
  );
  for (let i = 0; i < nodes; i++) {
    const node = standInNode(i);
    tally.add(node);
    await write(`${i ? "," : ""}\n${JSON.stringify(node)}`);
  }
  await write(`\n],"summary":${JSON.stringify(tally.summary)}}\n`);
  out.end();
  await once(out, "finish");
}

/** One step, in this process: what it did, with this process's CPU time and peak RSS. */
async function child(step: Step, file: string): Promise<void> {
  const github = new GitHub(settingsFromEnv(process.env));
  const base = (await github.branchHead("main"))!;
  const state = {
    waiting: new Map(),
    history: emptyHistory(),
    runs: emptyRuns(),
    nodeLists: new Map(),
  };
  let said: string;
  try {
    if (step === "write") {
      await writeState(github, { ...state, lastReport: await reportFileToKeep(file) }, state, base);
      said = "kept";
    } else if (step === "write-one-file") {
      const text = await readFile(file, "utf8");
      const commit = await github.commitFiles(base, { [LEGACY_REPORT_FILE]: text }, "bench");
      await github.setBranch(STATE_BRANCH, commit);
      said = "kept";
    } else if (step === "read") {
      let nodes = 0;
      await readLastReport(github, () => nodes++);
      said = `${nodes} nodes`;
    } else if (step === "read-one-file") {
      const text = await github.readFile(STATE_BRANCH, LEGACY_REPORT_FILE, "bench");
      said = `${parseReport(text!, LEGACY_REPORT_FILE).nodes.length} nodes`;
    } else said = `${(await readReport(file)).nodes.length} nodes`;
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    said = `refused: ${error.message.slice(0, 90)}`;
  }
  const cpu = process.cpuUsage();
  const rss = process.resourceUsage().maxRSS / 1024;
  process.stdout.write(
    `${JSON.stringify({ said, cpuMs: (cpu.user + cpu.system) / 1000, rssMb: rss })}\n`,
  );
}

interface Measured {
  said: string;
  cpuMs: number;
  rssMb: number;
}

async function measure(step: Step, file: string, env: Record<string, string>): Promise<Measured> {
  const { stdout } = await execa(process.execPath, ["--import", "tsx", SELF, "child", step, file], {
    env,
  });
  return JSON.parse(stdout.split("\n").at(-1)!) as Measured;
}

async function main(counts: number[]): Promise<void> {
  const work = await mkdtemp(path.join(tmpdir(), "qm-bench-kept-"));
  const { server, double } = await startForge({
    token: TOKEN,
    owner: "acme",
    repo: "fleet",
    files: { "fleet-manifests/fleet.yaml": "{}\n" },
  });
  const env = double.cliEnv();
  const line = (what: string, m: Measured, base?: Measured) =>
    console.log(
      `  ${what.padEnd(34)} CPU ${(m.cpuMs / 1000).toFixed(2).padStart(6)} s  peak RSS ${m.rssMb.toFixed(0).padStart(5)} MB` +
        (base
          ? `  (x${(m.rssMb / base.rssMb).toFixed(2)} RSS, x${(m.cpuMs / base.cpuMs).toFixed(2)} CPU)`
          : "") +
        `  ${m.said}`,
    );
  try {
    for (const nodes of counts) {
      const file = path.join(work, `report-${nodes}.json`);
      await writeStandIn(file, nodes);
      const bytes = (await stat(file)).size;
      console.log(`${nodes} nodes: report ${(bytes / MB).toFixed(1)} MB of JSON`);
      const local = await measure("read-local", file, env);
      line("read from a local file (baseline)", local);
      // Over GitHub's limit the one file is refused: the double would hold it only to say so.
      const oneFile =
        bytes <= GITHUB_MAX_BLOB_BYTES ? await measure("write-one-file", file, env) : undefined;
      if (oneFile) line("write as one file (before parts)", oneFile);
      else console.log("  write as one file (before parts)   over GitHub's 100 MiB a blob may be");
      if (oneFile?.said === "kept")
        line("read as one file (before parts)", await measure("read-one-file", file, env), local);
      const written = await measure("write", file, env);
      line("write in gzip parts", written, oneFile);
      const { stdout } = await execa("git", [
        "--git-dir",
        server.barePath("acme", "fleet"),
        "ls-tree",
        "-r",
        "-l",
        STATE_BRANCH,
        "last-report/",
      ]);
      const parts = stdout.split("\n").filter((l) => l.includes("part-"));
      const sizes = parts.map((l) => Number(l.trim().split(/\s+/)[3]));
      console.log(
        `  parts: ${parts.length}, ${(sizes.reduce((a, b) => a + b, 0) / MB).toFixed(1)} MB gzipped, largest ${(Math.max(...sizes) / MB).toFixed(1)} MB`,
      );
      line("read from the parts", await measure("read", file, env), local);
    }
  } finally {
    await double.stop();
    await server.stop();
    await rm(work, { recursive: true, force: true });
  }
}

if (process.argv[2] === "child") await child(process.argv[3] as Step, process.argv[4]!);
else await main((process.argv[2] ?? "10000,100000").split(",").map(Number));
