// The auditor alone at fleet scale: N node entries (default 10,000), every one drifted on 3 items,
// audited through a stand-in transport that replays one real probe output of this machine, so no
// ssh cost is measured. Reports wall time, the auditor's CPU per node, peak RSS and report size,
// the same audit with `--format text`, `validate` of the N node files, under tsx and, once
// `npm run build` has made it, as the bundle a user runs, then the peak RSS of `merge-reports` and
// of `propose --dry-run` (reading the report, loading the manifests and planning) on that report.
// Each measured command is its own process under tsx, whose own share of the peak is shown on the
// last line. With `ssh`, the audit through the CLI's own ssh transport and session gates instead
// (standInRuns below), run as the bundle users run once `npm run build` has made it, the gate's
// own cost measured alone, and the auditor's process alone; with `propose`, the audit and the
// propose dry run on its report alone (what 100,000 nodes can afford); with `audit`, the audit, its
// text rendering and validate only: not merge-reports and propose, whose planning at 100,000 nodes
// takes longer than the audit itself. QM_BENCH_BASELINE=DIR runs another checkout's propose dry run
// (its sources under tsx) on the same report too: its peak RSS and CPU, the ratio to them, and
// whether it printed the same bytes. Every figure is shown against issue 34's targets: peak RSS
// <= 300 MB, the auditor's CPU <= 3 ms per node, validate under 2 s. QM_BENCH_SSH_CONFIGS=a,b
// runs only those of `ssh`'s configs (direct, ssh-G-each, jump-host; all by default): at 100,000
// nodes each config is 100,000 stand-in sessions more. QM_BENCH_CPU_PROF=DIR writes a CPU
// profile of each of those audits into DIR.
// With `history`, the audit, then the sizes of the audit and run histories propose keeps on the state
// branch after each of a few runs of its report.
// Usage: [QM_BENCH_BASELINE=DIR] [QM_BENCH_SSH_CONFIGS=direct,...] npx tsx bench/fleet-scale.ts
//        [nodes=10000] [ssh|audit|propose|history]
import { mkdir, mkdtemp, open, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { execa } from "execa";
import { stringify } from "yaml";
import { nodeLimit, shardOf } from "../src/audit/fleet.js";
import { auditNode, defaultAuditSettings } from "../src/audit/node.js";
import { AUDIT_FLAGS, auditOptions } from "../src/cli/audit-options.js";
import { auditOutcome } from "../src/cli/exit.js";
import { parseFlags } from "../src/cli/flags.js";
import { writeReportStream } from "../src/cli/output.js";
import { fleetSshOptions, runSpooledAudit } from "../src/runs/audit.js";
import { boundHeapGrowth } from "../src/cli/heap.js";
import { snapshotSpec } from "../src/runs/snapshot.js";
import { DOMAINS } from "../src/domains/registry.js";
import { DEFAULT_MAX_BLOB_BYTES } from "../src/forge/github-settings.js";
import { loadFleet, type LoadedNode } from "../src/manifest/load.js";
import { stateAfter } from "../src/propose/execute.js";
import { emptyHistory, serializeHistory } from "../src/report/history.js";
import { readReportNodes } from "../src/report/read.js";
import { emptyRuns, serializeRuns } from "../src/report/runs.js";
import { readDated, reportSource } from "../src/runs/propose.js";
import type { Report } from "../src/report/schema.js";
import { summarize } from "../src/report/tally.js";
import { localTransport } from "../src/transport/local.js";
import { sshSessionGates } from "../src/transport/session-gate.js";
import type { Transport } from "../src/transport/transport.js";
import { REPO_ROOT } from "../test/support/cli.js";
import { CPU_HOOK } from "./own-cpu.js";

const TARGET_MB = 300;
const CPU_TARGET_MS = 3;
const VALIDATE_TARGET_S = 2;
const DRIFT_PER_NODE = 3;
const HISTORY_RUNS = 3;
/** Sessions over which the stand-in's own and a bare spawner's cost per session are measured. */
const FLOOR_SESSIONS = 10_000;
const BLOB_LIMIT = 100 * 1024 * 1024;
const SELF = path.join(REPO_ROOT, "bench/fleet-scale.ts");
const CLI = path.join(REPO_ROOT, "src/cli/main.ts");
const BUNDLE = path.join(REPO_ROOT, "dist/cli/main.js");
const BASELINE = process.env.QM_BENCH_BASELINE
  ? path.join(path.resolve(process.env.QM_BENCH_BASELINE), "src/cli/main.ts")
  : undefined;

/** A captured probe output and the nonce it was framed with. */
interface Capture {
  nonce: string;
  stdout: string;
  script: string;
}

function scriptNonce(script: string): string {
  const nonce = /^QM_N=(\S+)$/m.exec(script)?.[1];
  if (nonce === undefined) throw new Error("probe script without QM_N");
  return nonce;
}

/** Replays the capture for any script, re-framed with the nonce the script carries. */
function replayTransport(capture: Capture): Transport {
  const pieces = capture.stdout.split(capture.nonce);
  return {
    describe: () => "replay of one captured probe output",
    run(script, limits) {
      return Promise.resolve({
        stdout: pieces.join(scriptNonce(script)),
        stderr: "",
        durationMs: 0,
        timeoutMs: limits.timeoutMs,
      });
    },
  };
}

// Child mode: `--replay CAPTURE audit ARGS...` runs the audit run (src/runs/audit) with the audit
// flags ARGS on the stand-in transport, its report streamed from the spool as the CLI writes it,
// and prints this process's CPU time in ms.
if (process.argv[2] === "--replay") {
  const capture = JSON.parse(await readFile(process.argv[3]!, "utf8")) as Capture;
  const transport = replayTransport(capture);
  const { config } = parseFlags("audit", process.argv.slice(5), AUDIT_FLAGS);
  boundHeapGrowth("audit");
  const { head, spool, annotate } = await runSpooledAudit(
    {
      ...auditOptions(config),
      unaudited: { maxUnaudited: undefined },
      warn: (_, history) => history,
    },
    { transportFor: () => transport },
  );
  let code: number;
  try {
    await writeReportStream(head, () => spool.entries(annotate), config);
    code = auditOutcome(spool.counts, false);
  } finally {
    spool.close();
  }
  const cpu = process.cpuUsage();
  process.stdout.write(`${JSON.stringify({ code, cpuMs: (cpu.user + cpu.system) / 1000 })}\n`);
  process.exit(0);
}

/** This process's CPU and that of its children waited for (/proc ticks: 10 ms each), in ms. */
async function cpuWithChildrenMs(): Promise<number> {
  const fields = (await readFile("/proc/self/stat", "utf8")).split(") ")[1]!.split(" ");
  // After the command's name: field 3 (state) first, so cutime (16) and cstime (17) are 13 and 14.
  const children = (Number(fields[13]) + Number(fields[14])) * 10;
  const own = process.cpuUsage();
  return (own.user + own.system) / 1000 + children;
}

// Child mode: `--gates MANIFESTS SSH_CONFIG` finds every node's session gate as the audit with
// `--ssh-config SSH_CONFIG` does (the fleet's limiter, `ssh` from PATH) and audits nothing; prints
// the CPU that took, its `ssh -G` children's included, and the gates found.
if (process.argv[2] === "--gates") {
  const fleet = await loadFleet(process.argv[3]!);
  const gates = sshSessionGates(await fleetSshOptions(fleet, process.argv[4]));
  const keys = new Set<string>();
  const limit = nodeLimit(fleet.nodes.length, {
    keyOf: async (node) => {
      const key = await gates.keyOf(node);
      keys.add(key);
      return key;
    },
    limitOf: gates.limitOf,
  });
  const before = await cpuWithChildrenMs();
  await Promise.all(fleet.nodes.map((node) => limit(node, () => Promise.resolve())));
  const cpuMs = (await cpuWithChildrenMs()) - before;
  process.stdout.write(
    `${JSON.stringify({ cpuMs, gates: [...keys].slice(0, 3), count: keys.size })}\n`,
  );
  process.exit(0);
}

// Child mode: `--history REPORT MANIFESTS RUNS` keeps the state files as propose does for RUNS runs
// of the report an hour apart (each read dated from the history before it, then `stateAfter`, a run
// opening nothing) and prints, per run, the bytes of audit-history.json and run-history.json.
if (process.argv[2] === "--history") {
  const [file, manifests, runs] = process.argv.slice(3) as [string, string, string];
  const fleet = new Set((await loadFleet(manifests)).nodes.map((n) => n.name));
  const source = reportSource(file, undefined);
  const { startedAt } = await readReportNodes(file, () => {});
  let state = { history: { ...emptyHistory(), dropped: [] as string[] }, runs: emptyRuns() };
  const sizes: { history: number; runs: number }[] = [];
  for (let run = 0; run < Number(runs); run++) {
    await restart(file, new Date(Date.parse(startedAt) + run * 3_600_000).toISOString());
    const { report } = await readDated(source, state.history);
    const plan = {
      ...state,
      report,
      actions: [],
      pulls: [],
      owners: new Map(),
      waiting: new Map(),
    };
    const next = stateAfter({ ...plan, nodeLists: new Map() }, fleet);
    state = { history: { ...next.history, dropped: [] }, runs: next.runs };
    const bytes = (text: string) => Buffer.byteLength(text);
    sizes.push({
      history: bytes(serializeHistory(next.history)),
      runs: bytes(serializeRuns(next.runs)),
    });
  }
  process.stdout.write(`${JSON.stringify(sizes)}\n`);
  process.exit(0);
}

/** Gives the report file another `startedAt` in place: the same length, so nothing else moves. */
async function restart(file: string, at: string): Promise<void> {
  const handle = await open(file, "r+");
  try {
    const { buffer } = await handle.read(Buffer.alloc(4096), 0, 4096, 0);
    const head = buffer.toString("latin1");
    const old = /"startedAt": ?"([^"]+)"/.exec(head);
    if (!old || old[1]!.length !== at.length) throw new Error(`${file}: no startedAt to move`);
    await handle.write(at, head.indexOf(old[1]!), "latin1");
  } finally {
    await handle.close();
  }
}

