// A burst of 10,000 writes to a declared file under `watch --local`, then the file restored:
// the events emitted (expect one drift, one resolved), the watcher's CPU time and peak RSS,
// against a baseline measured in the same run: the CPU of one full `audit --local` of the same
// manifest. Run: npx tsx bench/watch-burst.ts
import { execFileSync, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile, mkdir, chmod } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { Event } from "../src/report/events.js";

const WRITES = 10_000;
const DECLARED_FILES = 20;
const WAIT_MS = 60_000;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CLI = [process.execPath, "--import", "tsx", path.join(ROOT, "src/cli/main.ts")];
const TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

/** CPU seconds of a process, including the children it has waited for (the probe shells). */
async function cpuSeconds(pid: number | "self"): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  // Fields after the parenthesised command name: utime is the 14th field, cstime the 17th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0) / TICKS_PER_SECOND;
}

async function peakRssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)![1]) / 1024;
}

async function until<T>(
  what: string,
  found: () => T | undefined | Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await found();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`no ${what} within ${WAIT_MS / 1000}s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const dir = await mkdtemp(path.join(os.tmpdir(), "qm-bench-watch-"));
try {
  const files = Array.from({ length: DECLARED_FILES }, (_, i) =>
    path.join(dir, "etc", `app-${i}.conf`),
  );
  await mkdir(path.join(dir, "etc"));
  for (const file of files) {
    await writeFile(file, "declared\n");
    await chmod(file, 0o644);
  }
  const spec = {
    files: files.map((file) => ({ path: file, contents: "declared\n", mode: "0644" })),
  };
  await writeFile(path.join(dir, "node-spec.yaml"), stringify(spec));
  await mkdir(path.join(dir, "fleet/nodes"), { recursive: true });
  await writeFile(path.join(dir, "fleet/nodes/localhost.yaml"), stringify(spec));

  // Baseline: one full audit of the same manifest, its CPU read from the shell that waited for it.
  const shellStat = execFileSync(
    "sh",
    [
      "-c",
      `"$@" >/dev/null; cat /proc/$$/stat`,
      "sh",
      ...CLI,
      "audit",
      "--local",
      "--manifests",
      path.join(dir, "fleet"),
      "--nodes",
      "localhost",
      "--format",
      "json",
    ],
    { encoding: "utf8" },
  );
  const shellFields = shellStat.slice(shellStat.lastIndexOf(")") + 2).split(" ");
  const auditCpu = (Number(shellFields[13]) + Number(shellFields[14])) / TICKS_PER_SECOND;

  const marker = path.join(dir, "maintenance");
  const child = spawn(
    CLI[0]!,
    [
      ...CLI.slice(1),
      "watch",
      "--local",
      "--manifest",
      path.join(dir, "node-spec.yaml"),
      "--maintenance-marker",
      marker,
      "--metrics-listen",
      "127.0.0.1:0",
    ],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const events: Event[] = [];
  let stderr = "";
  createInterface({ input: child.stdout }).on("line", (line) =>
    events.push(Event.parse(JSON.parse(line))),
  );
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const pid = child.pid!;

  const address = await until(
    "metrics address",
    () => /serving \/metrics and \/healthz on (\S+)/.exec(stderr)?.[1],
  );
  await until("the first check", async () => {
    const text = await (await fetch(`http://${address}/metrics`)).text();
    return /quartermaster_watch_last_check_timestamp_seconds\{[^}]*\} [1-9]/.test(text)
      ? true
      : undefined;
  });
  const startupCpu = await cpuSeconds(pid);

  const burstStarted = performance.now();
  const target = files[0]!;
  for (let i = 0; i < WRITES; i++) await writeFile(target, "drifted\n");
  const burstMs = performance.now() - burstStarted;
  await until("the drift event", () => events.find((e) => e.event === "drift"));
  await writeFile(target, "declared\n");
  await until("the resolved event", () => events.find((e) => e.event === "resolved"));
  const burstCpu = (await cpuSeconds(pid)) - startupCpu;
  const peak = await peakRssMiB(pid);

  child.kill("SIGTERM");
  await new Promise((resolve) => child.on("exit", resolve));

  const count = (kind: Event["event"]) => events.filter((e) => e.event === kind).length;
  const rows: [string, string][] = [
    [
      "declared files / writes in the burst",
      `${DECLARED_FILES} / ${WRITES} (to one file, in ${(burstMs / 1000).toFixed(2)} s)`,
    ],
    [
      "events emitted",
      `started ${count("started")}, drift ${count("drift")}, resolved ${count("resolved")}, node_error ${count("node_error")}, stopped ${count("stopped")}`,
    ],
    ["watcher CPU, start-up and first check", `${startupCpu.toFixed(2)} s`],
    ["watcher CPU, burst through resolve", `${burstCpu.toFixed(2)} s`],
    ["watcher peak RSS (VmHWM)", `${peak.toFixed(1)} MiB`],
    ["baseline: CPU of one full `audit --local`", `${auditCpu.toFixed(2)} s`],
    ["burst CPU / one audit", `${(burstCpu / auditCpu).toFixed(2)}x`],
  ];
  for (const [label, value] of rows) process.stdout.write(`${label.padEnd(42)} ${value}\n`);
  if (count("drift") !== 1 || count("resolved") !== 1) process.exitCode = 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
