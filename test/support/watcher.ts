import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { Event } from "../../src/report/events.js";
import { BUILT_ENTRY, REPO_ROOT } from "./cli.js";

/** Waits are generous: a slow machine makes the test slower, never red. */
export const EVENT_WAIT_MS = 20_000;

/** A running `quartermaster watch` process: its stdout events (schema-checked) and its stderr. */
export class Watcher {
  readonly events: Event[] = [];
  stderr = "";
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: (() => void)[] = [];

  private constructor(readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      this.events.push(Event.parse(JSON.parse(line)));
      this.notify();
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString("utf8");
      this.notify();
    });
    this.exited = new Promise((resolve) =>
      child.on("exit", (code, signal) => {
        resolve({ code, signal });
        this.notify();
      }),
    );
  }

  /**
   * Starts the real CLI (the bundle in dist/: call `ensureBuilt` first; or the build `cli` names);
   * `prefix` runs it under another command (`ip netns exec NS`).
   */
  static start(
    args: string[],
    prefix: string[] = [],
    cli = [process.execPath, BUILT_ENTRY],
  ): Watcher {
    const command = [...prefix, ...cli, "watch", "--local", ...args];
    return new Watcher(
      spawn(command[0]!, command.slice(1), {
        cwd: REPO_ROOT,
        env: { ...process.env, NO_COLOR: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
  }

  get pid(): number {
    return this.child.pid!;
  }

  /**
   * Resolves with the first event (from index `from` on) that matches; fails after EVENT_WAIT_MS.
   */
  waitFor(what: string, match: (e: Event) => boolean, from = 0): Promise<Event> {
    return this.until(what, () => this.events.slice(from).find(match));
  }

  /** The `host:port` the metrics server reported on stderr. */
  metricsAddress(): Promise<string> {
    return this.until(
      "the metrics address",
      () => /serving \/metrics and \/healthz on (\S+)/.exec(this.stderr)?.[1],
    );
  }

  count(match: (e: Event) => boolean): number {
    return this.events.filter(match).length;
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** SIGTERM, then the exit status. */
  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    return this.exited;
  }

  /** The exit status, once the process has ended by itself or by an earlier signal. */
  exit(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exited;
  }

  private notify(): void {
    for (const waiter of this.waiters) waiter();
  }

  private until<T>(what: string, found: () => T | undefined): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const value = found();
        if (value !== undefined) {
          done();
          resolve(value);
        } else if (this.child.exitCode !== null || this.child.signalCode !== null) {
          done();
          reject(
            new Error(
              `the watcher exited (${this.child.exitCode ?? this.child.signalCode}) before ${what}:\n${this.stderr}`,
            ),
          );
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(
            `no ${what} within ${EVENT_WAIT_MS / 1000}s; events:\n${this.events.map((e) => JSON.stringify(e)).join("\n")}\nstderr:\n${this.stderr}`,
          ),
        );
      }, EVENT_WAIT_MS);
      const done = () => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== check);
      };
      this.waiters.push(check);
      check();
    });
  }
}
