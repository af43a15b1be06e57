// An ssh_config read as OpenSSH's `ssh -G` resolves it: `Include` followed (relative to ~/.ssh,
// globs), `Host` patterns with `*`, `?` and `!`, `Match all|host|originalhost`, the first value
// obtained for a keyword kept, `%h` and `%%` expanded in HostName. Pure: files come from a source.

import { InventoryErrors } from "../../errors.js";
import { sshPatternsMatch } from "../../glob.js";
import { InventoryBuilder, type Inventory, type InventoryProblem } from "./model.js";

/** Where an ssh_config's `Include` finds its files: the edge that reads the disk. */
export interface SshConfigSource {
  /** The home directory `~` and relative Includes (under `~/.ssh`) stand for. */
  home: string;
  /** The files a glob names, sorted as glob(3) sorts them; none when nothing matches. */
  glob(pattern: string): string[];
  read(file: string): string;
}

/** One keyword line, where it was written. */
interface Directive {
  keyword: string;
  args: string[];
  file: string;
  line: number;
  /** An Include's files, each read into its directives. */
  included?: Directive[][];
}

/** A line that ssh would refuse, or that Quartermaster does not evaluate. */
export interface SshConfigProblem {
  file: string;
  line: number;
  message: string;
}

/** What a host alias resolves to: the settings a manifest's node and `ssh:` block can hold. */
export interface SshHostSettings {
  /** Lowercased, as ssh prints it; the alias itself when no HostName applies. */
  hostname: string;
  port?: number;
  user?: string;
  /** Absent when none applies, or when `none` or a ProxyCommand came first. */
  proxyjump?: string;
  /** As written (`~` and tokens unexpanded, as `ssh -G` prints them), duplicates dropped. */
  identityfiles: string[];
}

// ssh's READCONF_MAX_DEPTH: an Include nested deeper is refused.
const MAX_DEPTH = 16;

/**
 * A line's words as ssh's argv_split reads them: whitespace separates, double or single quotes
 * group, a backslash escapes a quote, a backslash or a space, and `#` at a word's start ends it.
 */
function words(text: string): string[] | { error: string } {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    while (i < text.length && /[ \t]/.test(text[i]!)) i++;
    if (i >= text.length || text[i] === "#") break;
    let word = "";
    let quote: string | undefined;
    for (; i < text.length; i++) {
      const c = text[i]!;
      if (c === "\\" && /["' \\]/.test(text[i + 1] ?? "")) word += text[++i];
      else if (quote) {
        if (c === quote) quote = undefined;
        else word += c;
      } else if (c === '"' || c === "'") quote = c;
      else if (c === " " || c === "\t") break;
      else word += c;
    }
    if (quote) return { error: "an unterminated quote" };
    out.push(word);
  }
  return out;
}

/**
 * A file's keyword lines; the keyword ends at whitespace or `=`, one `=` may follow it. A keyword
 * in double quotes is read without them, as ssh's strdelim reads it (`"ProxyJump" bastion`).
 */
function parseFile(
  file: string,
  text: string,
  source: SshConfigSource,
  depth: number,
  problems: SshConfigProblem[],
): Directive[] {
  const out: Directive[] = [];
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const m = /^[ \t]*(?:"([^"]*)"[ \t]*|([^ \t=]+)[ \t]*=?[ \t]*)(.*?)[ \t\r]*$/.exec(
      lines[index]!,
    );
    const keyword = m?.[1] ?? m?.[2];
    if (!m || keyword === undefined || keyword.startsWith("#")) continue;
    const line = index + 1;
    const args = words(m[3]!);
    if (!Array.isArray(args)) {
      problems.push({ file, line, message: args.error });
      continue;
    }
    const directive: Directive = { keyword: keyword.toLowerCase(), args, file, line };
    if (directive.keyword === "include") {
      if (depth >= MAX_DEPTH) {
        problems.push({ file, line, message: `Include nested deeper than ${MAX_DEPTH} files` });
        continue;
      }
      directive.included = args.flatMap((pattern) =>
        source
          .glob(includePath(pattern, source.home))
          .map((f) => parseFile(f, source.read(f), source, depth + 1, problems)),
      );
    }
    out.push(directive);
  }
  return out;
}

/** An Include's pattern as a path: `~` is the home, a relative one is under `~/.ssh`. */
const includePath = (pattern: string, home: string) =>
  pattern.startsWith("/")
    ? pattern
    : pattern === "~" || pattern.startsWith("~/")
      ? home + pattern.slice(1)
      : `${home}/.ssh/${pattern}`;

/** A config's directives, with the problems of its lines and included files. */
export interface SshConfig {
  directives: Directive[];
  problems: SshConfigProblem[];
}

/** An ssh_config's text and the files it includes, read into directives. */
export function parseSshConfig(file: string, text: string, source: SshConfigSource): SshConfig {
  const problems: SshConfigProblem[] = [];
  return { directives: parseFile(file, text, source, 0, problems), problems };
}

/** The aliases the config names one by one (`Host` words with no `*`, `?` or `!`), in order. */
export function sshConfigHosts(config: SshConfig): { name: string; line: number }[] {
  const out = new Map<string, number>();
  const visit = (directives: readonly Directive[]) => {
    for (const d of directives) {
      if (d.keyword === "host")
        for (const name of d.args) if (!/[*?!]/.test(name) && !out.has(name)) out.set(name, d.line);
      for (const file of d.included ?? []) visit(file);
    }
  };
  visit(config.directives);
  return [...out].map(([name, line]) => ({ name, line }));
}

