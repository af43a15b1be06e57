import { ProbeParseError } from "../../errors.js";
import { partsByLabel, type ParseContext } from "../domain.js";
import { fingerprint } from "./keys.js";
import { MAX_FIELD_BYTES } from "./probe.js";
import { MAX_INCLUDE_DEPTH, sudoEntries, type SudoEntry } from "./sudoers.js";
import { utf8 } from "../../text/utf8.js";

// The accounts section, in up to three parts, each a line per record:
// - `passwd`: `P name:uid:gid:home:shell` (`Pn` for one missing from /etc/passwd-; declared users and users with a login shell; never the
//   password or GECOS field), `more N` (login users past the bound, not sent), `G name:gid:members`
//   (`G+` when the line was cut);
// - `sudoers`: `none` (no /etc/sudoers), `F path` (lines of that file follow, again after an
//   include returns), `L number text`, `U path` (not readable), `X deep|cycle path`, `X many`;
// - `keys`: `K hex(user) state path` (state `file`, `none`, `unreadable`, `link`), `K long` for a
//   login user whose name is longer than a field the probe sends, then for the files read
//   `k type blob path`, and `k+ path` for each key past the bound.

const SECTION = "accounts";

export interface LiveUser {
  uid: number;
  gid: number;
  home: string;
  shell: string;
  /** Not in /etc/passwd-: the latest change of /etc/passwd (or one after it) added it. */
  addedLast?: true;
}

export interface LiveGroup {
  gid: number;
  members: string[];
  /** The host's line was longer than the probe sends: its members are not all known. */
  cut?: true;
}

export interface AccountsLive {
  /** Declared users and those with a login shell, when the passwd part was read. */
  users?: Map<string, LiveUser>;
  /** Users with a login shell the probe did not send (past its bound). */
  moreLoginUsers: number;
  groups?: Map<string, LiveGroup>;
  /** The sudoers entries, when sudo's files were read; empty without /etc/sudoers. */
  sudo?: SudoEntry[];
  /** Each asked user's authorized key fingerprints, as far as read. */
  keys: Map<string, string[]>;
  /** Each asked user's authorized_keys file, where it was read. */
  keyFiles: Map<string, string>;
  /** Reasons for the parts the host could not show. */
  unknown: string[];
}

