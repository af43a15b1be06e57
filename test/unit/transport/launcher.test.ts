// The process launcher: every probe process starts from one long-lived shell. What it must keep:
// arguments byte for byte, each job's own stdin, the output cap on disk, kills, and nothing left
// in its directory.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { holdLauncher, runProcess } from "../../../src/transport/launcher.js";

const dir = mkdtempSync(path.join(tmpdir(), "qm-launcher-test-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const program = (body: string) => {
  const file = path.join(dir, `p-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
};
const LIMITS = { timeoutMs: 30_000, maxOutputBytes: 1 << 20 };
/** Running, not gone and not a zombie waiting for its parent to reap it. */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

describe("process launcher", () => {
  it("passes every argument byte for byte: quotes, $(…), backticks, ; and globs are data", async () => {
    const args = [
      "it's",
      '"$(touch pwned)"',
      "`id`",
      "a;b",
      "*",
      "$HOME",
      "\\",
      " sp ace ",
      "",
      "é\t",
    ];
    const run = await runProcess(program(`printf '%s\\n' "$@"`), args, "", LIMITS);
    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(
      Buffer.from(run.stdout, "latin1").toString("utf8"),
      args.map((a) => `${a}\n`).join(""),
    );
    assert.ok(!existsSync("pwned"));
  });

  it("gives each process its own input, and keeps concurrent outputs apart", async () => {
    const cat = program("exec cat");
    const inputs = Array.from({ length: 60 }, (_, i) => `${i}:${"x".repeat(i * 997)}\n`);
    const runs = await Promise.all(inputs.map((input) => runProcess(cat, [], input, LIMITS)));
    assert.deepEqual(
      runs.map((r) => r.stdout),
      inputs,
    );
  });

  it("a slot's next job gets only its own input and arguments, shorter ones included", async () => {
    // A job held open keeps the launcher, so the jobs after it take the slot the first one left.
    const holder = runProcess(program("sleep 1"), [], "", LIMITS);
    const echo = program(`printf '%s\\n' "$@"; cat`);
    const long = await runProcess(echo, ["a".repeat(5000), "b", "c"], "y".repeat(70_000), LIMITS);
    const short = await runProcess(echo, ["d"], "z\n", LIMITS);
    assert.equal(long.stdout, `${"a".repeat(5000)}\nb\nc\n${"y".repeat(70_000)}`);
    assert.equal(short.stdout, "d\nz\n");
    assert.equal((await holder).exitCode, 0);
  });

  it("returns the exit status, and stderr apart from stdout", async () => {
    const run = await runProcess(program("echo out; echo err >&2; exit 7"), [], "", LIMITS);
    assert.deepEqual(
      [run.exitCode, run.stdout, run.stderr, run.stopped],
      [7, "out\n", "err\n", undefined],
    );
  });

  it("stops a process at the output cap on disk, before it writes the rest", async () => {
    const done = path.join(dir, "wrote-it-all");
    const run = await runProcess(program(`head -c 50000000 /dev/zero && touch ${done}`), [], "", {
      ...LIMITS,
      maxOutputBytes: 5000,
    });
    assert.equal(run.stopped, "too-large");
    assert.ok(!existsSync(done), "the process went on writing past the cap");
  });

  it("allows output of exactly the cap", async () => {
    const run = await runProcess(program("head -c 5000 /dev/zero"), [], "", {
      ...LIMITS,
      maxOutputBytes: 5000,
    });
    assert.deepEqual([run.exitCode, run.stdout.length, run.stopped], [0, 5000, undefined]);
  });

  it("kills a process at its time limit", async () => {
    const pidFile = path.join(dir, "slow.pid");
    const run = await runProcess(program(`echo $$ > ${pidFile}; exec sleep 3600`), [], "", {
      ...LIMITS,
      timeoutMs: 300,
    });
    assert.equal(run.stopped, "timeout");
    assert.ok(!alive(Number(readFileSync(pidFile, "utf8"))));
  });

  it("says a missing program exited 127 with the shell's words", async () => {
    const run = await runProcess(path.join(dir, "no-such-program"), [], "", LIMITS);
    assert.equal(run.exitCode, 127);
    assert.match(run.stderr, /not found/);
  });

  it("is kept between jobs while a run holds it, and closed when the run lets go of it", async () => {
    // The launcher shell: the parent of the job's subshell, the parent of this program.
    const launcherPid = async () => {
      const run = await runProcess(program('cut -d" " -f4 /proc/$PPID/stat'), [], "", LIMITS);
      assert.equal(run.exitCode, 0, run.stderr);
      return Number(run.stdout);
    };
    // A turn of the event loop between jobs, as a node's parsing takes between sessions.
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const release = holdLauncher();
    const first = await launcherPid();
    await turn();
    assert.equal(await launcherPid(), first, "a held launcher was started again");
    release();
    while (alive(first)) await sleep(20);
    const unheld = await launcherPid();
    assert.notEqual(unheld, first);
    await turn();
    assert.notEqual(await launcherPid(), unheld, "an idle launcher no run holds is kept");
  });

  it("keeps no output of a finished job, no process at exit (all reaped, their CPU counted), and no directory", () => {
    const scratch = mkdtempSync(path.join(dir, "tmp-"));
    const script = [
      `import { runProcess } from ${JSON.stringify(path.resolve("src/transport/launcher.ts"))};`,
      'import { readdirSync, readFileSync, statSync } from "node:fs";',
      'await runProcess("sh", ["-c", "cat; echo e >&2"], "in", { timeoutMs: 30000, maxOutputBytes: 100 });',
      // Node exits once its event loop is empty: the launcher must have ended and been reaped.
      `process.on("exit", () => console.log(readFileSync("/proc/self/task/" + process.pid + "/children", "utf8") || "no children"));`,
      `const own = readdirSync(${JSON.stringify(scratch)}).filter((d) => d.startsWith("quartermaster-"));`,
      `const files = own.flatMap((d) => readdirSync(${JSON.stringify(scratch)} + "/" + d).map((f) => d + "/" + f));`,
      `console.log(files.filter((f) => !f.endsWith(".in") && !f.endsWith(".args") && statSync(${JSON.stringify(scratch)} + "/" + f).size > 0).length);`,
    ].join("\n");
    const during = execFileSync(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      {
        env: { ...process.env, TMPDIR: scratch },
        // A launcher left running would keep the process from ever exiting.
        timeout: 60_000,
        encoding: "utf8",
      },
    );
    assert.equal(during, "0\nno children\n", "output of a finished job, or a process, was left");
    assert.deepEqual(
      readdirSync(scratch).filter((d) => d.startsWith("quartermaster-")),
      [],
    );
  });

  it("without a usable TMPDIR, a job fails in words, not the caller", () => {
    const script = [
      `import { runProcess } from ${JSON.stringify(path.resolve("src/transport/launcher.ts"))};`,
      // A file where the directory should be (root writes any directory); set only now, since
      // tsx keeps its cache there.
      `process.env.TMPDIR = ${JSON.stringify(program(""))};`,
      'const run = await runProcess("true", [], "", { timeoutMs: 30000, maxOutputBytes: 100 });',
      "console.log(JSON.stringify(run));",
    ].join("\n");
    const out = execFileSync(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      {
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    const run = JSON.parse(out) as { exitCode?: number; stderr: string };
    assert.equal(run.exitCode, undefined);
    assert.match(
      run.stderr,
      /^true could not be started: the process launcher has no directory: ENOTDIR/,
    );
  });

  it("a launcher that dies fails its running jobs, kills them, and the next job starts a new one", async () => {
    const pidFile = path.join(dir, "launcher.pid");
    const running = runProcess(
      program(`echo $$ $PPID > ${pidFile}; exec sleep 3600`),
      [],
      "",
      LIMITS,
    );
    // The shell makes the file before it writes the line.
    while (!existsSync(pidFile) || !readFileSync(pidFile, "utf8").endsWith("\n")) await sleep(20);
    // The job's parent is the launcher's subshell, whose parent is the launcher.
    const [job, subshell] = readFileSync(pidFile, "utf8").trim().split(" ");
    const launcher = execFileSync("ps", ["-o", "ppid=", "-p", subshell!], { encoding: "utf8" });
    process.kill(Number(launcher), "SIGKILL");
    const failed = await running;
    assert.deepEqual(
      [failed.exitCode, failed.stderr],
      [undefined, "the process launcher (/bin/sh) stopped"],
    );
    // SIGKILL is sent, not yet delivered, when the job is failed: wait for it to land.
    for (let i = 0; i < 200 && alive(Number(job)); i++) await sleep(50);
    assert.ok(!alive(Number(job)), "the job of a dead launcher was left running");
    const next = await runProcess(program("echo again"), [], "", LIMITS);
    assert.equal(next.stdout, "again\n");
  });
});