const at = (d: Directive, message: string): SshConfigProblem => ({
  file: d.file,
  line: d.line,
  message,
});
const isPort = (n: number) => n >= 1 && n <= 65535;

/** HostName's tokens: `%h` the alias, `%%` a percent sign; ssh refuses any other. */
function expandHostName(value: string, alias: string): string | { error: string } {
  let out = "";
  for (let i = 0; i < value.length; i++) {
    if (value[i] !== "%") out += value[i];
    else if (value[i + 1] === "h") ((out += alias), i++);
    else if (value[i + 1] === "%") ((out += "%"), i++);
    else return { error: `HostName: unknown token %${value[i + 1] ?? ""}` };
  }
  return out;
}

/**
 * The settings `ssh -G ALIAS` gives, for the keywords a manifest can hold, or the problems on the
 * way (a bad port, a token ssh refuses, a `Match` criterion Quartermaster does not evaluate).
 */
export function resolveSshHost(
  config: SshConfig,
  alias: string,
): SshHostSettings | { problems: SshConfigProblem[] } {
  const problems: SshConfigProblem[] = [];
  const found = new Map<string, string>();
  const identityfiles: string[] = [];
  const hostname = () => found.get("hostname") ?? alias;
  const matchLine = (d: Directive): boolean => {
    let all = true;
    for (let i = 0; i < d.args.length; i++) {
      const criterion = d.args[i]!.toLowerCase();
      if (criterion === "all") continue;
      const negated = criterion.startsWith("!");
      const name = negated ? criterion.slice(1) : criterion;
      const list = d.args[++i]?.split(",");
      if ((name !== "host" && name !== "originalhost") || !list) {
        problems.push(at(d, `Match ${name}: not evaluated (only all, host, originalhost)`));
        return false;
      }
      const text = name === "host" ? hostname().toLowerCase() : alias;
      const hit = sshPatternsMatch(name === "host" ? list.map((p) => p.toLowerCase()) : list, text);
      if (hit === negated) all = false;
    }
    return all;
  };
  const apply = (d: Directive) => {
    const value = d.args[0];
    if (value === undefined) return;
    if (d.keyword === "identityfile") {
      if (!identityfiles.includes(value)) identityfiles.push(value);
    } else if (d.keyword === "proxyjump" || d.keyword === "proxycommand") {
      // ProxyJump and ProxyCommand exclude each other: the first obtained wins.
      if (!found.has("proxy")) found.set("proxy", d.keyword === "proxyjump" ? value : "none");
    } else if (d.keyword === "hostname" || d.keyword === "port" || d.keyword === "user") {
      if (found.has(d.keyword)) return;
      if (d.keyword === "hostname") {
        const expanded = expandHostName(value, alias);
        if (typeof expanded === "string") found.set("hostname", expanded);
        else problems.push(at(d, expanded.error));
      } else if (d.keyword === "port" && !(/^\d{1,5}$/.test(value) && isPort(Number(value))))
        problems.push(at(d, `Port ${JSON.stringify(value)} is no port`));
      else found.set(d.keyword, value);
    }
  };
  const walk = (directives: readonly Directive[], startActive: boolean, neverMatch: boolean) => {
    let active = startActive;
    for (const d of directives) {
      if (d.keyword === "host") active = !neverMatch && sshPatternsMatch(d.args, alias);
      else if (d.keyword === "match") active = !neverMatch && matchLine(d);
      else if (d.included) for (const file of d.included) walk(file, active, neverMatch || !active);
      else if (active) apply(d);
    }
  };
  walk(config.directives, true, false);
  if (problems.length) return { problems };
  const proxy = found.get("proxy");
  const port = found.get("port");
  const user = found.get("user");
  return {
    hostname: hostname().toLowerCase(),
    ...(port !== undefined && { port: Number(port) }),
    ...(user !== undefined && { user }),
    ...(proxy !== undefined && proxy.toLowerCase() !== "none" && { proxyjump: proxy }),
    identityfiles,
  };
}

/**
 * The aliases an ssh_config defines one by one, as an inventory: each host with what `ssh -G`
 * resolves for it (HostName, Port, User, ProxyJump) as the variables the adoption plan maps.
 * Identity files stay out: they are paths of this machine, left to the ssh config. Throws
 * InventoryErrors for a problem in an included file, naming that file.
 */
export function readSshConfigInventory(
  file: string,
  text: string,
  source: SshConfigSource,
): Inventory | { problems: InventoryProblem[] } {
  const config = parseSshConfig(file, text, source);
  const b = new InventoryBuilder("ssh-config");
  const problems = [...config.problems];
  for (const { name, line } of sshConfigHosts(config)) {
    const resolved = resolveSshHost(config, name);
    if ("problems" in resolved) {
      problems.push(
        ...resolved.problems.map((p) => ({ ...p, message: `host ${name}: ${p.message}` })),
      );
      continue;
    }
    const host = b.host(name, line);
    if (!host) continue;
    const set = (key: string, value: string | undefined) =>
      value !== undefined && host.vars.set(key, { value, line });
    set("ansible_host", resolved.hostname);
    set("ansible_user", resolved.user);
    set("ansible_port", resolved.port?.toString());
    set("ansible_ssh_common_args", resolved.proxyjump && `-o ProxyJump=${resolved.proxyjump}`);
  }
  const elsewhere = problems.find((p) => p.file !== file);
  if (elsewhere)
    throw new InventoryErrors(
      elsewhere.file,
      problems.filter((p) => p.file === elsewhere.file),
    );
  for (const p of problems) b.problem(p.line, p.message);
  return b.done();
}