const nodeCount = Number(process.argv[2] ?? 10_000);
const sections = process.argv[3] ?? "all";
const mb = (kb: number) => kb / 1024;

/** Runs `node --import tsx ARGS` under /usr/bin/time -v: wall time, peak RSS, stdout. */
async function measured(
  args: string[],
  env: Record<string, string> = {},
  command = [process.execPath, "--import", "tsx"],
): Promise<{ ms: number; peakMb: number; cpuMs: number; stdout: string }> {
  const started = performance.now();
  const result = await execa("/usr/bin/time", ["-v", ...command, ...args], {
    cwd: REPO_ROOT,
    reject: false,
    env: { GITHUB_TOKEN: "", GITHUB_REPOSITORY: "", ...env },
  });
  const ms = performance.now() - started;
  const peakKb = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(result.stderr)?.[1]);
  if (result.exitCode !== 0 && result.exitCode !== 1)
    throw new Error(`${args.join(" ")} exited ${result.exitCode}:\n${result.stderr.slice(-3000)}`);
  const time = (label: string) =>
    Number(new RegExp(`${label} time \\(seconds\\): ([\\d.]+)`).exec(result.stderr)?.[1]);
  const cpuMs = (time("User") + time("System")) * 1000;
  return { ms, peakMb: mb(peakKb), cpuMs, stdout: result.stdout };
}

