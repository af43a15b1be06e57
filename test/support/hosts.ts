// Real OpenSSH test hosts on one Linux machine: each host is a network namespace with its own
// address, sysctls, routes, listeners, sshd and (through a private mount namespace) its own files.
// Needs root, openssh-server and iproute2; see README.md beside this file.
import { spawn, type ChildProcess } from "node:child_process";
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { execa } from "execa";
import pLimit from "p-limit";
import { REPO_ROOT } from "./cli.js";

export interface HostDefinition {
  /** Host name, also the ssh alias, e.g. "web-01". */
  name: string;
  /** net.* sysctls set inside the host's network namespace, e.g. {"net.ipv4.ip_forward": "1"}. */
  sysctls?: Record<string, string>;
  /** Extra `ip route add` argument strings; `{gateway}` stands for the fleet's bridge address. */
  routes?: string[];
  /** "tcp/8080", "udp/5353": a process listening inside the host on that port. */
  listeners?: string[];
  /**
   * Files visible only to this host (private mount namespace); parent directories created as
   * needed.
   */
  files?: Record<string, { contents: string | Buffer; mode?: string }>;
  /** This host's /var/lib/dpkg/status: a transform of the machine's real one. */
  dpkgStatus?: (real: string) => string;
  /**
   * Directories of the machine this host may change through `exec` (`dpkg -i`, `sed -i`): each
   * a private writable overlay over the machine's, so the machine's own stay untouched.
   */
  writable?: string[];
  /**
   * An rpm host: these packages (built here as noarch rpms, recorded without unpacking) are in an
   * rpm database at /var/lib/rpm, and the dpkg database is hidden, as on RHEL, Fedora or SUSE.
   * `exec` may `rpm -U` packages (`buildRpm`), their files written where `writable` allows. Needs
   * `rpm`.
   */
  rpmPackages?: RpmPackage[];
  /**
   * A real systemd as PID 1 of the host's own pid namespace, running sshd as a unit. It boots a
   * minimal target of its own (never default.target) over private /run, /tmp and /var/tmp, so it
   * starts no installed service and cleans nothing of the machine's. /etc/systemd/system and
   * /usr/lib/systemd/system are private and writable: `exec` may enable, mask, start or add units.
   */
  systemd?: boolean;
  /**
   * Every place the host may write is its own, so that `fleet.writtenSince` lists all it wrote:
   * /etc, /var, /root and /home are private writable overlays over the machine's, /run and /tmp
   * private tmpfs (the fleet's folder kept at its path), as a systemd host's /run, /tmp and
   * /var/tmp are. What other processes of the machine write to its own folders does not show.
   */
  ownRoots?: boolean;
  /** /run/quartermaster/maintenance exists on this host only. */
  maintenance?: boolean;
  /**
   * stopped: no sshd (connection refused); hang: accepts TCP on port 22 and never sends a byte;
   * drop-first: closes the first connection before any banner (as an sshd's MaxStartups drop
   * reads), then starts sshd.
   */
  state?: "up" | "stopped" | "hang" | "drop-first";
  /**
   * A host only the named host of this fleet (its jump host) can reach: its network namespace's
   * only link is a veth pair into the jump host's namespace, on a private subnet the machine has
   * no route to. The fleet's ssh_config reaches it with `ProxyJump <jump host>`.
   */
  behind?: string;
  /**
   * sshd_config lines of this host, e.g. `MaxStartups 4:50:8`: each replaces the default line of
   * its keyword (sshd keeps the first value of most keywords but the last of some, MaxStartups).
   */
  sshdOptions?: string[];
  /** More arguments for this host's sshd, after the harness's own (`-o`, `"Banner /a b"`). */
  sshdArguments?: string[];
  /**
   * Where this host's sshd binary is (an sshd built into another prefix): the machine's is copied
   * there and run from there.
   */
  sshdBinary?: string;
  /**
   * A compromised host: a shell filter (`sed ...`, `awk ...`) that rewrites the stdout of every ssh
   * session's command on this host, installed as sshd's ForceCommand. It runs as the audit user.
   */
  probeFilter?: string;
}

export interface RpmPackage {
  name: string;
  version: string;
  release: string;
  /** Unset: no Epoch tag at all, which rpm prints as `(none)`. */
  epoch?: number;
  /** The files it ships (none: an empty package); a `config` file is `%config(noreplace)`. */
  files?: Record<string, { contents: string; config?: boolean }>;
  /** The packages it requires, by name: a package manager installs them with it. */
  requires?: string[];
}

export interface TestHost {
  name: string;
  address: string;
  port: number;
  netns: string;
  /** The jump host, for a host only it can reach. */
  behind?: string;
}

export interface TestFleet {
  hosts: TestHost[];
  /** Temp dir holding keys, configs and per-host files. */
  dir: string;
  /** ssh_config with one Host block per host; use with `ssh -F`. */
  sshConfig: string;
  /** known_hosts with every host's real host key. */
  knownHosts: string;
  /** Private key of the audit user. */
  identityFile: string;
  /** The audit user (not root), shell /bin/sh. */
  user: string;
  /** Bridge address in the root namespace: the hosts' on-link gateway. */
  gateway: string;
  /** Replace a host's key and restart its sshd; known_hosts keeps the old key. */
  rotateHostKey(name: string): Promise<void>;
  /** Stop a host's sshd: from now on connections to it are refused, as to a host gone down. */
  takeDown(name: string): Promise<void>;
  /**
   * Restart a host's sshd in a new time namespace whose boot time is now: its sessions see a
   * host that has just booted (`btime` in /proc/stat, /proc/uptime).
   */
  reboot(name: string): Promise<void>;
  /** What the host's sshd has logged so far (`LogLevel ERROR` unless its `sshdOptions` say). */
  sshdLog(name: string): Promise<string>;
  /**
   * Run a shell command as root inside the host's network and mount namespaces; resolves to stdout.
   */
  exec(name: string, command: string): Promise<string>;
  /**
   * Every path of the host written after `marker` (a file of the machine, e.g. in `dir`) was, sorted:
   * what the host's processes wrote to its private overlays, bind-mounted files and private tmpfs.
   * On an `ownRoots` host, that is all they wrote under /etc, /var, /root, /home, /run and /tmp.
   */
  writtenSince(name: string, marker: string): Promise<string[]>;
  /**
   * The command prefix that runs a program as root inside the host (its pid namespace too, for
   * systemd hosts).
   */
  enter(name: string): string[];
  /** Kill every process, delete namespaces, links and the temp dir. Safe to call twice. */
  stop(): Promise<void>;
}

export interface FleetOptions {
  /**
   * Name prefix of namespaces, links and temp dirs (default "qmt"); names are <prefix>-<pid>-<n>.
   */
  prefix?: string;
  /** How long to wait for every sshd to greet, in milliseconds (default 20000). */
  readyTimeoutMs?: number;
  /**
   * sshd as production hosts run it, for benchmarks: a re-exec per connection and the default key
   * exchange. Tests get a cheaper sshd by default (TEST_SSHD_SAVINGS).
   */
  productionSshd?: boolean;
}

