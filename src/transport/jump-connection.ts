import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { runProcess } from "./launcher.js";
import { sshFailureWords } from "./ssh-failure.js";

/** One jump of a ProxyJump list: what ssh's own ProxyJump hands the ssh it starts for it. */
export interface Jump {
  user?: string;
  host: string;
  port?: number;
}

// One jump as ssh -G prints it or a manifest writes it: `[ssh://][user@]host[:port]`, the host
// bracketed when it is an address. Nothing outside these characters reaches a command line.
const JUMP =
  /^(?:ssh:\/\/)?(?:([A-Za-z0-9_][A-Za-z0-9_.%-]*)@)?(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9_][A-Za-z0-9_.%-]*))(?::(\d{1,5}))?$/;

/** A ProxyJump list as jumps, or undefined when one of them is not read here. */
export function parseJumps(list: string): Jump[] | undefined {
  const jumps: Jump[] = [];
  for (const text of list.split(",")) {
    const match = JUMP.exec(text);
    if (!match || (match[4] !== undefined && !(Number(match[4]) >= 1 && Number(match[4]) <= 65535)))
      return undefined;
    jumps.push({
      ...(match[1] !== undefined && { user: match[1] }),
      host: match[2] ?? match[3]!,
      ...(match[4] !== undefined && { port: Number(match[4]) }),
    });
  }
  return jumps;
}

/** A word the shell reads back byte for byte. */
const shellWord = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

/** The options ssh's own ProxyJump gives the ssh it starts for a jump: `-l` and `-p`. */
const jumpArgs = (jump: Jump) => [
  ...(jump.user === undefined ? [] : ["-l", jump.user]),
  ...(jump.port === undefined ? [] : ["-p", String(jump.port)]),
];

/**
 * The ProxyCommand that reaches a node through `jumps` as ssh's ProxyJump does (each jump an ssh
 * that forwards its stdio to the next: `-W '[%h]:%p'`), the first jump a channel of the connection
 * at `controlPath`. ssh runs it with the shell after expanding its `%` tokens; each level down is
 * expanded once more, so a word is `%`-escaped once per level it is nested in.
 */
export function channelProxyCommand(
  ssh: string,
  configFile: string | undefined,
  controlPath: string,
  jumps: readonly Jump[],
): string {
  const escape = (text: string) => text.replaceAll("%", "%%");
  const words = (list: string[]) => list.map((word) => shellWord(escape(word))).join(" ");
  const config = configFile === undefined ? [] : ["-F", configFile];
  let command = "";
  for (const [index, jump] of jumps.entries()) {
    const through =
      index === 0
        ? words([...config, "-S", controlPath, "-o", "ControlMaster=no", ...jumpArgs(jump)])
        : `${words([...config, ...jumpArgs(jump)])} -o ${shellWord(`ProxyCommand=${escape(command)}`)}`;
    command = `${shellWord(escape(ssh))} ${through} -W '[%h]:%p' -- ${shellWord(escape(jump.host))}`;
  }
  return command;
}

/**
 * Runs `ssh` (the arguments) until its stdin, a pipe from the auditor, ends: closed by the run or
 * by the auditor's exit, however it exits. The shell reads the pipe on a descriptor of its own (an
 * asynchronous command's stdin is /dev/null) and ends ssh with SIGTERM, on which ssh removes its
 * control socket.
 */
const LIFELINE = `exec 3<&0
"$@" </dev/null &
ssh=$!
{ read -r _ <&3; kill "$ssh"; } 2>/dev/null &
reader=$!
wait "$ssh"
status=$?
kill "$reader" 2>/dev/null
exit "$status"`;

type Say = (text: string) => void;

/** One jump host's shared connection, as far as the run knows it. */
interface Master {
  /** Whether nodes reach it through channels of the one connection; settled once it opened. */
  shared: Promise<boolean>;
  /** Set once the connection is up, and unset again when it ends or is given up. */
  up: boolean;
  controlPath: string;
  child?: ChildProcessWithoutNullStreams;
  /** Resolves when the connection's process has ended. */
  ended?: Promise<void>;
  /** Ended by the run because the jump host refuses what it is for. */
  gaveUp?: boolean;
}

export interface JumpConnectionOptions {
  configFile?: string;
  sshBinary?: string;
  connectTimeoutSeconds: number;
  /** Told, once per jump host, when its nodes connect one by one after all, and why. */
  say?: Say;
}

/**
 * One authenticated connection per jump host for the run: ssh's own multiplexing (a master whose
 * control socket is in a directory only this user can open), each node a forwarding channel of it
 * (`-W`), so a jump host sees one key exchange and one login however many nodes it leads to. A
 * jump whose ssh configuration multiplexes already, whose master cannot open, that refuses
 * forwarding channels or whose master ends mid-run leaves its nodes to connect one by one (ssh's
 * own ProxyJump), said once.
 */
export class JumpConnections {
  private readonly masters = new Map<string, Master>();
  private dir: string | undefined;
  private closed = false;
  private readonly exitHook = () => this.removeDir();

  constructor(private readonly options: JumpConnectionOptions) {}

  /**
   * The ProxyCommand that takes a node through its jumps, the first one a channel of the shared
   * connection, opened on first use; undefined when the node connects on its own.
   */
  async proxyCommand(jumpList: string): Promise<string | undefined> {
    const jumps = parseJumps(jumpList);
    if (!jumps) return undefined;
    const master = this.master(jumps[0]!);
    if (!(await master.shared) || !master.up) return undefined;
    return channelProxyCommand(
      this.options.sshBinary ?? "ssh",
      this.options.configFile,
      master.controlPath,
      jumps,
    );
  }