const work = await mkdtemp(path.join(os.tmpdir(), "qm-fleet-scale-"));
try {
  // Declared state: this machine's live state with a few packages, then three values changed.
  const local = localTransport("localhost");
  const { spec } = await snapshotSpec(local, DOMAINS);
  const installed = Object.keys(
    (spec.packages as { installed_manifest: Record<string, string> }).installed_manifest,
  );
  const system = spec.system as { sysctl_parameters: Record<string, string> };
  const [sysctl] = Object.keys(system.sysctl_parameters);
  if (!sysctl || installed.length < 10) throw new Error("this machine shows too little to drift");
  system.sysctl_parameters[sysctl] = "qm-bench-drift";
  spec.packages = {
    installed_manifest: {
      ...Object.fromEntries(installed.slice(0, 8).map((name) => [name, "*"])),
      [installed[8]!]: "0.0-qm-bench",
      [installed[9]!]: "absent",
    },
  };

  const manifests = path.join(work, "fleet-manifests");
  await mkdir(path.join(manifests, "nodes"), { recursive: true });
  // A marker of the bench's own: one another process leaves at the default path is not this run's.
  const maintenanceMarker = path.join(work, "maintenance");
  await writeFile(
    path.join(manifests, "fleet.yaml"),
    stringify({ ...spec, audit: { maintenance_marker: maintenanceMarker } }),
  );
  const names = Array.from({ length: nodeCount }, (_, i) => `n${String(i).padStart(5, "0")}`);
  for (const name of names) await writeFile(path.join(manifests, "nodes", `${name}.yaml`), "{}\n");
  // propose plans commits on top of the manifests' commit.
  const git = (...args: string[]) => execa("git", args, { cwd: manifests });
  await git("init", "-q");
  await git("add", ".");
  await git(
    "-c",
    "user.name=bench",
    "-c",
    "user.email=bench@example.com",
    "commit",
    "-qm",
    "fleet",
  );

  // One real probe of this machine for the nodes' spec: what every replay returns.
  const first: LoadedNode = (await loadFleet(manifests)).nodes[0]!;
  let capture: Capture | undefined;
  const recording: Transport = {
    describe: local.describe,
    async run(script, limits) {
      const run = await local.run(script, limits);
      capture = { nonce: scriptNonce(script), stdout: run.stdout, script };
      return run;
    },
  };
  const sample = await auditNode(first, recording, defaultAuditSettings({ maintenanceMarker }), {
    policy: {},
    waivers: [],
    tickets: [],
    now: new Date(),
  });
  const captureFile = path.join(work, "capture.json");
  await writeFile(captureFile, JSON.stringify(capture));

  // The audit: the CLI's audit command, its transport the replay.
  const replayAudit = (format: string, out: string) =>
    measured([
      SELF,
      "--replay",
      captureFile,
      "audit",
      "--manifests",
      manifests,
      "--format",
      format,
      "--out",
      out,
    ]);
  const reportFile = path.join(work, "report.json");
  /**
   * The report read back, every node drifted on the same items; latent tickets this machine's
   * boot files give (the replayed probe is its own) come on top, the same on every node.
   */
  const drifted = async (file: string) => {
    const s = (await readReportNodes(file, () => {})).summary;
    if (
      s.nodes !== nodeCount ||
      s.drifted !== nodeCount ||
      s.driftItems < nodeCount * DRIFT_PER_NODE ||
      s.driftItems % nodeCount !== 0
    )
      throw new Error(
        `expected ${nodeCount} nodes drifted on ${DRIFT_PER_NODE} items each: ${JSON.stringify(s)}`,
      );
  };
  /** Wall and CPU time against the validate target. */
  const seconds = (m: { ms: number; cpuMs: number }) =>
    `wall ${(m.ms / 1000).toFixed(2)} s (${(m.ms / 1000 / VALIDATE_TARGET_S).toFixed(2)} of the ${VALIDATE_TARGET_S} s target), CPU ${(m.cpuMs / 1000).toFixed(2)} s (${(m.cpuMs / 1000 / VALIDATE_TARGET_S).toFixed(2)} of it)`;
  const perNode = (ms: number) => `${(ms / nodeCount).toFixed(2)} ms`;
  /** CPU per node against the target. */
  const cpuPerNode = (ms: number) =>
    `${perNode(ms)} (${(ms / nodeCount / CPU_TARGET_MS).toFixed(2)} of the ${CPU_TARGET_MS} ms target)`;
  const peak = (m: { peakMb: number }) =>
    `peak RSS ${m.peakMb.toFixed(0)} MB (${(m.peakMb / TARGET_MB).toFixed(2)} of the ${TARGET_MB} MB target)`;
  /** `propose --dry-run` on the report, and the baseline's when there is one. */
  const proposeLines = async () => {
    const args = ["propose", "--dry-run", "--report", reportFile, "--manifests", manifests];
    const propose = await measured([CLI, ...args]);
    const lines = [
      `  propose        --dry-run on the report: wall ${(propose.ms / 1000).toFixed(2)} s, ${peak(propose)}, CPU ${(propose.cpuMs / 1000).toFixed(2)} s`,
    ];
    if (BASELINE) {
      const base = await measured([BASELINE, ...args]);
      const same = base.stdout === propose.stdout ? "the same stdout" : "a DIFFERENT stdout";
      lines.push(
        `                 baseline ${BASELINE}: ${peak(base)}, CPU ${(base.cpuMs / 1000).toFixed(2)} s; this one ${(propose.peakMb / base.peakMb).toFixed(2)}x its peak RSS and ${(propose.cpuMs / base.cpuMs).toFixed(2)}x its CPU, ${same}`,
      );
    }
    return lines;
  };
  if (sections === "ssh") await standInRuns(capture!, manifests, drifted, cpuPerNode, peak);
  else if (sections === "propose") await proposeRun();
  else if (sections === "history") await historyRun();
  else await wholeRun();

  /** The audit and the propose dry run on its report, nothing else. */
  async function proposeRun() {
    const audit = await replayAudit("json", reportFile);
    await drifted(reportFile);
    const reportBytes = (await stat(reportFile)).size;
    console.log(
      [
        `fleet scale, propose: ${nodeCount} node entries, ${DRIFT_PER_NODE} drift items each, ${os.cpus().length} cores`,
        `  audit          wall ${(audit.ms / 1000).toFixed(2)} s, ${peak(audit)}, report ${(reportBytes / 1024 / 1024).toFixed(1)} MB`,
        ...(await proposeLines()),
      ].join("\n"),
    );
  }

  /** The audit, then the state files propose keeps for HISTORY_RUNS runs of its report. */
  async function historyRun() {
    await replayAudit("json", reportFile);
    await drifted(reportFile);
    const args = [SELF, "--history", reportFile, manifests, String(HISTORY_RUNS)];
    const kept = await measured(args);
    const sizes = JSON.parse(kept.stdout.trim()) as { history: number; runs: number }[];
    const size = (bytes: number) =>
      `${(bytes / 1024 / 1024).toFixed(1)} MiB (${(bytes / nodeCount).toFixed(0)} bytes per node; ${(bytes / BLOB_LIMIT).toFixed(2)} of GitHub's 100 MiB blob, ${(bytes / DEFAULT_MAX_BLOB_BYTES).toFixed(2)} of the 16 MiB part)`;
    console.log(
      [
        `fleet scale, state files: ${nodeCount} nodes, ${DRIFT_PER_NODE} drift items each, ${HISTORY_RUNS} propose runs of the report an hour apart (${peak(kept)}, CPU ${(kept.cpuMs / 1000).toFixed(2)} s)`,
        ...sizes.map(
          (s, i) =>
            `  after run ${i + 1}: audit-history.json ${size(s.history)}\n               run-history.json ${size(s.runs)}`,
        ),
      ].join("\n"),
    );
  }

  /**
   * The in-process audit, its text rendering, validate; then, but for `audit`, merge-reports and
   * propose.
   */
  async function wholeRun() {
    const audit = await replayAudit("json", reportFile);
    const cpuOf = (m: { stdout: string }) =>
      (JSON.parse(m.stdout.trim().split("\n").at(-1)!) as { cpuMs: number }).cpuMs;
    const cpuMs = cpuOf(audit);
    const reportBytes = (await stat(reportFile)).size;
    await drifted(reportFile);
    const report = JSON.parse(await readFile(reportFile, "utf8")) as Report;
    // The human view, written node by node as the spool is read back.
    const text = await replayAudit("text", path.join(work, "report.txt"));
    // Loading the manifests alone (validate), to tell the auditor's CPU from the loader's.
    const validate = await measured([CLI, "validate", "--manifests", manifests]);
    const bundled = await stat(BUNDLE).then(
      () => measured([BUNDLE, "validate", "--manifests", manifests], {}, [process.execPath]),
      () => undefined,
    );
    const idle = await measured([CLI, "--version"]);
    const lines = [
      `fleet scale: ${nodeCount} node entries, ${DRIFT_PER_NODE} drift items each, replaying one probe output of this machine (${sample.probeBytes} bytes), ${os.cpus().length} cores; 1-minute load ${os.loadavg()[0]!.toFixed(1)} at the end`,
      `  audit          wall ${(audit.ms / 1000).toFixed(2)} s, ${peak(audit)}`,
      `                 auditor CPU per node ${cpuPerNode(cpuMs - validate.cpuMs)} beyond loading the manifests; whole process ${perNode(cpuMs)}`,
      `                 report ${(reportBytes / 1024 / 1024).toFixed(1)} MB (${(reportBytes / nodeCount).toFixed(0)} bytes per node)`,
      `  --format text  the same audit written as text: wall ${(text.ms / 1000).toFixed(2)} s, ${peak(text)}, auditor CPU per node ${cpuPerNode(cpuOf(text) - validate.cpuMs)}`,
      `  validate       (loading the manifests alone) ${seconds(validate)}, ${peak(validate)}`,
      bundled
        ? `                 the bundle (dist/cli/main.js, no tsx): ${seconds(bundled)}`
        : "                 the bundle: not built (npm run build), not measured",
      `  (tsx and the CLI's modules alone, quartermaster --version: peak RSS ${idle.peakMb.toFixed(0)} MB)`,
    ];
    if (sections === "audit") {
      console.log(lines.join("\n"));
      return;
    }

    // Two shard reports cut from the report, merged back; then a dry-run propose plan on it.
    const shardFiles = [1, 2].map((index) => path.join(work, `shard-${index}.json`));
    for (const [i, file] of shardFiles.entries()) {
      const nodes = report.nodes.filter((n) => shardOf(n.name, 2) === i + 1);
      await writeFile(
        file,
        JSON.stringify(
          { ...report, shard: { index: i + 1, count: 2 }, nodes, summary: summarize(nodes) },
          null,
          2,
        ),
      );
    }
    const mergedFile = path.join(work, "merged.json");
    const merge = await measured([CLI, "merge-reports", "--out", mergedFile, ...shardFiles]);
    // The same content; the keys of each entry come in the schema's order once read back.
    const mergedSame = isDeepStrictEqual(
      JSON.parse(await readFile(mergedFile, "utf8")),
      JSON.parse(await readFile(reportFile, "utf8")),
    );
    const propose = await proposeLines();

    console.log(
      [
        ...lines.slice(0, -1),
        `  merge-reports  2 shards back into one: wall ${(merge.ms / 1000).toFixed(2)} s, ${peak(merge)}, ${mergedSame ? "the same nodes and summary as the unsharded report" : "DIFFERS from the unsharded report"}`,
        ...propose,
        lines.at(-1)!,
      ].join("\n"),
    );
  }
} finally {
  await rm(work, { recursive: true, force: true });
}