export const AUDIT_USER = "qm-audit";
const MAINTENANCE_MARKER = "/run/quartermaster/maintenance";
const DPKG_STATUS = "/var/lib/dpkg/status";
const SSHD = "/usr/sbin/sshd";
/**
 * What a test host's sshd skips, three quarters of a session's CPU (bench/test-host-session.ts):
 * the default post-quantum key exchange (sntrup761x25519, ~80 ms of the ssh client's CPU per
 * session here) and a re-exec per connection (~9 ms of sshd's).
 */
const TEST_SSHD_SAVINGS = { options: ["KexAlgorithms curve25519-sha256"], args: ["-r"] };
// All fleets share one private /16; each fleet claims one /24 of it.
const SUBNET_BASE = "10.213";
// Hosts behind a jump host: the same /24 number in this /16, on a bridge inside each jump host's
// namespace only (the jump host is .1), so the machine itself has no route to them.
const PRIVATE_BASE = "10.214";
// The bridge inside a jump host's namespace.
const JUMP_BRIDGE = "qm-private";
// Claims live beside the network namespaces so they vanish with them on reboot.
const SUBNET_CLAIMS = "/run/quartermaster-test-hosts/subnets";
// Where a claim is written before it is linked into SUBNET_CLAIMS whole, named <pid>-<n>.
const CLAIMS_WRITTEN = "/run/quartermaster-test-hosts/claiming";
// Linux interface names are at most 15 bytes.
const IFNAMSIZ = 15;

// Counters so several fleets in one process get distinct names.
let fleetSeq = 0;
let hostSeq = 0;

interface HostRuntime {
  def: HostDefinition;
  host: TestHost;
  dir: string;
  hostKey: string;
  sshdConfig: string;
  sshdLog: string;
  productionSshd: boolean;
  anchor?: ChildProcess;
  /** Seconds added to the boot clock of its sshd's sessions: negative moves their boot time later. */
  bootOffset?: number;
  /** A systemd host's PID 1, as this machine numbers it. */
  pid1?: number;
  sshd?: ChildProcess;
  listener?: ChildProcess;
  /** Where the host's writes under `at` land on the machine: an overlay's upper folder, a bound file. */
  own: { at: string; source: string }[];
  /** The host's private tmpfs mount points. */
  tmpfs: string[];
}

/** Quote a string for POSIX sh. */
function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

async function ipBatch(lines: string[], force = false): Promise<void> {
  if (lines.length === 0) return;
  await execa("ip", [...(force ? ["-force"] : []), "-batch", "-"], {
    input: lines.join("\n") + "\n",
  });
}

/** Names of network namespaces, as `ip netns list` prints them. */
async function listNetns(): Promise<string[]> {
  const { stdout } = await execa("ip", ["netns", "list"]);
  return stdout
    .split("\n")
    .map((l) => l.split(" ")[0] ?? "")
    .filter(Boolean);
}

async function listLinks(): Promise<string[]> {
  const { stdout } = await execa("ip", ["-o", "link", "show"]);
  // Lines look like "12: qmt-123-0@if2: <...>"; the name ends at "@" or ":".
  return stdout
    .split("\n")
    .map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1] ?? "")
    .filter(Boolean);
}

/** Inode of a network namespace, to find the processes inside it through /proc. */
function netnsInode(netns: string): number | undefined {
  try {
    return fs.statSync(`/run/netns/${netns}`).ino;
  } catch {
    return undefined;
  }
}

/** Pids of every process whose network namespace is one of the given inodes. */
function pidsInNetns(inodes: Set<number>): number[] {
  if (inodes.size === 0) return [];
  const pids: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const link = fs.readlinkSync(`/proc/${entry}/ns/net`);
      const ino = Number(/\[(\d+)\]/.exec(link)?.[1]);
      if (inodes.has(ino)) pids.push(Number(entry));
    } catch {
      // The process exited while we looked.
    }
  }
  return pids;
}

