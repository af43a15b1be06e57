// An inventory's extra ssh arguments (`ansible_ssh_common_args`) read as ssh reads them: split into
// words as Ansible splits them (shell quoting), then walked as ssh's getopt walks its argument
// vector, so a `-J` inside another option's value is that value, never a jump host. Only the jump
// host becomes a manifest key; ProxyJump is checked against ssh's own grammar and the manifest's.
import { PROXY_JUMP } from "../../manifest/schema.js";

/** ssh's options that take an argument (OpenSSH's getopt string, the letters before a colon). */
const WITH_ARGUMENT = new Set("bcDeEFiIJlLmoOpPQRSwWB");
/** ssh's options that take none. */
const FLAGS = new Set("1246AaCfGgKkMNnqsTtVvXxYy");

/** What ssh arguments say about the jump host. */
export interface SshArgs {
  /** The jump hosts, each as `[user@]host[:port]`; absent when none (or `none`) is set. */
  jump?: string;
  /** Why ssh, or the manifest, refuses the arguments. */
  problem?: string;
  /** They hold anything besides the jump host (ignored, and said). */
  rest: boolean;
}

/**
 * Words as a POSIX shell (and Python's shlex, which Ansible uses) splits them: blanks separate,
 * single quotes keep everything, double quotes keep all but `\` before `\ " $` and a backquote.
 */
export function shellWords(text: string): string[] | undefined {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) return undefined;
      word = (word ?? "") + text.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      word ??= "";
      for (i++; i < text.length && text[i] !== '"'; i++) {
        if (text[i] === "\\" && i + 1 < text.length && '\\"$`'.includes(text[i + 1]!)) i++;
        word += text[i];
      }
      if (i >= text.length) return undefined;
    } else if (c === "\\") {
      if (i + 1 >= text.length) return undefined;
      word = (word ?? "") + text[++i];
    } else word = (word ?? "") + c;
  }
  if (word !== undefined) words.push(word);
  return words;
}

const HOST_PORT = /^(?:\[([^\]]*)\]|([^:\[\]]*))(?::(\d*))?$/;

/**
 * One jump as ssh's parse_jump takes it (`[user@]host[:port]`, or `ssh://[user@]host[:port][/]`),
 * written `[user@]host[:port]`; a string says why ssh refuses it.
 */
function oneJump(text: string): { jump: string } | string {
  const uri = text.startsWith("ssh://");
  const body = uri ? text.slice("ssh://".length).replace(/\/$/, "") : text;
  const at = body.lastIndexOf("@");
  const user = at < 0 ? undefined : body.slice(0, at);
  const m = HOST_PORT.exec(body.slice(at + 1));
  if (user === "" || !m || (uri && m[1] !== undefined)) return `"${text}" is no [user@]host[:port]`;
  const host = m[1] !== undefined ? `[${m[1]}]` : m[2]!;
  if (host === "" || host === "[]") return `"${text}" names no host`;
  const port = m[3] ? Number(m[3]) : undefined;
  if (port !== undefined && !(port >= 1 && port <= 65535)) return `"${text}" has no port 1-65535`;
  return { jump: `${user === undefined ? "" : `${user}@`}${host}${port ? `:${port}` : ""}` };
}

/**
 * A ProxyJump value as ssh checks it: `none`, or jumps separated by commas. Written as the manifest
 * declares it, which ssh then reads the same; a string says why it cannot be.
 */
export function proxyJumpValue(value: string): { jump?: string } | string {
  if (value.toLowerCase() === "none") return {};
  const jumps: string[] = [];
  for (const part of value.split(",")) {
    if (part === "") return `"${value}" has an empty jump host`;
    const one = oneJump(part);
    if (typeof one === "string") return one;
    jumps.push(one.jump);
  }
  const jump = jumps.join(",");
  if (!PROXY_JUMP.test(jump))
    return `"${jump}" is a ProxyJump ssh takes, but the manifest takes only jump hosts each starting with a letter, digit or _ and holding letters, digits and . _ % - (a user of the same, an IPv6 address in brackets)`;
  return { jump };
}

/** `-o`'s argument: a keyword, then blanks or one `=` (blanks around it), then the value. */
const OPTION = /^\s*([A-Za-z]+)(?:\s*=\s*|\s+)([^]*)$/;

/**
 * ssh arguments read as ssh reads them: each option with an argument takes the rest of its word or
 * the next word; the first of ProxyJump (`-J`, `-o ProxyJump`) and ProxyCommand obtained wins, and
 * ssh refuses a second `-J`, or `-J` after a ProxyCommand.
 */
export function readSshArgs(text: string): SshArgs {
  const words = shellWords(text);
  if (words === undefined) return { problem: "has an unterminated quote or escape", rest: true };
  let jump: { jump?: string } | undefined;
  let command = false;
  let rest = false;
  let jFlag = false;
  const take = (value: string, fromJ: boolean): string | undefined => {
    if (fromJ && (jFlag || jump !== undefined))
      return "a second jump host option (ssh permits a single -J; use commas)";
    if (fromJ && command) return "-J with a ProxyCommand, which ssh refuses";
    jFlag ||= fromJ;
    const parsed = proxyJumpValue(value);
    if (typeof parsed === "string") return `ProxyJump ${parsed}`;
    if (jump === undefined && !command) jump = parsed;
    return undefined;
  };
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (!word.startsWith("-") || word === "-" || word === "--") {
      rest = true;
      continue;
    }
    for (let at = 1; at < word.length; at++) {
      const letter = word[at]!;
      if (FLAGS.has(letter)) {
        rest = true;
        continue;
      }
      if (!WITH_ARGUMENT.has(letter))
        return { problem: `has an option ssh does not know: -${letter}`, rest: true };
      const value = at + 1 < word.length ? word.slice(at + 1) : words[++i];
      if (value === undefined)
        return { problem: `has -${letter} without its argument`, rest: true };
      let problem: string | undefined;
      if (letter === "J") problem = take(value, true);
      else if (letter === "o") {
        const option = OPTION.exec(value);
        const keyword = option?.[1]!.toLowerCase();
        if (keyword === "proxyjump") problem = take(option![2]!, false);
        else {
          rest = true;
          if (keyword === "proxycommand" && jump === undefined) command = true;
        }
      } else rest = true;
      if (problem) return { problem, rest: true };
      break;
    }
  }
  return { ...(jump?.jump !== undefined && { jump: jump.jump }), rest };
}
