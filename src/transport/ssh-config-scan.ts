import { readdir, readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { sshPatternsMatch } from "../glob.js";

/**
 * Keywords after which the ssh_config may route a node by rules not evaluated here: a block whose
 * match we would have to evaluate (Match), a name ssh rewrites by rules of its own
 * (CanonicalizeHostname). HostName, Port, ProxyJump and ProxyCommand under plain `Host` patterns
 * are read here (see `sshConfigHop`).
 */
const ROUTING = new Set(["match", "canonicalizehostname"]);

// ssh stops following Include at this depth; deeper is beyond what we scan.
const MAX_INCLUDE_DEPTH = 16;
// Files read for one configuration, Includes followed: past it, `ssh -G` answers (an Include that
// names its own folder's glob, or `Include a a a a`, would otherwise be read exponentially often).
const MAX_INCLUDED_FILES = 256;

/** A line a node's first hop depends on, under the `Host` patterns of its block (none: all). */
export interface HostSetting {
  patterns?: string[];
  keyword: "hostname" | "port" | "proxyjump" | "proxycommand";
  value: string;
}

/**
 * What one ssh_config file's text says: whether it may route, the Include paths it names, and its
 * HostName, Port, ProxyJump and ProxyCommand lines.
 */
export interface ConfigScan {
  routes: boolean;
  includes: string[];
  settings: HostSetting[];
}

// Host patterns and values evaluated here: no quotes, comments, `%` tokens or capitals (ssh
// compares a host name lowercased), else the answer is left to `ssh -G`.
const PLAIN_PATTERN = /^!?[a-z0-9.*?:_[\]-]+$/;
const PLAIN_HOSTNAME = /^[A-Za-z0-9.:_[\]-]+$/;
const PLAIN_PORT = /^[1-9]\d{0,4}$/;
// One jump of a ProxyJump list in the forms ssh's parse_ssh_uri and parse_user_host_port both
// accept the same way: a host of valid_domain's characters (no brackets, no trailing dot).
const PLAIN_JUMP =
  /^(?:ssh:\/\/)?(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*)(?::(\d+))?$/;
const isPort = (text: string | undefined) => PLAIN_PORT.test(text ?? "") && Number(text) <= 65535;

/** Whether a ProxyJump value is `none` or a comma list of plain jumps, each as ssh reads it. */
const plainJumps = (list: string) =>
  /^none$/i.test(list) ||
  list.split(",").every((jump) => {
    const port = PLAIN_JUMP.exec(jump)?.[2];
    return PLAIN_JUMP.test(jump) && (port === undefined || isPort(port));
  });

/**
 * A plain ProxyJump list as `ssh -G` prints it (readconf.c, dump_client_config): all but the last
 * jump as written, the last as parsed: `user@`, the host (bracketed when it is all digits and
 * dots) and `:port` when one was given.
 */
export function printedJumps(list: string): string {
  const comma = list.lastIndexOf(",");
  const last = list.slice(comma + 1);
  const match = PLAIN_JUMP.exec(last);
  if (!match) return list;
  const user = /^(?:ssh:\/\/)?([^@]*)@/.exec(last)?.[1];
  const host = /^[\d.]+$/.test(match[1]!) ? `[${match[1]}]` : match[1]!;
  const port = match[2] === undefined ? "" : `:${Number(match[2])}`;
  return `${list.slice(0, comma + 1)}${user === undefined ? "" : `${user}@`}${host}${port}`;
}

/** Whether a line's value is one this scan evaluates as ssh does. */
const PLAIN_VALUE: Record<HostSetting["keyword"], (value: string) => boolean> = {
  hostname: (value) => PLAIN_HOSTNAME.test(value),
  port: isPort,
  proxyjump: plainJumps,
  // Never evaluated, only found: a node whose first obtained jump it is asks `ssh -G`.
  proxycommand: (value) => value !== "" && !/["'\\]/.test(value),
};

/**
 * Scans an ssh_config text for the keywords that can change where a session starts. An Include
 * whose argument holds a quote, a `%` token or a `${}` variable cannot be followed here: routes.
 * So does a HostName, Port, ProxyJump or ProxyCommand this scan does not read as ssh does, even
 * under a block no node is in: ssh checks a ProxyJump's syntax wherever it is.
 */
export function scanSshConfig(text: string): ConfigScan {
  const includes: string[] = [];
  const settings: HostSetting[] = [];
  // undefined before the first Host line; null under one whose patterns are not evaluated here.
  let patterns: string[] | null | undefined;
  for (const line of text.split("\n")) {
    // A keyword is followed by whitespace or `=`; case does not matter to ssh. A line read another
    // way (ssh takes a quoted keyword too: `"ProxyJump" bastion`) is left to ssh.
    if (/^\s*(#|$)/.test(line)) continue;
    const match = /^\s*([A-Za-z0-9]+)(?:\s*=\s*|\s+|$)(.*)$/.exec(line);
    if (!match) return { routes: true, includes, settings };
    const keyword = match[1]!.toLowerCase();
    const args = match[2]!.trim();
    if (ROUTING.has(keyword)) return { routes: true, includes, settings };
    if (keyword === "host") {
      const list = args.split(/\s+/);
      patterns = list.every((p) => PLAIN_PATTERN.test(p)) ? list : null;
    } else if (Object.hasOwn(PLAIN_VALUE, keyword)) {
      const known = keyword as HostSetting["keyword"];
      if (!PLAIN_VALUE[known](args) || patterns === null)
        return { routes: true, includes, settings };
      settings.push({ ...(patterns && { patterns }), keyword: known, value: args });
    } else if (keyword === "include") {
      if (/["'%$\\]/.test(args)) return { routes: true, includes, settings };
      includes.push(...args.split(/\s+/).filter(Boolean));
    }
  }
  return { routes: false, includes, settings };
}

/** A glob of `*` and `?` as a RegExp over one file name. */
const nameGlob = (glob: string) =>
  new RegExp(
    `^${glob
      .replace(/[.+^(){}[\]|]/g, "\\$&")
      .replace(/\*/g, ".*")
      .replace(/\?/g, ".")}$`,
  );

/**
 * The files an Include names, as ssh finds them: `~/` is the home directory, a relative path is
 * under `relativeTo`; `*` and `?` only in the last component. `undefined`: a pattern ssh could
 * expand and we cannot, so the caller treats the configuration as routing.
 */
async function includedFiles(
  pattern: string,
  relativeTo: string,
  homes: readonly string[],
): Promise<string[] | undefined> {
  const expanded = pattern.startsWith("~/")
    ? homes.map((home) => path.join(home, pattern.slice(2)))
    : [path.resolve(relativeTo, pattern)];
  const files: string[] = [];
  for (const file of expanded) {
    const dir = path.dirname(file);
    const base = path.basename(file);
    if (
      /[*?[]/.test(dir) ||
      base.includes("[") ||
      pattern.startsWith("~") !== pattern.startsWith("~/")
    )
      return undefined;
    if (!/[*?]/.test(base)) {
      files.push(file);
      continue;
    }
    const glob = nameGlob(base);
    const names = await readdir(dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT" || error.code === "ENOTDIR") return [];
      throw error;
    });
    files.push(...names.filter((name) => glob.test(name)).map((name) => path.join(dir, name)));
  }
  return files;
}

/** What a file and the files it includes set, in ssh's order; undefined: it may route. */
interface Scanned {
  settings: HostSetting[];
  /** Whether an Include was followed: its lines apply under the block it is in. */
  included: boolean;
}

/** What one configuration's scan has followed: the Include chain to this file, the files read. */
interface ScanWalk {
  chain: ReadonlySet<string>;
  read: { files: number };
}

/**
 * This file's and its included files' settings; a missing file says nothing. A file including
 * itself (ssh then fails: "Too many recursive configuration includes") and a configuration of more
 * files than we read are left to `ssh -G`.
 */
async function scanFile(
  file: string,
  relativeTo: string,
  homes: readonly string[],
  walk: ScanWalk = { chain: new Set(), read: { files: 0 } },
): Promise<Scanned | undefined> {
  if (walk.chain.has(file) || ++walk.read.files > MAX_INCLUDED_FILES) return undefined;
  const depth = walk.chain.size;
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // ssh skips a missing file (and a directory an Include glob matched); anything else it may read.
    return code === "ENOENT" || code === "EISDIR" ? { settings: [], included: false } : undefined;
  }
  const scan = scanSshConfig(text);
  if (scan.routes) return undefined;
  if (scan.includes.length > 0 && depth >= MAX_INCLUDE_DEPTH) return undefined;
  const scanned = { settings: scan.settings, included: scan.includes.length > 0 };
  for (const pattern of scan.includes) {
    const files = await includedFiles(pattern, relativeTo, homes);
    if (!files) return undefined;
    for (const included of files) {
      const inner = await scanFile(included, relativeTo, homes, {
        chain: new Set([...walk.chain, file]),
        read: walk.read,
      });
      if (!inner) return undefined;
      scanned.settings.push(...inner.settings);
    }
  }
  return scanned;
}

/** Where ssh looks: its own files, or the one `-F` names (which replaces both). */
export interface SshConfigFiles {
  /** `--ssh-config FILE`. */
  configFile?: string;
  /** The system-wide file, read when no `-F` is given. */
  systemFile?: string;
  /** Home directories `~/.ssh/config` may be under. */
  homes?: readonly string[];
}

/**
 * What `ssh -G` prints for the settings a node's first hop depends on: `proxyjump` absent when no
 * jump applies (`none`, or none at all).
 */
export interface HopSettings {
  hostname: string;
  port: number;
  proxyjump?: string;
}

/**
 * A node's hop settings as ssh would resolve them, given its `-o Port` and `-o ProxyJump` (the
 * manifest's); undefined: ask `ssh -G`.
 */
export type HopResolver = (
  host: string,
  port: number | undefined,
  proxyJump: string | undefined,
) => HopSettings | undefined;

/**
 * How the ssh configuration in effect resolves a node's hop settings without starting ssh, or
 * undefined when it may send a node elsewhere by rules not read here (a Match, an Include whose
 * lines would apply under a block, any doubt such as an unreadable file). ssh takes the first value
 * it obtains for a keyword: a `-o` option first, then the files in order, a line applying when it
 * is before any `Host` or under a `Host` line whose patterns take the host. ProxyJump and
 * ProxyCommand are one setting to it (readconf.c: a ProxyJump sets ProxyCommand to none, a
 * ProxyCommand is skipped once a jump is set, `ProxyJump none` included): a node whose first one
 * is a ProxyCommand is left to `ssh -G`. ssh finds `~` from the password database, a shell from
 * `$HOME`: both are scanned when they differ, and then only a configuration that sets none of
 * these keywords is resolved here.
 */
export async function sshConfigHop(files: SshConfigFiles = {}): Promise<HopResolver | undefined> {
  const homes = files.homes ?? [...new Set([os.userInfo().homedir, os.homedir()])];
  const userDirs = homes.map((home) => path.join(home, ".ssh"));
  const scans: (Scanned | undefined)[] = [];
  try {
    if (files.configFile)
      scans.push(await scanFile(path.resolve(files.configFile), userDirs[0]!, homes));
    else {
      for (const dir of userDirs) scans.push(await scanFile(path.join(dir, "config"), dir, homes));
      const system = files.systemFile ?? "/etc/ssh/ssh_config";
      scans.push(await scanFile(system, path.dirname(system), homes));
    }
  } catch {
    return undefined;
  }
  if (scans.some((scan) => !scan)) return undefined;
  const settings = scans.flatMap((scan) => scan!.settings);
  const jumpOf = (proxyJump: string) =>
    /^none$/i.test(proxyJump) ? {} : { proxyjump: printedJumps(proxyJump) };
  if (settings.length === 0)
    return (host, port, proxyJump) => ({
      hostname: host.toLowerCase(),
      port: port ?? 22,
      ...(proxyJump !== undefined && jumpOf(proxyJump)),
    });
  if (scans.some((scan) => scan!.included) || (!files.configFile && userDirs.length > 1))
    return undefined;
  const applyingTo = settingsByHost(settings);
  return (host, port, proxyJump) => {
    if (/[A-Z]/.test(host)) return undefined;
    const applying = applyingTo(host);
    const first = (keyword: HostSetting["keyword"]) =>
      applying.find((s) => s.keyword === keyword)?.value;
    const proxy = applying.find((s) => s.keyword === "proxyjump" || s.keyword === "proxycommand");
    if (proxyJump === undefined && proxy?.keyword === "proxycommand") return undefined;
    const jump = proxyJump ?? proxy?.value;
    return {
      hostname: (first("hostname") ?? host).toLowerCase(),
      port: port ?? Number(first("port") ?? 22),
      ...(jump !== undefined && jumpOf(jump)),
    };
  };
}

/**
 * The settings that apply to a host, in file order. A configuration written by a tool often has a
 * `Host` block per node: a line under patterns that are all plain names (no `*`, `?` or `!`) is
 * found by the host's name, and only the others' patterns are tried, not every block's for every
 * node (a fleet's length times the file's).
 */
function settingsByHost(settings: readonly HostSetting[]): (host: string) => HostSetting[] {
  const named = new Map<string, number[]>();
  const tried: number[] = [];
  settings.forEach(({ patterns }, index) => {
    if (!patterns || patterns.some((pattern) => /^!|[*?]/.test(pattern))) tried.push(index);
    else
      for (const name of new Set(patterns)) {
        const lines = named.get(name);
        if (lines) lines.push(index);
        else named.set(name, [index]);
      }
  });
  return (host) => {
    const byName = named.get(host) ?? [];
    const matched = tried.filter((index) => {
      const { patterns } = settings[index]!;
      return !patterns || sshPatternsMatch(patterns, host);
    });
    return [...byName, ...matched].sort((a, b) => a - b).map((index) => settings[index]!);
  };
}