  /**
   * Whether the shared connection of this list's first jump has ended (its socket answers no
   * more): a session that failed through it says nothing of the node.
   */
  async lost(jumpList: string): Promise<boolean> {
    const first = parseJumps(jumpList)?.[0];
    const master = first && this.masters.get(JSON.stringify(first));
    if (!master || !(await master.shared)) return false;
    if (!master.up) return true;
    const config = this.options.configFile === undefined ? [] : ["-F", this.options.configFile];
    const check = await runProcess(
      this.options.sshBinary ?? "ssh",
      [...config, "-S", master.controlPath, "-O", "check", ...jumpArgs(first), "--", first.host],
      "",
      { timeoutMs: 10_000, maxOutputBytes: 1 << 16 },
    );
    return check.exitCode !== 0;
  }

  /**
   * A node's own connection through this jump list was refused a forwarding channel (`words`, as
   * its ssh said it): so were the shared connection's, whose master hears no reason. It is ended.
   */
  refusesForwarding(jumpList: string, words: string): void {
    const first = parseJumps(jumpList)?.[0];
    const master = first && this.masters.get(JSON.stringify(first));
    if (!first || !master?.up) return;
    master.up = false;
    master.gaveUp = true;
    this.say(first, `it refuses forwarding channels (${words})`);
    master.child?.stdin.end();
  }

  /** Whether the first jump of this list is reached through a connection that is up. */
  sharedNow(jumpList: string): boolean {
    const first = parseJumps(jumpList)?.[0];
    return first !== undefined && this.masters.get(JSON.stringify(first))?.up === true;
  }

  private master(jump: Jump): Master {
    const key = JSON.stringify(jump);
    let master = this.masters.get(key);
    if (master) return master;
    const controlPath = path.join(this.socketDir(), String(this.masters.size));
    master = { shared: Promise.resolve(false), up: false, controlPath };
    this.masters.set(key, master);
    if (!this.closed) master.shared = this.open(master, jump);
    return master;
  }

  private socketDir(): string {
    if (!this.dir) {
      // mkdtemp makes it 0700: only this user can reach the sockets in it.
      this.dir = mkdtempSync(path.join(tmpdir(), "qm-jump-"));
      process.once("exit", this.exitHook);
    }
    return this.dir;
  }

  private jumpName = (jump: Jump) =>
    `${jump.user === undefined ? "" : `${jump.user}@`}${jump.host}${jump.port === undefined ? "" : `:${jump.port}`}`;

  private say(jump: Jump, why: string) {
    this.options.say?.(`jump host ${this.jumpName(jump)}: ${why}; its nodes connect one by one`);
  }

  private async open(master: Master, jump: Jump): Promise<boolean> {
    const ssh = this.options.sshBinary ?? "ssh";
    const config = this.options.configFile === undefined ? [] : ["-F", this.options.configFile];
    const target = [...jumpArgs(jump), "--", jump.host];
    const resolved = await runProcess(ssh, [...config, "-G", ...target], "", {
      timeoutMs: 10_000,
      maxOutputBytes: 1 << 20,
    });
    if (/^controlmaster (?!false)|^controlpath /m.test(resolved.stdout)) {
      this.say(jump, "the ssh configuration multiplexes its connections itself");
      return false;
    }
    if (this.closed) return false;
    const child = spawn(
      "/bin/sh",
      [
        "-c",
        LIFELINE,
        "quartermaster-jump",
        ssh,
        ...config,
        "-N",
        "-T",
        "-o",
        "BatchMode=yes",
        "-o",
        "LogLevel=ERROR",
        "-o",
        `ConnectTimeout=${this.options.connectTimeoutSeconds}`,
        "-o",
        "ControlMaster=yes",
        "-o",
        "ControlPersist=no",
        "-o",
        `ControlPath=${master.controlPath}`,
        // Run once the control socket listens: the line on stdout says the connection is up.
        "-o",
        "PermitLocalCommand=yes",
        "-o",
        "LocalCommand=echo up",
        ...target,
      ],
      { stdio: "pipe" },
    );
    master.child = child;
    child.stdin.on("error", () => {});
    child.stdout.setEncoding("latin1");
    child.stderr.setEncoding("latin1");
    let stderr = "";
    child.stderr.on("data", (chunk: string) => {
      // Its last lines only: a refused channel (a node down) adds one each.
      stderr = (stderr + chunk).slice(-4096);
    });
    master.ended = new Promise((resolve) => child.on("exit", () => resolve()));
    return new Promise<boolean>((resolve) => {
      child.on("error", () => {});
      child.stdout.once("data", () => {
        master.up = true;
        resolve(true);
      });
      child.on("exit", () => {
        const wasUp = master.up;
        master.up = false;
        if (this.closed || master.gaveUp) return resolve(false);
        const words = sshFailureWords(stderr).line;
        this.say(
          jump,
          wasUp
            ? `its shared connection ended mid-run (${words})`
            : `no shared connection (${words})`,
        );
        resolve(false);
      });
    });
  }

  /** Ends every shared connection (ssh removes its socket) and removes their directory. */
  async close(): Promise<void> {
    this.closed = true;
    const ending: Promise<void>[] = [];
    for (const master of this.masters.values()) {
      master.up = false;
      master.child?.stdin.end();
      if (master.ended) ending.push(master.ended);
    }
    await Promise.all(ending);
    this.removeDir();
  }

  private removeDir() {
    if (!this.dir) return;
    rmSync(this.dir, { recursive: true, force: true });
    process.removeListener("exit", this.exitHook);
    this.dir = undefined;
  }
}