/** Shells that run no session: such a user cannot log in. */
const NO_LOGIN = new Set(["nologin", "false", "sync", "halt", "shutdown"]);
/** A user with this shell can log in: an empty shell is /bin/sh (passwd(5)). */
export const loginShell = (shell: string) => !NO_LOGIN.has(shell.replace(/^.*\//, ""));

const USER = /^P(n?) ([^:]*):(\d{1,10}):(\d{1,10}):([^:]*):([^:]*)$/;
const GROUP = /^G(\+?) ([^:]*):(\d{1,10}):([^:]*)$/;

function parsePasswd(text: string, live: AccountsLive): void {
  const users = new Map<string, LiveUser>();
  const groups = new Map<string, LiveGroup>();
  for (const line of text.split("\n")) {
    if (!line) continue;
    const user = USER.exec(line);
    const group = user ? null : GROUP.exec(line);
    const more = /^more (\d{1,10})$/.exec(line);
    if (user) {
      // The first line of a name is the one the system uses (getpwnam reads in order).
      const name = utf8(user[2]!);
      if (!users.has(name))
        users.set(name, {
          uid: Number(user[3]),
          gid: Number(user[4]),
          home: utf8(user[5]!),
          shell: utf8(user[6]!),
          ...(user[1] && { addedLast: true as const }),
        });
    } else if (group) {
      const name = utf8(group[2]!);
      if (groups.has(name)) continue;
      const members = group[4] ? utf8(group[4]).split(",").filter(Boolean) : [];
      groups.set(name, {
        gid: Number(group[3]),
        members: [...new Set(members)].sort(),
        ...(group[1] && { cut: true as const }),
      });
    } else if (more) live.moreLoginUsers = Number(more[1]);
    else throw new ProbeParseError(SECTION, `unexpected line "${line.slice(0, 100)}"`);
  }
  live.users = users;
  live.groups = groups;
}

function parseSudoers(text: string, live: AccountsLive): void {
  const entries: SudoEntry[] = [];
  // Lines of the file being read, sent again in pieces as includes return.
  let file: string | undefined;
  let lines: [number, string][] = [];
  const flush = () => {
    if (file !== undefined) entries.push(...sudoEntries(file, lines));
    lines = [];
  };
  const problems: string[] = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    const space = line.indexOf(" ");
    const [tag, rest] = space < 0 ? [line, ""] : [line.slice(0, space), line.slice(space + 1)];
    if (tag === "none" && !rest) continue;
    if (tag === "L") {
      const m = /^(\d{1,9}) (.*)$/s.exec(rest);
      if (!m || file === undefined)
        throw new ProbeParseError(SECTION, `unexpected line "${line.slice(0, 100)}"`);
      lines.push([Number(m[1]), m[2]!]);
      continue;
    }
    flush();
    if (tag === "F") file = utf8(rest);
    else if (tag === "U") problems.push(`${utf8(rest)} is not readable by the audit user`);
    else if (tag === "X" && rest.startsWith("deep "))
      problems.push(`more than ${MAX_INCLUDE_DEPTH} nested includes at ${utf8(rest.slice(5))}`);
    else if (tag === "X" && rest.startsWith("cycle "))
      problems.push(`${utf8(rest.slice(6))} includes itself`);
    else if (tag === "X" && rest === "many") problems.push("more lines than the probe reads");
    else throw new ProbeParseError(SECTION, `unexpected line "${line.slice(0, 100)}"`);
  }
  flush();
  if (problems.length)
    live.unknown.push(
      `sudo rights: ${problems.slice(0, 3).join("; ")}${problems.length > 3 ? "; …" : ""}${
        problems.some((p) => p.endsWith("audit user")) ? " (audit with ssh.become: sudo)" : ""
      }`,
    );
  else live.sudo = entries;
}

const MAX_KEYS = 100;

function parseKeys(text: string, live: AccountsLive): void {
  // authorized_keys path -> the users it was asked for.
  const files = new Map<string, string>();
  const keys = new Map<string, string[]>();
  for (const line of text.split("\n")) {
    if (!line) continue;
    if (line === "K long") {
      live.unknown.push(
        `authorized keys of a user whose name is over ${MAX_FIELD_BYTES} bytes: not read`,
      );
      continue;
    }
    const asked = /^K ((?:[0-9a-f]{2})+) (file|none|unreadable|link) (.*)$/s.exec(line);
    if (asked) {
      const [, user, state, path] = asked as unknown as [string, string, string, string];
      const name = Buffer.from(user, "hex").toString("utf8");
      if (state === "file") files.set(path, name);
      if (state === "file" || state === "none") keys.set(name, []);
      else
        live.unknown.push(
          state === "link"
            ? `authorized keys of ${name}: a symlink on the way to ${utf8(path)}, not followed`
            : `authorized keys of ${name}: ${utf8(path)} is not readable by the audit user (audit with ssh.become: sudo)`,
        );
      continue;
    }
    const key = /^k (\S+) (\S+) (.*)$/s.exec(line);
    const cut = key ? null : /^k\+ (.*)$/s.exec(line);
    const user = files.get((key ?? cut)?.[key ? 3 : 1] ?? "");
    if (user === undefined)
      throw new ProbeParseError(SECTION, `unexpected line "${line.slice(0, 100)}"`);
    const list = keys.get(user)!;
    const print = key ? fingerprint(key[1]!, key[2]!) : undefined;
    if (cut || list.length >= MAX_KEYS) {
      keys.delete(user);
      files.delete((key ?? cut)![key ? 3 : 1]!);
      live.unknown.push(`authorized keys of ${user}: more than ${MAX_KEYS} keys`);
    } else if (print && !list.includes(print)) list.push(print);
  }
  for (const [user, list] of keys) live.keys.set(user, list.sort());
  for (const [path, user] of files) if (live.keys.has(user)) live.keyFiles.set(user, utf8(path));
}

export function parseAccounts(output: string, ctx: ParseContext): AccountsLive {
  const live: AccountsLive = {
    moreLoginUsers: 0,
    keys: new Map(),
    keyFiles: new Map(),
    unknown: [],
  };
  const parts = partsByLabel(SECTION, ctx.parts(output));
  for (const [label, text] of parts)
    if (label === "passwd") parsePasswd(text, live);
    else if (label === "sudoers") parseSudoers(text, live);
    else if (label === "keys") parseKeys(text, live);
    else throw new ProbeParseError(SECTION, `unexpected part "${label.slice(0, 80)}"`);
  return live;
}