function killAll(pids: number[]): void {
  for (const pid of pids) {
    if (pid === process.pid) continue;
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

/** True once a pid has exited; a zombie counts as exited (only its parent can reap it). */
function hasExited(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

/** SIGKILL is asynchronous: wait (bounded) until the processes are really gone. */
async function waitExited(pids: number[], timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (pids.some((p) => !hasExited(p)) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Remove namespaces, links, temp dirs and subnet claims left by runs whose process is dead. */
async function cleanupStale(prefix: string): Promise<void> {
  const p = escapeRegExp(prefix);
  const nameRe = new RegExp(`^${p}-(\\d+)-b?\\d+$`);
  const stalePid = (name: string): boolean => {
    const m = nameRe.exec(name);
    return m !== null && !isAlive(Number(m[1]));
  };
  const netns = (await listNetns()).filter(stalePid);
  const links = (await listLinks()).filter(stalePid);
  const inodes = new Set(netns.map(netnsInode).filter((i): i is number => i !== undefined));
  const leftovers = pidsInNetns(inodes);
  killAll(leftovers);
  await waitExited(leftovers);
  await ipBatch(
    [...netns.map((n) => `netns del ${n}`), ...links.map((l) => `link del ${l}`)],
    true,
  ).catch(() => undefined);
  const tmpRe = new RegExp(`^${p}-(\\d+)-[A-Za-z0-9]{6}$`);
  for (const entry of await fsp.readdir(os.tmpdir())) {
    const m = tmpRe.exec(entry);
    if (m && !isAlive(Number(m[1]))) {
      await fsp.rm(path.join(os.tmpdir(), entry), { recursive: true, force: true });
    }
  }
  await fsp.mkdir(SUBNET_CLAIMS, { recursive: true });
  for (const entry of await fsp.readdir(SUBNET_CLAIMS)) {
    const owner = Number(
      (await fsp.readFile(path.join(SUBNET_CLAIMS, entry), "utf8").catch(() => "")).trim(),
    );
    if (!owner || !isAlive(owner)) await fsp.rm(path.join(SUBNET_CLAIMS, entry), { force: true });
  }
  await fsp.mkdir(CLAIMS_WRITTEN, { recursive: true });
  for (const entry of await fsp.readdir(CLAIMS_WRITTEN))
    if (!isAlive(Number(entry.split("-")[0])))
      await fsp.rm(path.join(CLAIMS_WRITTEN, entry), { force: true });
}

let claimSeq = 0;

/**
 * Atomically claim a free /24 of the test subnet: a claim file holding this process's pid, linked
 * into place whole (link fails if the name exists), so another process's stale cleanup never reads
 * a claim still being written as one without an owner.
 */
async function claimSubnet(): Promise<number> {
  const written = path.join(CLAIMS_WRITTEN, `${process.pid}-${claimSeq++}`);
  await fsp.writeFile(written, `${process.pid}\n`);
  try {
    return await linkFreeSubnet(written);
  } finally {
    await fsp.rm(written, { force: true });
  }
}

async function linkFreeSubnet(claim: string): Promise<number> {
  const { stdout } = await execa("ip", ["-4", "-o", "addr", "show"]);
  const inUse = new Set(
    [...stdout.matchAll(new RegExp(`inet ${escapeRegExp(SUBNET_BASE)}\\.(\\d+)\\.`, "g"))].map(
      (m) => Number(m[1]),
    ),
  );
  for (let octet = 0; octet <= 255; octet++) {
    if (inUse.has(octet)) continue;
    try {
      await fsp.link(claim, path.join(SUBNET_CLAIMS, String(octet)));
      return octet;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  throw new Error(`no free /24 left in ${SUBNET_BASE}.0.0/16 for test hosts`);
}

async function sshKeygen(file: string, comment: string): Promise<string> {
  await fsp.rm(file, { force: true });
  await fsp.rm(`${file}.pub`, { force: true });
  await execa("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file]);
  return (await fsp.readFile(`${file}.pub`, "utf8")).trim();
}

/**
 * Create the audit user if missing; sshd with UsePAM no refuses a locked ("!") account, so use "*".
 */
async function ensureAuditUser(user: string): Promise<void> {
  const passwd = await fsp.readFile("/etc/passwd", "utf8");
  const entry = passwd.split("\n").find((l) => l.startsWith(`${user}:`));
  if (!entry) {
    try {
      await execa("useradd", ["--create-home", "--shell", "/bin/sh", "--password", "*", user]);
    } catch (err) {
      // A parallel run may have created it between our read and useradd.
      const again = await fsp.readFile("/etc/passwd", "utf8");
      if (!again.split("\n").some((l) => l.startsWith(`${user}:`))) throw err;
    }
    return;
  }
  const fields = entry.split(":");
  const shadow = await fsp.readFile("/etc/shadow", "utf8");
  const pw = shadow
    .split("\n")
    .find((l) => l.startsWith(`${user}:`))
    ?.split(":")[1];
  if (fields[6] !== "/bin/sh" || pw !== "*") {
    await execa("usermod", ["--shell", "/bin/sh", "--password", "*", user]);
  }
  const home = fields[5];
  if (home) await fsp.mkdir(home, { recursive: true });
}

/** Deepest directory of `target`'s ancestors that exists on the machine. */
function deepestExisting(target: string): string {
  let dir = path.dirname(target);
  while (!fs.existsSync(dir)) dir = path.dirname(dir);
  return dir;
}

/**
 * Shell lines for the host's private mount namespace. Existing files are bind-mounted over;
 * missing ones are added through an overlay on their deepest existing ancestor, so nothing
 * is created on the machine's own filesystem.
 */
async function prepareFiles(
  rt: HostRuntime,
  files: Map<string, { contents: string | Buffer; mode?: string }>,
): Promise<string[]> {
  const binds: string[] = [];
  const missing: string[] = [];
  for (const target of files.keys()) {
    if (!path.isAbsolute(target)) throw new Error(`file path must be absolute: ${target}`);
    const st = fs.statSync(target, { throwIfNoEntry: false });
    if (st?.isDirectory()) throw new Error(`file path is a directory on this machine: ${target}`);
    (st ? binds : missing).push(target);
  }
  // One overlay per topmost existing ancestor: an overlay on /etc would hide one on /etc/ssh.
  const roots = [...new Set(missing.map(deepestExisting))].sort((a, b) => a.length - b.length);
  const overlayRoots: string[] = [];
  for (const r of roots) {
    if (!overlayRoots.some((o) => o === "/" || r === o || r.startsWith(`${o}/`)))
      overlayRoots.push(r);
  }
  if (overlayRoots.includes("/"))
    throw new Error("cannot add files whose only existing ancestor is /");
  const lines: string[] = [];
  for (const [i, root] of overlayRoots.entries()) {
    const base = path.join(rt.dir, "overlay", String(i));
    await fsp.mkdir(path.join(base, "upper"), { recursive: true });
    await fsp.mkdir(path.join(base, "work"), { recursive: true });
    for (const target of missing.filter((t) => t.startsWith(`${root}/`))) {
      const file = path.join(base, "upper", path.relative(root, target));
      await fsp.mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
      const spec = files.get(target)!;
      await fsp.writeFile(file, spec.contents);
      await fsp.chmod(file, parseInt(spec.mode ?? "0644", 8));
    }
    lines.push(
      `mount -t overlay overlay -o ${shq(`lowerdir=${root},upperdir=${base}/upper,workdir=${base}/work`)} ${shq(root)}`,
    );
    rt.own.push({ at: root, source: `${base}/upper` });
  }
  for (const [i, target] of binds.entries()) {
    const file = path.join(rt.dir, "files", String(i));
    await fsp.mkdir(path.dirname(file), { recursive: true });
    const spec = files.get(target)!;
    await fsp.writeFile(file, spec.contents);
    await fsp.chmod(file, parseInt(spec.mode ?? "0644", 8));
    lines.push(`mount --bind ${shq(file)} ${shq(target)}`);
    rt.own.push({ at: target, source: file });
  }
  return lines;
}

const RPMBUILD = "/usr/bin/rpmbuild";

/**
 * Builds a noarch rpm of `pkg` in `workDir` with rpmbuild (its files, config files marked
 * `%config(noreplace)` as packagers mark them); resolves to the package file.
 */
export async function buildRpm(pkg: RpmPackage, workDir: string): Promise<string> {
  if (!fs.existsSync(RPMBUILD))
    throw new Error(`${RPMBUILD} missing: install rpm (scripts/ci-install.sh)`);
  const { files = {}, requires = [], ...fields } = pkg;
  for (const [field, value] of [...Object.entries(fields), ...requires.map((r) => ["name", r])]) {
    // A hyphen separates name, version and release in rpm's file names: only the name may hold
    // one.
    const text = String(value);
    if (!/^[A-Za-z0-9._~^+-]+$/.test(text) || (field !== "name" && text.includes("-"))) {
      throw new Error(`rpm package ${pkg.name}: bad ${field} ${text}`);
    }
  }
  const id = `${pkg.name}-${pkg.version}-${pkg.release}`;
  const tree = path.join(workDir, "trees", id);
  for (const [file, { contents }] of Object.entries(files)) {
    if (!/^\/[A-Za-z0-9._/-]+$/.test(file))
      throw new Error(`rpm package ${pkg.name}: bad file ${file}`);
    await fsp.mkdir(path.dirname(path.join(tree, file)), { recursive: true });
    await fsp.writeFile(path.join(tree, file), contents);
  }
  const spec = path.join(workDir, `${id}.spec`);
  await fsp.mkdir(workDir, { recursive: true });
  await fsp.writeFile(
    spec,
    [
      `Name: ${pkg.name}`,
      `Version: ${pkg.version}`,
      `Release: ${pkg.release}`,
      ...(pkg.epoch === undefined ? [] : [`Epoch: ${pkg.epoch}`]),
      ...requires.map((name) => `Requires: ${name}`),
      "Summary: Quartermaster test package",
      "License: MIT",
      "BuildArch: noarch",
      "%description",
      "A package for an rpm test host.",
      ...(Object.keys(files).length
        ? ["%install", `mkdir -p %{buildroot} && cp -a ${shq(tree)}/. %{buildroot}/`]
        : []),
      "%files",
      ...Object.entries(files).map(([file, { config }]) =>
        config ? `%config(noreplace) ${file}` : file,
      ),
      "",
    ].join("\n"),
  );
  await execa(RPMBUILD, [
    "-bb",
    "--quiet",
    "--define",
    `_topdir ${workDir}`,
    "--define",
    "_build_id_links none",
    spec,
  ]);
  return path.join(workDir, "RPMS", "noarch", `${id}.noarch.rpm`);
}

/**
 * Builds an rpm for each package and records them all in a new database in `dbDir`.
 */
async function buildRpmDatabase(
  packages: readonly RpmPackage[],
  workDir: string,
  dbDir: string,
): Promise<void> {
  const built: string[] = [];
  for (const pkg of packages) built.push(await buildRpm(pkg, workDir));
  await fsp.mkdir(dbDir, { recursive: true });
  await execa("rpm", ["--dbpath", dbDir, "--initdb"]);
  // --justdb records the packages without unpacking anything; Debian's rpm warns about that on
  // stderr.
  await execa("rpm", [
    "--dbpath",
    dbDir,
    "-i",
    "--justdb",
    "--nodeps",
    "--ignorearch",
    "--ignoreos",
    ...built,
  ]);
  await execa("chmod", ["-R", "a+rX", dbDir]);
}

function sysctlPath(key: string): string {
  // Only network sysctls are per namespace; anything else would change the whole machine.
  if (!/^net[./]/.test(key)) throw new Error(`only net.* sysctls are per host: ${key}`);
  const rel = key.includes("/") ? key : key.replace(/\./g, "/");
  if (rel.split("/").includes("..")) throw new Error(`bad sysctl name: ${key}`);
  return `/proc/sys/${rel}`;
}

/** Listener process: binds every port, says "ready", and never writes to a connection. */
const LISTENER_SCRIPT = `
const net = require("net"), dgram = require("dgram");
const specs = JSON.parse(process.argv[1]);
let pending = specs.length;
const bound = () => { if (--pending === 0) process.stdout.write("ready\\n"); };
for (const spec of specs) {
  const [proto, port] = spec.split("/");
  if (proto === "tcp") {
    net.createServer((s) => s.on("error", () => {})).listen(Number(port), "0.0.0.0", bound);
  } else {
    dgram.createSocket("udp4").bind(Number(port), "0.0.0.0", bound);
  }
}
`;

/** Resolve when the child prints `ready`; reject with its stderr if it exits first. */
function waitReady(child: ChildProcess, what: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    const timer = setTimeout(
      () => finish(new Error(`${what}: not ready after ${timeoutMs} ms ${err.trim()}`)),
      timeoutMs,
    );
    const finish = (e?: Error): void => {
      clearTimeout(timer);
      child.stdout?.removeAllListeners("data");
      child.removeListener("exit", onExit);
      // Stop reading so the pipes do not keep the event loop busy.
      child.stdout?.destroy();
      child.stderr?.destroy();
      if (e) reject(e);
      else resolve();
    };
    const onExit = (code: number | null, signal: string | null): void =>
      finish(new Error(`${what} exited (${signal ?? code}): ${err.trim()}`));
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("ready\n")) finish();
    });
    child.stderr?.on("data", (d: Buffer) => (err += d.toString()));
    child.on("exit", onExit);
    child.on("error", (e) => finish(new Error(`${what}: ${e.message}`)));
  });
}

/**
 * Poll until the address greets with an SSH banner, so a kernel-level accept alone does not count.
 */
async function waitForSshBanner(address: string, port: number, deadline: number): Promise<void> {
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = net.connect({ host: address, port });
      const done = (v: boolean): void => {
        sock.destroy();
        resolve(v);
      };
      sock.setTimeout(1000, () => done(false));
      sock.once("data", (d) => done(d.toString().startsWith("SSH-")));
      sock.once("error", () => done(false));
      sock.once("close", () => done(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`sshd on ${address}:${port} did not greet in time`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Poll until a process in the host's network namespace listens on the port: for a host behind a
 * jump host, whose address the machine cannot reach to read a banner.
 */
async function waitListening(pid: number, port: number, deadline: number): Promise<void> {
  const local = `:${port.toString(16).toUpperCase().padStart(4, "0")} `;
  for (;;) {
    const table = await fsp.readFile(`/proc/${pid}/net/tcp`, "utf8").catch(() => "");
    // Columns: sl local_address rem_address st; 0A is LISTEN.
    if (table.split("\n").some((l) => l.split(/\s+/)[4] === "0A" && l.includes(local))) return;
    if (Date.now() > deadline) throw new Error(`sshd on port ${port} did not listen in time`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Until the host's sshd answers: its banner, or for a host behind a jump host, its listening socket. */
function waitForSshd(rt: HostRuntime, deadline: number): Promise<void> {
  return rt.def.behind === undefined
    ? waitForSshBanner(rt.host.address, rt.host.port, deadline)
    : waitListening(rt.anchor!.pid!, rt.host.port, deadline);
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 2000);
  await exited;
  clearTimeout(timer);
}

const SYSTEMD = "/lib/systemd/systemd";
const SYSTEMD_TARGET = "qm-test-host.target";
// Unit directories a systemd host may change: private overlays over the machine's.
const PRIVATE_UNIT_DIRS = ["/etc/systemd/system", "/usr/lib/systemd/system"];
// What an `ownRoots` host writes to, besides its /run and /tmp: its own overlays over the machine's.
const OWN_ROOTS = ["/etc", "/var", "/root", "/home"];

/**
 * A unit file written by a systemd host's setup script: no default dependencies, so nothing else
 * boots.
 */
const unitFile = (name: string, lines: string[]) =>
  `cat > /run/systemd/system/${name} <<'QM_UNIT'\n[Unit]\nDefaultDependencies=no\n${lines.join("\n")}\nQM_UNIT`;

/** Shell lines mounting a private writable overlay over each of `dirs`, kept in the host's `tag` folder. */
async function privateOverlays(
  rt: HostRuntime,
  dirs: readonly string[],
  tag: string,
): Promise<string[]> {
  const lines: string[] = [];
  for (const [i, dir] of dirs.entries()) {
    const base = path.join(rt.dir, tag, String(i));
    await fsp.mkdir(path.join(base, "upper"), { recursive: true });
    await fsp.mkdir(path.join(base, "work"), { recursive: true });
    lines.push(
      `mount -t overlay overlay -o ${shq(`lowerdir=${dir},upperdir=${base}/upper,workdir=${base}/work`)} ${shq(dir)}`,
    );
    rt.own.push({ at: dir, source: `${base}/upper` });
  }
  return lines;
}

/**
 * Shell lines mounting a private tmpfs on /run, then on each of `more`, with `keep` (absolute paths,
 * e.g. the fleet's directory and the repository) bind-mounted back at the same paths.
 */
function privateTmpfs(rt: HostRuntime, more: readonly string[], keep: readonly string[]): string[] {
  const lines = ["mount -t tmpfs -o mode=0755 tmpfs /run", "mkdir -p /run/qm-keep /run/sshd"];
  keep.forEach((dir, i) =>
    lines.push(`mkdir /run/qm-keep/${i}`, `mount --bind ${shq(dir)} /run/qm-keep/${i}`),
  );
  lines.push(...more.map((dir) => `mount -t tmpfs -o mode=1777 tmpfs ${shq(dir)}`));
  keep.forEach((dir, i) =>
    lines.push(`mkdir -p ${shq(dir)}`, `mount --move /run/qm-keep/${i} ${shq(dir)}`),
  );
  rt.tmpfs.push("/run", ...more);
  return lines;
}

/**
 * Shell lines that turn a host's setup into a systemd boot. /run, /tmp and /var/tmp become private
 * tmpfs first (a booting systemd would otherwise clean the machine's /tmp), `keep` kept.
 */
async function systemdBoot(
  rt: HostRuntime,
  keep: readonly string[],
  sshdCommand: string,
): Promise<string[]> {
  const lines = await privateOverlays(rt, PRIVATE_UNIT_DIRS, "units");
  lines.push(
    ...privateTmpfs(rt, ["/tmp", "/var/tmp"], keep),
    "mkdir -p /run/systemd/system",
    unitFile(SYSTEMD_TARGET, [
      "Description=Quartermaster test host",
      "Wants=qm-sshd.service dbus.socket dbus.service",
    ]),
    unitFile("qm-sshd.service", [
      "Description=sshd of the test host",
      "[Service]",
      `ExecStart=${sshdCommand}`,
    ]),
    // A system bus, so unprivileged systemctl works as on a real host.
    unitFile("dbus.socket", ["[Socket]", "ListenStream=/run/dbus/system_bus_socket"]),
    unitFile("dbus.service", [
      "Requires=dbus.socket",
      "[Service]",
      "ExecStart=/usr/bin/dbus-daemon --system --address=systemd: --nofork --nopidfile --systemd-activation --syslog-only",
    ]),
  );
  return lines;
}

/** The PID of a systemd host's PID 1: the only child of its `unshare --fork`. */
async function findPid1(anchorPid: number, deadline: number): Promise<number> {
  for (;;) {
    const children = fs
      .readFileSync(`/proc/${anchorPid}/task/${anchorPid}/children`, "utf8")
      .trim();
    if (children) return Number(children.split(" ")[0]);
    if (Date.now() > deadline) throw new Error("systemd did not start");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** sshd in the foreground, logging to the host's sshd.log. */
const sshdArgs = (rt: HostRuntime) => [
  "-D",
  ...(rt.productionSshd ? [] : TEST_SSHD_SAVINGS.args),
  ...["-e", "-f", rt.sshdConfig, "-h", rt.hostKey],
  ...(rt.def.sshdArguments ?? []),
];
const sshdCommand = (rt: HostRuntime) =>
  [rt.def.sshdBinary ?? SSHD, ...sshdArgs(rt), "-E", rt.sshdLog].map(shq).join(" ");

/** Closes the first connection to ADDRESS:PORT unanswered, then exits (sshd takes its place). */
const DROP_FIRST_SCRIPT = `
const [address, port] = process.argv.slice(1);
const server = require("net").createServer((socket) => {
  socket.destroy();
  server.close();
});
server.listen(Number(port), address, () => process.stdout.write("ready\\n"));
`;

/**
 * sshd in the host's namespaces; with `dropFirst`, only once a stand-in has closed the first
 * connection.
 */
function startSshd(rt: HostRuntime, dropFirst = false): ChildProcess {
  const anchorPid = rt.anchor?.pid;
  if (anchorPid === undefined) throw new Error(`${rt.def.name}: host namespaces are gone`);
  const sshd = [
    ...(rt.bootOffset === undefined
      ? []
      : ["unshare", "--time", "--boottime", String(rt.bootOffset)]),
    rt.def.sshdBinary ?? SSHD,
    ...sshdArgs(rt),
  ];
  const command = dropFirst
    ? [
        "sh",
        "-c",
        `${shq(process.execPath)} -e ${shq(DROP_FIRST_SCRIPT)} ${shq(rt.host.address)} ${rt.host.port} && exec ${sshd.map(shq).join(" ")} >/dev/null`,
      ]
    : sshd;
  const log = fs.openSync(rt.sshdLog, "a");
  // pdeathsig: if the test runner dies without stop(), its sshds die with it.
  rt.sshd = spawn(
    "setpriv",
    ["--pdeathsig", "KILL", "nsenter", "-t", String(anchorPid), "-m", "-n", ...command],
    { stdio: ["ignore", dropFirst ? "pipe" : "ignore", log] },
  );
  fs.closeSync(log);
  // A failed spawn shows up as a missing banner, with sshd.log in the error.
  rt.sshd.on("error", () => undefined);
  // A forgotten stop() must not hang the runner; the exit hook and pdeathsig clean up instead.
  rt.sshd.unref();
  return rt.sshd;
}

export async function startFleet(
  defs: HostDefinition[],
  options: FleetOptions = {},
): Promise<TestFleet> {
  const prefix = options.prefix ?? "qmt";
  const readyTimeoutMs = options.readyTimeoutMs ?? 20000;
  if (!/^[a-z][a-z0-9]*$/.test(prefix))
    throw new Error(`prefix must be lowercase letters and digits: ${prefix}`);
  if (process.getuid?.() !== 0)
    throw new Error("test hosts need root (network namespaces, mounts, useradd)");
  if (!fs.existsSync(SSHD))
    throw new Error(`${SSHD} missing: install openssh-server (scripts/ci-install.sh)`);
  if (defs.length > 253) throw new Error("at most 253 hosts per fleet (one /24)");
  const seen = new Set<string>();
  for (const d of defs) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(d.name))
      throw new Error(`host ${d.name}: not a usable ssh alias`);
    if (seen.has(d.name)) throw new Error(`host ${d.name}: defined twice`);
    seen.add(d.name);
    for (const line of d.sshdOptions ?? [])
      if (/[\n\r]/.test(line)) throw new Error(`host ${d.name}: sshd option must be one line`);
  }
  for (const d of defs) {
    if (d.behind === undefined) continue;
    const jump = defs.find((j) => j.name === d.behind);
    if (!jump || jump.behind !== undefined)
      throw new Error(
        `host ${d.name}: behind "${d.behind}", which is no host on the fleet's bridge`,
      );
  }
  if (defs.some((d) => d.systemd && d.state === "drop-first"))
    throw new Error("a systemd host runs its own sshd: drop-first does not apply");

  await cleanupStale(prefix);

  const fleetId = `${prefix}-${process.pid}`;
  const bridge = `${fleetId}-b${fleetSeq++}`;
  const names = defs.map(() => `${fleetId}-${hostSeq++}`);
  for (const n of [bridge, ...names]) {
    if (n.length > IFNAMSIZ)
      throw new Error(`interface name ${n} is longer than ${IFNAMSIZ} bytes: use a shorter prefix`);
  }

  const user = AUDIT_USER;
  const octet = await claimSubnet();
  const gateway = `${SUBNET_BASE}.${octet}.1`;
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), `${fleetId}-`));
  // sshd reads AuthorizedKeysFile as the audit user, so it must be able to traverse the dir.
  await fsp.chmod(dir, 0o711);

  const runtimes: HostRuntime[] = defs.map((def, i) => {
    const hostDir = path.join(dir, "hosts", def.name);
    return {
      def,
      host: {
        name: def.name,
        address: `${def.behind === undefined ? SUBNET_BASE : PRIVATE_BASE}.${octet}.${i + 2}`,
        port: 22,
        netns: names[i]!,
        ...(def.behind !== undefined && { behind: def.behind }),
      },
      dir: hostDir,
      hostKey: path.join(hostDir, "ssh_host_ed25519_key"),
      sshdConfig: path.join(hostDir, "sshd_config"),
      sshdLog: path.join(hostDir, "sshd.log"),
      productionSshd: options.productionSshd ?? false,
      own: [],
      tmpfs: [],
    };
  });

  let stopped = false;
  let bridgeMade = false;
  const teardownLines = (): string[] => [
    ...runtimes.map((rt) => `netns del ${rt.host.netns}`),
    ...runtimes.map((rt) => `link del ${rt.host.netns}`),
    ...(bridgeMade ? [`link del ${bridge}`] : []),
  ];
  const childPids = (): number[] =>
    runtimes
      .flatMap((rt) => [rt.listener?.pid, rt.sshd?.pid, rt.anchor?.pid])
      .filter((p): p is number => p !== undefined);

  // Last resort when the runner exits without stop(): best effort, synchronous.
  const onExit = (): void => {
    if (stopped) return;
    stopped = true;
    killAll(childPids());
    const inodes = new Set(
      runtimes.map((rt) => netnsInode(rt.host.netns)).filter((i): i is number => i !== undefined),
    );
    killAll(pidsInNetns(inodes));
    try {
      execFileSync("ip", ["-force", "-batch", "-"], {
        input: teardownLines().join("\n") + "\n",
        stdio: ["pipe", "ignore", "ignore"],
      });
    } catch {
      // Stale cleanup of the next run removes what is left.
    }
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(path.join(SUBNET_CLAIMS, String(octet)), { force: true });
  };
  process.once("exit", onExit);

  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    process.removeListener("exit", onExit);
    // SIGKILL to a PID 1 ends its whole pid namespace; its unshare, which ignores SIGTERM, then
    // exits.
    killAll(runtimes.flatMap((rt) => (rt.pid1 === undefined ? [] : [rt.pid1])));
    await Promise.all(
      runtimes.flatMap((rt) => [stopChild(rt.listener), stopChild(rt.sshd), stopChild(rt.anchor)]),
    );
    // ssh sessions outlive their listening sshd, and exec() children may linger: kill whatever is
    // left.
    const inodes = new Set(
      runtimes.map((rt) => netnsInode(rt.host.netns)).filter((i): i is number => i !== undefined),
    );
    const leftovers = pidsInNetns(inodes);
    killAll(leftovers);
    await waitExited(leftovers);
    await ipBatch(teardownLines(), true).catch(() => undefined);
    await fsp.rm(dir, { recursive: true, force: true });
    await fsp.rm(path.join(SUBNET_CLAIMS, String(octet)), { force: true });
  };

  let current = "audit user and keys";
  try {
    await ensureAuditUser(user);
    const identityFile = path.join(dir, "id_ed25519");
    const limit = pLimit(Math.max(4, os.cpus().length * 2));
    const userKeyPromise = sshKeygen(identityFile, `${user}@quartermaster-test`);
    const hostKeys = await Promise.all(
      runtimes.map((rt) =>
        limit(async () => {
          await fsp.mkdir(rt.dir, { recursive: true });
          const binary = rt.def.sshdBinary;
          if (binary !== undefined) {
            await fsp.mkdir(path.dirname(binary), { recursive: true });
            await fsp.copyFile(SSHD, binary);
            await fsp.chmod(binary, 0o755);
          }
          return sshKeygen(rt.hostKey, rt.def.name);
        }),
      ),
    );
    const userKey = await userKeyPromise;
    const authorizedKeys = path.join(dir, "authorized_keys");
    await fsp.writeFile(authorizedKeys, `${userKey}\n`, { mode: 0o644 });
    // sshd's privilege-separation directory; the package creates it only when its service starts.
    await fsp.mkdir("/run/sshd", { recursive: true, mode: 0o755 });

    current = "bridge and links";
    bridgeMade = true;
    const netnsOf = (name: string) => runtimes.find((rt) => rt.def.name === name)!.host.netns;
    // A host behind a jump host is linked into the jump host's namespace, not to the bridge.
    await ipBatch([
      `link add ${bridge} type bridge`,
      `addr add ${gateway}/24 dev ${bridge}`,
      `link set ${bridge} up`,
      ...runtimes.map((rt) => `netns add ${rt.host.netns}`),
      ...runtimes.flatMap(({ host, def }) =>
        def.behind === undefined
          ? [
              `link add ${host.netns} type veth peer name eth0 netns ${host.netns}`,
              `link set ${host.netns} master ${bridge} up`,
            ]
          : [
              `link add ${host.netns} netns ${netnsOf(def.behind)} type veth peer name eth0 netns ${host.netns}`,
            ],
      ),
    ]);
    const privateGateway = `${PRIVATE_BASE}.${octet}.1`;

    const needsDpkg = defs.some((d) => d.dpkgStatus);
    const realDpkg = needsDpkg ? await fsp.readFile(DPKG_STATUS, "utf8") : "";

    await Promise.all(
      runtimes.map((rt) =>
        limit(async () => {
          const { def, host } = rt;
          try {
            const files = new Map(Object.entries(def.files ?? {}));
            if (def.dpkgStatus)
              files.set(DPKG_STATUS, { contents: def.dpkgStatus(realDpkg), mode: "0644" });
            if (def.maintenance) files.set(MAINTENANCE_MARKER, { contents: "", mode: "0644" });
            let rpmMounts: string[] = [];
            if (def.rpmPackages) {
              const db = path.join(rt.dir, "rpmdb");
              await buildRpmDatabase(def.rpmPackages, path.join(rt.dir, "rpmbuild"), db);
              // Debian's rpm keeps its database in ~/.rpmdb; RHEL's macros point at /var/lib/rpm.
              files.set("/etc/rpm/macros", { contents: "%_dbpath /var/lib/rpm\n", mode: "0644" });
              rpmMounts = [
                "mount -t tmpfs -o mode=0755 tmpfs /var/lib/dpkg",
                `mount --bind ${shq(db)} /var/lib/rpm`,
              ];
              rt.tmpfs.push("/var/lib/dpkg");
              rt.own.push({ at: "/var/lib/rpm", source: db });
            }
            // Writable directories first: a declared file is then bind-mounted over their view.
            const mounts = [
              ...(def.ownRoots
                ? [
                    ...(await privateOverlays(rt, OWN_ROOTS, "own")),
                    // A systemd host's boot makes its /run and /tmp private.
                    ...(def.systemd ? [] : privateTmpfs(rt, ["/tmp"], [dir, REPO_ROOT])),
                  ]
                : []),
              ...(await privateOverlays(rt, def.writable ?? [], "writable")),
              ...(await prepareFiles(rt, files)),
              ...rpmMounts,
            ];
            const keyword = (line: string) => line.trim().split(/\s+/)[0]!.toLowerCase();
            const own = new Set((def.sshdOptions ?? []).map(keyword));
            const defaults = [
              `ListenAddress ${host.address}:${host.port}`,
              `PidFile ${path.join(rt.dir, "sshd.pid")}`,
              `AuthorizedKeysFile ${authorizedKeys}`,
              `AllowUsers ${user}`,
              "UsePAM no",
              "StrictModes no",
              "PermitRootLogin no",
              "PasswordAuthentication no",
              "KbdInteractiveAuthentication no",
              "PubkeyAuthentication yes",
              "UseDNS no",
              "X11Forwarding no",
              "PrintMotd no",
              "PrintLastLog no",
              // Audits open many sessions at once; the default 10:30:100 drops some.
              "MaxStartups 200",
              "LogLevel ERROR",
              ...(rt.productionSshd ? [] : TEST_SSHD_SAVINGS.options),
            ];
            await fsp.writeFile(
              rt.sshdConfig,
              [
                ...defaults.filter((line) => !own.has(keyword(line))),
                ...(def.sshdOptions ?? []),
                "",
              ].join("\n"),
            );
            if (def.probeFilter !== undefined) {
              // The session's own command runs as usual; only what it prints is rewritten on the
              // way out.
              const wrapper = path.join(rt.dir, "probe-filter.sh");
              await fsp.writeFile(
                wrapper,
                `#!/bin/sh\n/bin/sh -c "$SSH_ORIGINAL_COMMAND" | ${def.probeFilter}\n`,
                { mode: 0o755 },
              );
              await fsp.appendFile(rt.sshdConfig, `ForceCommand ${wrapper}\n`);
            }

            const behindIt = runtimes.filter((other) => other.def.behind === def.name);
            const ipLines = [
              "link set lo up",
              `addr add ${host.address}/24 dev eth0`,
              "link set eth0 up",
              // A jump host: a bridge to the hosts behind it (nothing forwards beyond it).
              ...(behindIt.length
                ? [
                    `link add ${JUMP_BRIDGE} type bridge`,
                    `addr add ${privateGateway}/24 dev ${JUMP_BRIDGE}`,
                    `link set ${JUMP_BRIDGE} up`,
                    ...behindIt.map((p) => `link set ${p.host.netns} master ${JUMP_BRIDGE} up`),
                  ]
                : []),
            ];
            for (const r of def.routes ?? []) {
              // Each route is one line of `ip -batch`: a newline would smuggle in another command.
              if (/[\n\r]/.test(r)) throw new Error(`route must be one line: ${JSON.stringify(r)}`);
            }
            const routeLines = (def.routes ?? []).map(
              (r) =>
                `route add ${r.replaceAll("{gateway}", def.behind === undefined ? gateway : privateGateway)}`,
            );
            const script = [
              "set -eu",
              `ip -batch - <<'QM_EOF'\n${ipLines.join("\n")}\nQM_EOF`,
              ...Object.entries(def.sysctls ?? {}).map(
                ([k, v]) => `printf '%s\\n' ${shq(v)} > ${shq(sysctlPath(k))}`,
              ),
              ...(routeLines.length
                ? [`ip -batch - <<'QM_EOF'\n${routeLines.join("\n")}\nQM_EOF`]
                : []),
              ...mounts,
              ...(def.systemd
                ? [
                    ...(await systemdBoot(rt, [dir, REPO_ROOT], sshdCommand(rt))),
                    "echo ready",
                    `exec ${SYSTEMD} --system --unit=${SYSTEMD_TARGET} --log-target=console </dev/null >>${shq(path.join(rt.dir, "systemd.log"))} 2>&1`,
                  ]
                : [
                    "echo ready",
                    // The anchor holds the host's mount namespace for sshd, listeners and exec().
                    "exec sleep infinity </dev/null >/dev/null 2>&1",
                  ]),
            ].join("\n");
            const setup = path.join(rt.dir, "setup.sh");
            await fsp.writeFile(setup, script + "\n");
            // A systemd host is its own pid namespace; --kill-child takes systemd down with the
            // anchor.
            const unshare = def.systemd
              ? [
                  "unshare",
                  "--pid",
                  "--fork",
                  "--kill-child",
                  "--mount",
                  "--mount-proc",
                  "--uts",
                  "--propagation",
                  "private",
                ]
              : ["unshare", "-m", "--propagation", "private"];
            rt.anchor = spawn(
              "ip",
              [
                "netns",
                "exec",
                host.netns,
                "setpriv",
                "--pdeathsig",
                "KILL",
                ...unshare,
                "sh",
                setup,
              ],
              {
                stdio: ["ignore", "pipe", "pipe"],
              },
            );
            rt.anchor.unref();
            await waitReady(rt.anchor, "namespace setup", readyTimeoutMs);
            if (def.systemd) rt.pid1 = await findPid1(rt.anchor.pid!, Date.now() + readyTimeoutMs);

            const state = def.state ?? "up";
            const listeners = [...(def.listeners ?? [])];
            for (const l of listeners) {
              if (!/^(tcp|udp)\/\d{1,5}$/.test(l))
                throw new Error(`listener must look like tcp/8080 or udp/53: ${l}`);
            }
            if (state === "hang") listeners.push("tcp/22");
            if (listeners.length) {
              rt.listener = spawn(
                "setpriv",
                [
                  "--pdeathsig",
                  "KILL",
                  "nsenter",
                  "-t",
                  String(rt.anchor.pid),
                  "-m",
                  "-n",
                  process.execPath,
                  "-e",
                  LISTENER_SCRIPT,
                  JSON.stringify(listeners),
                ],
                { stdio: ["ignore", "pipe", "pipe"] },
              );
              rt.listener.unref();
              await waitReady(rt.listener, "listener", readyTimeoutMs);
            }

            // A systemd host's sshd is its qm-sshd.service.
            if (state === "up" && !def.systemd) startSshd(rt);
            if (state === "drop-first")
              await waitReady(startSshd(rt, true), "drop-first stand-in", readyTimeoutMs);
          } catch (err) {
            throw new Error(`test host ${def.name}: ${(err as Error).message}`, { cause: err });
          }
        }),
      ),
    );

    const deadline = Date.now() + readyTimeoutMs;
    await Promise.all(
      runtimes
        .filter((rt) => (rt.def.state ?? "up") === "up")
        .map(async (rt) => {
          try {
            await waitForSshd(rt, deadline);
          } catch (err) {
            const log = await fsp.readFile(rt.sshdLog, "utf8").catch(() => "");
            throw new Error(`test host ${rt.def.name}: ${(err as Error).message} ${log.trim()}`, {
              cause: err,
            });
          }
        }),
    );

    const knownHosts = path.join(dir, "known_hosts");
    await fsp.writeFile(
      knownHosts,
      runtimes
        .map((rt, i) => `${rt.host.address} ${hostKeys[i]!.split(" ").slice(0, 2).join(" ")}\n`)
        .join(""),
    );
    const sshConfig = path.join(dir, "ssh_config");
    // A jump host answers to its address too: a `user@address:port` jump finds its key here (the
    // jump's own ssh reads this file, never the first ssh's -o options).
    const isJump = (rt: HostRuntime) => runtimes.some((other) => other.def.behind === rt.def.name);
    await fsp.writeFile(
      sshConfig,
      runtimes
        .map((rt) =>
          [
            `Host ${rt.def.name}${isJump(rt) ? ` ${rt.host.address}` : ""}`,
            `  HostName ${rt.host.address}`,
            ...(rt.def.behind === undefined ? [] : [`  ProxyJump ${rt.def.behind}`]),
            `  Port ${rt.host.port}`,
            `  User ${user}`,
            `  IdentityFile "${identityFile}"`,
            "  IdentitiesOnly yes",
            `  UserKnownHostsFile "${knownHosts}"`,
            "  GlobalKnownHostsFile /dev/null",
            "  StrictHostKeyChecking yes",
            // Keep known_hosts exactly as written, so rotateHostKey stays detectable.
            "  UpdateHostKeys no",
            "  CheckHostIP no",
            "  BatchMode yes",
            "",
          ].join("\n"),
        )
        .join("\n"),
    );

    const byName = (name: string): HostRuntime => {
      const rt = runtimes.find((r) => r.def.name === name);
      if (!rt) throw new Error(`no test host named ${name}`);
      if (stopped) throw new Error(`fleet stopped; host ${name} is gone`);
      return rt;
    };

    const enter = (name: string): string[] => {
      const rt = byName(name);
      // A systemd host's commands run in its pid namespace too, where systemctl finds its systemd.
      const target =
        rt.pid1 !== undefined
          ? ["-t", String(rt.pid1), "-m", "-n", "-p"]
          : ["-t", String(rt.anchor!.pid), "-m", "-n"];
      return ["nsenter", ...target];
    };

    return {
      hosts: runtimes.map((rt) => rt.host),
      dir,
      sshConfig,
      knownHosts,
      identityFile,
      user,
      gateway,
      async rotateHostKey(name) {
        const rt = byName(name);
        const hadSshd = rt.sshd !== undefined;
        await stopChild(rt.sshd);
        await sshKeygen(rt.hostKey, name);
        if (rt.pid1 !== undefined) {
          await execa("nsenter", [
            "-t",
            String(rt.pid1),
            "-m",
            "-n",
            "-p",
            "systemctl",
            "restart",
            "qm-sshd.service",
          ]);
          await waitForSshBanner(rt.host.address, rt.host.port, Date.now() + readyTimeoutMs);
        } else if (hadSshd) {
          startSshd(rt);
          await waitForSshd(rt, Date.now() + readyTimeoutMs);
        }
      },
      async takeDown(name) {
        const rt = byName(name);
        if (rt.pid1 !== undefined) throw new Error(`takeDown: ${name} is a systemd host`);
        await stopChild(rt.sshd);
        rt.sshd = undefined;
      },
      async reboot(name) {
        const rt = byName(name);
        if (rt.pid1 !== undefined) throw new Error(`reboot: ${name} is a systemd host`);
        await stopChild(rt.sshd);
        // Minus the machine's uptime: the boot time its sessions see is now.
        const uptime = Number((await fsp.readFile("/proc/uptime", "utf8")).split(" ")[0]);
        rt.bootOffset = -Math.floor(uptime);
        startSshd(rt);
        await waitForSshd(rt, Date.now() + readyTimeoutMs);
      },
      enter,
      sshdLog: (name) => fsp.readFile(byName(name).sshdLog, "utf8").catch(() => ""),
      async writtenSince(name, marker) {
        const rt = byName(name);
        const found: string[] = [];
        for (const { at, source } of rt.own) {
          const { stdout } = await execa("find", [source, "-newer", marker, "-printf", "%y %p\n"]);
          for (const line of stdout.split("\n").filter(Boolean)) {
            const written = at + line.slice(2 + source.length);
            // An overlay makes a folder of the machine's anew (newer) for any write below it: such
            // a folder is told by what was written in it (a file made and removed leaves no trace).
            if (line[0] !== "d" || !fs.existsSync(written)) found.push(written);
          }
        }
        if (rt.tmpfs.length) {
          // Not into the folders kept from the machine (the fleet's own), nor into a mount of
          // another tmpfs.
          const [nsenter, ...target] = enter(name);
          const { stdout } = await execa(nsenter!, [
            ...target,
            ...["find", ...rt.tmpfs, "-xdev", "(", "-path", dir, "-o", "-path", REPO_ROOT, ")"],
            ...["-prune", "-o", "-newer", marker, "-print"],
          ]);
          found.push(...stdout.split("\n").filter(Boolean));
        }
        return [...new Set(found)].sort();
      },
      async exec(name, command) {
        const [nsenter, ...target] = enter(name);
        const { stdout } = await execa(nsenter!, [...target, "sh", "-c", command], {
          stripFinalNewline: false,
        });
        return stdout;
      },
      stop,
    };
  } catch (err) {
    await stop().catch(() => undefined);
    if (err instanceof Error && err.message.startsWith("test host ")) throw err;
    throw new Error(`test fleet (${current}): ${(err as Error).message}`, { cause: err });
  }
}
