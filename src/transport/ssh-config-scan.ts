import { readdir, readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

/**
 * Keywords after which the ssh_config may route a node elsewhere than its own `host:port`: a jump
 * (ProxyJump, ProxyCommand), a block whose match we would have to evaluate (Match), a name ssh
 * rewrites so that two hosts may be one sshd (HostName, CanonicalizeHostname).
 */
const ROUTING = new Set(["proxyjump", "proxycommand", "match", "hostname", "canonicalizehostname"]);

// ssh stops following Include at this depth; deeper is beyond what we scan.
const MAX_INCLUDE_DEPTH = 16;

/** What one ssh_config file's text says: whether it may route, and the Include paths it names. */
export interface ConfigScan {
  routes: boolean;
  includes: string[];
}

/**
 * Scans an ssh_config text for the keywords that can change where a session starts. An Include
 * whose argument holds a quote, a `%` token or a `${}` variable cannot be followed here: routes.
 */
export function scanSshConfig(text: string): ConfigScan {
  const includes: string[] = [];
  for (const line of text.split("\n")) {
    // A keyword is followed by whitespace or `=`; case does not matter to ssh.
    const match = /^\s*([A-Za-z]+)(?:\s*=\s*|\s+|$)(.*)$/.exec(line);
    if (!match) continue;
    const keyword = match[1]!.toLowerCase();
    if (ROUTING.has(keyword)) return { routes: true, includes };
    if (keyword !== "include") continue;
    const args = match[2]!.trim();
    if (/["'%$\\]/.test(args)) return { routes: true, includes };
    includes.push(...args.split(/\s+/).filter(Boolean));
  }
  return { routes: false, includes };
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

/** Whether this file, or one it includes, may route; a missing file says nothing. */
async function fileRoutes(
  file: string,
  relativeTo: string,
  homes: readonly string[],
  depth: number,
): Promise<boolean> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // ssh skips a missing file (and a directory an Include glob matched); anything else it may read.
    return code !== "ENOENT" && code !== "EISDIR";
  }
  const scan = scanSshConfig(text);
  if (scan.routes) return true;
  if (scan.includes.length > 0 && depth >= MAX_INCLUDE_DEPTH) return true;
  for (const pattern of scan.includes) {
    const files = await includedFiles(pattern, relativeTo, homes);
    if (!files) return true;
    for (const included of files)
      if (await fileRoutes(included, relativeTo, homes, depth + 1)) return true;
  }
  return false;
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
 * Whether the ssh configuration in effect may send a node elsewhere than its own `host:port`.
 * ssh finds `~` from the password database, a shell from `$HOME`: both are scanned when they
 * differ. Any doubt (an unreadable file, an Include we cannot expand) answers yes.
 */
export async function sshConfigMayRoute(files: SshConfigFiles = {}): Promise<boolean> {
  const homes = files.homes ?? [...new Set([os.userInfo().homedir, os.homedir()])];
  const userDirs = homes.map((home) => path.join(home, ".ssh"));
  try {
    if (files.configFile)
      return await fileRoutes(path.resolve(files.configFile), userDirs[0]!, homes, 0);
    for (const dir of userDirs)
      if (await fileRoutes(path.join(dir, "config"), dir, homes, 0)) return true;
    const system = files.systemFile ?? "/etc/ssh/ssh_config";
    return await fileRoutes(system, path.dirname(system), homes, 0);
  } catch {
    return true;
  }
}