/**
 * The audit through the CLI's own ssh transport and session gates, `ssh` on PATH a stand-in that
 * replays the capture (and hands `ssh -G` to the real ssh, counting each): three ssh_configs,
 * figures per node. Each config's session gates are then found again alone, as the audit finds
 * them and auditing nothing: the gate's own CPU (its `ssh -G` processes included), apart from the
 * rest of the auditor's.
 */
async function standInRuns(
  capture: Capture,
  manifests: string,
  drifted: (file: string) => Promise<void>,
  cpuPerNode: (ms: number) => string,
  peak: (m: { peakMb: number }) => string,
) {
  const bin = path.join(work, "bin");
  await mkdir(bin);
  const realSsh = (await execa("sh", ["-c", "command -v ssh"])).stdout;
  const replayed = path.join(work, "replayed");
  await writeFile(replayed, capture.stdout.split(capture.nonce).join("@QMNONCE@"));
  const resolutions = path.join(work, "ssh-G-runs");
  const standIn = path.join(bin, "ssh");
  await writeFile(
    standIn,
    [
      "#!/bin/sh",
      `[ "$1" = -G ] && { echo >> ${resolutions}; exec ${realSsh} "$@"; }`,
      // A jump host's shared connection: up at once (its LocalCommand's line), held until ended.
      `case " $* " in *" ControlMaster=yes "*) echo up; exec sleep 2147483647;; esac`,
      "n=$(sed -n 's/^QM_N=//p')",
      `exec sed "s/@QMNONCE@/$n/g" ${replayed}`,
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  /** The `ssh -G` runs since the last call. */
  const resolved = async () => {
    const runs = (await readFile(resolutions, "utf8").catch(() => "")).length;
    await rm(resolutions, { force: true });
    return runs;
  };
  const scriptFile = path.join(work, "script");
  await writeFile(scriptFile, capture.script);
  // The stand-in alone, as many sessions as the audit makes, in two loops at once (one a core;
  // 1,000 sessions 16 at a time took no more CPU than one after another), the same script on
  // stdin, in the locale the transport gives ssh (LC_ALL=C): under this machine's C.UTF-8 each
  // session cost about 0.6 ms more (its seds load the locale), and subtracting that flattered the
  // auditor.
  // Both are a cost per session: measured over at most FLOOR_SESSIONS of them, counted for every
  // node (at 100,000 nodes the two passes over every session took longer than the audits).
  // The stand-in's cost grows with the machine's load, which moves over a long run: it is measured
  // before the audits and again after them, and their mean is subtracted.
  const sessions = Math.min(nodeCount, FLOOR_SESSIONS);
  const perNode = (ms: number) => (ms / sessions) * nodeCount;
  const loop = (count: number) =>
    `i=0; while [ $i -lt ${count} ]; do ${standIn} -T -- h sh -s < ${scriptFile} > /dev/null; i=$((i+1)); done`;
  const half = Math.floor(sessions / 2);
  const standInAlone = async () => {
    const load = os.loadavg()[0]!.toFixed(1);
    const { cpuMs } = await measured(
      ["-c", `(${loop(half)}) & ${loop(sessions - half)}; wait`],
      { LC_ALL: "C" },
      ["sh"],
    );
    return {
      perSession: `${(cpuMs / sessions).toFixed(2)} ms at load ${load}`,
      ms: perNode(cpuMs),
    };
  };
  const aloneBefore = await standInAlone();
  // The same sessions started from a bare Node process as the transport starts them (three
  // pipes, the script written to stdin, 32 at a time, the audit's default), doing nothing else:
  // what one child process costs a Node process here, which no auditor that starts ssh from Node
  // goes below. Beyond the stand-in alone, like the audit's figure.
  const spawner = path.join(work, "spawner.mjs");
  await writeFile(
    spawner,
    [
      'import { spawn } from "node:child_process";',
      'import { readFileSync } from "node:fs";',
      "const [file, scriptFile, count] = process.argv.slice(2);",
      'const script = readFileSync(scriptFile, "utf8");',
      "let started = 0;",
      "const one = () => new Promise((resolve) => {",
      '  const child = spawn(file, ["-T", "--", "h", "sh", "-s"], { env: { ...process.env, LC_ALL: "C" } });',
      "  let out = '';",
      '  for (const s of [child.stdout, child.stderr]) { s.setEncoding("latin1"); s.on("data", (c) => { out += c; }); }',
      '  child.on("close", resolve);',
      "  child.stdin.end(script);",
      "});",
      "const worker = async () => { while (started < Number(count)) { started++; await one(); } };",
      "await Promise.all(Array.from({ length: 32 }, worker));",
      "",
    ].join("\n"),
  );
  const floor = await measured([spawner, standIn, scriptFile, String(sessions)], {}, [
    process.execPath,
  ]);
  const configs = {
    direct: { name: "direct", text: "Host *\n  ServerAliveInterval 30\n" },
    "ssh-G-each": { name: "ssh -G each", text: "Match all\n  ServerAliveInterval 30\n" },
    "jump-host": { name: "one jump host", text: "Host *\n  ProxyJump bastion\n" },
  };
  type ConfigId = keyof typeof configs;
  const chosen = (process.env.QM_BENCH_SSH_CONFIGS?.split(",") ?? Object.keys(configs)).map(
    (id) => {
      if (!(id in configs)) throw new Error(`QM_BENCH_SSH_CONFIGS: no config ${id}`);
      return id as ConfigId;
    },
  );
  const env = { PATH: `${bin}:${process.env.PATH}` };
  // The audit as users run it, the bundle, when `npm run build` has made it: under tsx the
  // auditor's process is larger, and each fork for an ssh copies more of it.
  const bundled = await stat(BUNDLE).then(
    () => true,
    () => false,
  );
  const audited = bundled
    ? "the bundle (dist/cli/main.js)"
    : "the sources under tsx (no bundle built)";
  // QM_BENCH_CPU_PROF=DIR: a CPU profile of each audit there (its figures are then the profiler's).
  const profile = process.env.QM_BENCH_CPU_PROF;
  const profiled = profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`] : [];
  // The auditor's process alone too (process.cpuUsage at its exit: no child, so nothing of the
  // stand-in's to subtract), a figure the machine's load moves less.
  const processCpuFile = path.join(work, "process-cpu");
  const hooked = [...profiled, "--import", CPU_HOOK];
  const auditRun = async (args: string[]) => {
    const cpuEnv = { ...env, QM_BENCH_CPU_FILE: processCpuFile };
    const run = bundled
      ? await measured([BUNDLE, ...args], cpuEnv, [process.execPath, ...hooked])
      : await measured([CLI, ...args], cpuEnv, [process.execPath, ...hooked, "--import", "tsx"]);
    return { ...run, processMs: Number(await readFile(processCpuFile, "utf8")) };
  };
  const audits: {
    id: ConfigId;
    run: Awaited<ReturnType<typeof auditRun>>;
    auditRuns: number;
    gate: { cpuMs: number; gates: string[]; count: number };
    gateRuns: number;
  }[] = [];
  for (const id of chosen) {
    const { text } = configs[id];
    const config = path.join(work, `ssh_config-${id}`);
    await writeFile(config, text);
    const out = path.join(work, "report-ssh.json");
    const args = ["audit", "--manifests", manifests, "--ssh-config", config, "--out", out];
    await resolved();
    const run = await auditRun([...args, "--format", "json"]);
    const auditRuns = await resolved();
    await drifted(out);
    const gates = await measured([SELF, "--gates", manifests, config], env);
    const gate = JSON.parse(gates.stdout.trim()) as {
      cpuMs: number;
      gates: string[];
      count: number;
    };
    audits.push({ id, run, auditRuns, gate, gateRuns: await resolved() });
  }
  const aloneAfter = await standInAlone();
  const aloneMs = (aloneBefore.ms + aloneAfter.ms) / 2;
  const runs: Partial<Record<ConfigId, { own: number; lines: (extra: string) => string }>> = {};
  for (const { id, run, auditRuns, gate, gateRuns } of audits) {
    const own = run.cpuMs - aloneMs;
    const found = `${gate.count} gate${gate.count === 1 ? "" : "s"} (${gate.gates.join(", ")}${gate.count > gate.gates.length ? ", …" : ""})`;
    runs[id] = {
      own,
      lines: (extra) =>
        [
          `  ${configs[id].name.padEnd(14)} wall ${(run.ms / 1000).toFixed(2)} s, ${peak(run)}, ${auditRuns} ssh -G; auditor CPU per node ${cpuPerNode(own)}${extra}`,
          `                 the session gate alone (${gateRuns} ssh -G, ${found}) ${cpuPerNode(gate.cpuMs)}; the auditor beyond it ${cpuPerNode(own - gate.cpuMs)}`,
          `                 the auditor's process alone (no child: nothing subtracted) ${cpuPerNode(run.processMs)}`,
        ].join("\n"),
    };
  }
  const { direct, "ssh-G-each": baseline, "jump-host": jump } = runs;
  const ratio = (run: typeof direct, where: string) =>
    run && baseline ? `, ${(run.own / baseline.own).toFixed(2)}x the baseline ${where}` : "";
  console.log(
    [
      `fleet scale behind a stand-in ssh: ${nodeCount} nodes, ${DRIFT_PER_NODE} drift items each, ${os.cpus().length} cores; the stand-in alone per session (over ${sessions} sessions) ${aloneBefore.perSession} before the audits, ${aloneAfter.perSession} after, their mean subtracted; audited by ${audited}; 1-minute load ${os.loadavg()[0]!.toFixed(1)} at the end`,
      `  spawn floor    the same sessions from a bare Node process that only starts them (${sessions} of them): ${cpuPerNode(perNode(floor.cpuMs) - aloneMs)} beyond the stand-in, peak RSS ${floor.peakMb.toFixed(0)} MB`,
      direct?.lines(ratio(direct, "below")),
      baseline?.lines(" (the baseline: the session gate as before, ssh -G per node)"),
      jump?.lines(ratio(jump, "above")),
    ]
      .filter((line) => line !== undefined)
      .join("\n"),
  );
}
