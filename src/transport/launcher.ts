import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import {
  closeSync,
  constants,
  ftruncate,
  ftruncateSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

export interface RunLimits {
  timeoutMs: number;
  maxOutputBytes: number;
}

export interface Finished {
  /** Unset when the process could not be started at all. */
  exitCode?: number;
  /** Decoded one byte per character (latin1): a string's length is its byte count. */
  stdout: string;
  stderr: string;
  /** Why the process was killed, if it was. */
  stopped?: "timeout" | "too-large";
}

/**
 * The launcher: one long-lived POSIX shell that starts every probe process of the run. Node forks
 * its whole process for each child it spawns (libuv has no posix_spawn), and the fork's cost grows
 * with the auditor's memory: at 100,000 nodes most of the auditor's CPU went to copying itself for
 * each ssh. A shell of a megabyte forks in a fraction of that.
 *
 * Each request is a line with a slot's id; the slot's `args` file holds the job's output cap and
 * its command, every word single-quoted by `quoteWord`, so no byte of an argument is ever read as
 * shell syntax (and the shell, which reads a line a byte at a time, reads a short one). A job of
 * its own (a subshell) runs the command with stdin, stdout and stderr on the slot's files in a
 * private directory, the outputs capped by `ulimit -f` (512-byte blocks in every POSIX shell, so a
 * host cannot fill the disk), reports the command's pid (`p ID PID`) and, when it ends, its exit
 * status (`d ID STATUS`). Lines shorter than PIPE_BUF are written whole, so jobs' reports never
 * mix. An args file the job cannot read (removed under it) ends the job with status 126 and the
 * shell's words on its stderr, never a job that reports nothing. Core dumps are off: SIGXFSZ dumps.
 * The files are a slot's, reused by the next job and emptied when read: a file made and removed
 * per job cost ext4 more in inode allocation than the fork saved. Before a slot's next job the
 * shell waits for its last one (`w<slot>`: it has reported its end; slots are numbers): a shell keeps every
 * background job it never waited for in a table that each fork copies or walks, so a run of N
 * jobs cost O(N^2) (dash at 32,000 jobs: 0.44 ms of CPU per job, 0.07 ms with the wait; bash far
 * more), and the table now holds a job per slot.
 */
const LAUNCHER = `ulimit -c 0
d=$1
while IFS= read -r id; do
  eval "w=\\\${w$id-}"
  [ -z "$w" ] || wait "$w"
  {
    command . "$d/$id.args" 2>"$d/$id.err" || { echo "d $id 126"; exit; }
    "$@" <"$d/$id.in" >"$d/$id.out" 2>"$d/$id.err" &
    echo "p $id $!"
    wait "$!"
    echo "d $id $?"
  } &
  eval "w$id=\\$!"
done
wait`;

/** A word the shell reads back byte for byte: single quotes hold everything but `'` itself. */
const quoteWord = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

interface Job {
  limits: RunLimits;
  pid?: number;
  stopped?: Finished["stopped"];
  timer: NodeJS.Timeout;
  done: (finished: Finished) => void;
}

class Launcher {
  readonly dir = mkdtempSync(path.join(tmpdir(), "quartermaster-"));
  private readonly shell: ChildProcessWithoutNullStreams;
  private readonly jobs = new Map<string, Job>();
  /** Slots whose files a finished job left (emptied) for the next: ids are slots, reused. */
  private readonly freeSlots: string[] = [];
  /** Slots made so far: a slot being emptied is neither running nor free. */
  private slots = 0;
  private pending = "";
  /** What each slot's input and arguments files hold, in bytes, as last written whole. */
  private readonly lengths = new Map<string, number>();
  private dead = false;
  /** Its input is ended: it takes no more jobs. */
  closing = false;

  constructor(onExit: () => void) {
    this.shell = spawn("/bin/sh", ["-c", LAUNCHER, "quartermaster-launcher", this.dir], {
      env: { ...process.env, LC_ALL: "C" },
    });
    this.shell.stdout.setEncoding("latin1");
    this.shell.stdout.on("data", (chunk: string) => this.read(chunk));
    this.shell.stderr.resume();
    this.shell.stdin.on("error", () => {});
    this.shell.on("error", () => {});
    // "exit", not "close": its jobs' subshells hold its stdout open.
    this.shell.on("exit", () => {
      this.dead = true;
      onExit();
      for (const [id, job] of [...this.jobs]) {
        // Nothing would reap or report it now: no session is left behind. Its files went with the
        // launcher's directory.
        if (job.pid) this.kill(job);
        this.finish(id, { stdout: "", stderr: "the process launcher (/bin/sh) stopped" });
      }
    });
  }

  run(file: string, args: readonly string[], input: string, limits: RunLimits) {
    return new Promise<Finished>((resolve) => {
      const words = [file, ...args];
      // A line break would end the `set --` line: no argument ssh takes holds one.
      if (this.dead || this.closing || words.some((word) => /[\n\0]/.test(word))) {
        resolve({ stdout: "", stderr: `${file} could not be started` });
        return;
      }
      const id = this.freeSlots.pop() ?? String(this.slots++);
      const blocks = Math.floor(limits.maxOutputBytes / 512) + 1;
      try {
        this.overwrite(this.file(id, "in"), input);
        this.overwrite(
          this.file(id, "args"),
          `ulimit -f ${blocks}\nset -- ${words.map(quoteWord).join(" ")}\n`,
        );
      } catch (error) {
        // A full or read-only TMPDIR fails the job, in words, never the run.
        this.freeSlots.push(id);
        resolve({ stdout: "", stderr: `${file} could not be started: ${errorText(error)}` });
        return;
      }
      const timer = setTimeout(() => this.stop(id, "timeout"), limits.timeoutMs);
      this.jobs.set(id, { limits, timer, done: resolve });
      this.shell.stdin.write(`${id}\n`);
    });
  }

  /**
   * A slot's input rewritten in place, cut to its new length: emptying a file and filling it again
   * cost ext4 a block release and allocation each time, about 70 µs of CPU a file here against 11
   * µs for writing over the blocks it has. The cut is made only where the file held more (a slot's
   * probes are mostly the same length): the truncation is a system call ext4 journals. A file whose
   * length is not known (new, or a write that failed) is cut.
   */
  private overwrite(file: string, data: string) {
    const bytes = Buffer.from(data);
    const before = this.lengths.get(file);
    this.lengths.delete(file);
    const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT, 0o600);
    try {
      writeFileSync(fd, bytes);
      if (before === undefined || before > bytes.length) ftruncateSync(fd, bytes.length);
      this.lengths.set(file, bytes.length);
    } finally {
      closeSync(fd);
    }
  }

  private file(id: string, stream: "args" | "in" | "out" | "err") {
    return path.join(this.dir, `${id}.${stream}`);
  }

  private read(chunk: string) {
    this.pending += chunk;
    let end: number;
    while ((end = this.pending.indexOf("\n")) >= 0) {
      const [what, id, value] = this.pending.slice(0, end).split(" ");
      this.pending = this.pending.slice(end + 1);
      const job = this.jobs.get(id!);
      if (!job) continue;
      if (what === "p") {
        job.pid = Number(value);
        if (job.stopped) this.kill(job);
      } else if (what === "d") {
        this.collect(id!, job, Number(value));
      }
    }
  }

  private collect(id: string, job: Job, status: number) {
    const out = this.take(id, "out");
    const err = this.take(id, "err");
    const max = job.limits.maxOutputBytes;
    if (!job.stopped && (out.text.length > max || err.text.length > max)) job.stopped = "too-large";
    this.finish(
      id,
      {
        exitCode: status,
        stdout: job.stopped === "too-large" ? "" : out.text,
        stderr: job.stopped === "too-large" ? "" : err.text,
      },
      Promise.all([out.emptied, err.emptied]),
    );
  }

  /**
   * A finished job's output: the file's text, and the file emptied (what the host printed is not
   * kept beyond its job) off the event loop's thread: under a loaded disk each truncation of a file
   * with data blocked the loop for milliseconds on ext4's journal. One ftruncate of the descriptor
   * the text was read through, on the thread pool, and none for an empty file: a truncate by name
   * cost an open, an ftruncate and a close there, each a round trip, and a FileHandle. A file never
   * made is no error.
   */
  private take(id: string, stream: "out" | "err"): { text: string; emptied: Promise<void> } {
    let fd: number;
    try {
      fd = openSync(this.file(id, stream), "r+");
    } catch {
      return { text: "", emptied: Promise.resolve() };
    }
    let text: string;
    try {
      text = readFileSync(fd, "latin1");
    } catch {
      text = "";
    }
    if (text === "") {
      closeSync(fd);
      return { text, emptied: Promise.resolve() };
    }
    return {
      text,
      emptied: new Promise((resolve) =>
        ftruncate(fd, 0, () => {
          closeSync(fd);
          resolve();
        }),
      ),
    };
  }

  /** The job's end, told once the slot's files are emptied (`emptied`): the next job takes the slot. */
  private finish(id: string, finished: Finished, emptied: Promise<unknown> = Promise.resolve()) {
    const job = this.jobs.get(id)!;
    this.jobs.delete(id);
    if (this.jobs.size === 0) setImmediate(() => this.closeIfIdle());
    clearTimeout(job.timer);
    void emptied.then(() => {
      this.freeSlots.push(id);
      job.done({ ...finished, ...(job.stopped && { stopped: job.stopped }) });
    });
  }

  /**
   * An idle launcher is closed, its jobs' ends waited for, and it is reaped by Node: no process of
   * the run outlives it, and all their CPU counts as the run's. A job starting in the same turn of
   * the event loop keeps it, and so does a run that holds it (`holdLauncher`).
   */
  closeIfIdle() {
    if (this.jobs.size > 0 || this.closing || holds > 0) return;
    this.closing = true;
    this.shell.stdin.end();
  }

  private stop(id: string, reason: NonNullable<Finished["stopped"]>) {
    const job = this.jobs.get(id);
    if (!job || job.stopped) return;
    job.stopped = reason;
    if (job.pid) this.kill(job);
  }

  /** Its pid is the job's until the job reports the end (`d`), which has not come yet. */
  private kill(job: Job) {
    try {
      process.kill(job.pid!, "SIGKILL");
    } catch {
      // Already gone: its `d` line is on the way.
    }
  }
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

let launcher: Launcher | undefined;
/** Runs that keep an idle launcher for their next job (`holdLauncher`). */
let holds = 0;
/** The directories of launchers not yet ended, removed should Node exit before they end. */
const liveDirs = new Set<string>();
let exitHooked = false;
const removeDir = (dir: string) => {
  liveDirs.delete(dir);
  rmSync(dir, { recursive: true, force: true });
};

/**
 * Keeps the launcher while a run goes on, idle or not, until the returned function is called:
 * every node's session of a fleet run is a job, and when the auditor parses output more slowly
 * than the hosts answer, all of them can finish before the next starts. A launcher closed then was
 * started again for the next session, a fork of the whole auditor each time (libuv forks to
 * spawn): at 10,000 nodes direct, a restart every few nodes.
 */
export function holdLauncher(): () => void {
  holds++;
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    holds--;
    launcher?.closeIfIdle();
  };
}

/**
 * One child process: `input` on its stdin, stdout and stderr collected up to `maxOutputBytes`
 * each. Past the cap (`stopped: "too-large"`) or the time limit (`"timeout"`) it is killed with
 * SIGKILL; a grandchild left behind never keeps the caller waiting, since only the process itself
 * is waited for. The exit status is the shell's: 128 plus the signal for a killed process.
 */
export function runProcess(
  file: string,
  args: readonly string[],
  input: string,
  limits: RunLimits,
): Promise<Finished> {
  if (!launcher || launcher.closing) {
    let started: Launcher;
    try {
      started = new Launcher(() => {
        if (launcher === started) launcher = undefined;
        removeDir(started.dir);
      });
    } catch (error) {
      // No private directory (TMPDIR missing, full or read-only): the job fails in words.
      return Promise.resolve({
        stdout: "",
        stderr: `${file} could not be started: the process launcher has no directory: ${errorText(error)}`,
      });
    }
    if (!exitHooked) process.once("exit", () => liveDirs.forEach(removeDir));
    exitHooked = true;
    liveDirs.add(started.dir);
    launcher = started;
  }
  return launcher.run(file, args, input, limits);
}
