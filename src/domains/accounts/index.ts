import * as z from "zod";
import { replaceAt } from "../../spec-path.js";
import { pathIn, within, type Domain, type Finding } from "../domain.js";
import { ADDED_LAST, accountsCause, accountsRecords } from "./cause.js";
import { FINGERPRINT } from "./keys.js";
import { loginShell, parseAccounts, type AccountsLive, type LiveUser } from "./parse.js";
import type { SudoEntry } from "./sudoers.js";
import { ACCOUNTS_AWK, accountsProbe } from "./probe.js";

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}\$?$/;
const NAME_WORDS = "a user or group name (letters, digits, _ . -, at most 32)";
const Name = z.string().regex(NAME, NAME_WORDS);
const Path = z.string().regex(/^\/[^:\n]*$/, "an absolute path without : or a newline");

const UserDeclared = z.strictObject({
  uid: z.number().int().min(0).max(4294967294).optional(),
  /** The primary group, by name. */
  group: Name.optional(),
  shell: Path.optional(),
  home: Path.optional(),
  /** The supplementary groups, exactly. */
  groups: z.array(Name).optional(),
  /** The fingerprints of ~/.ssh/authorized_keys, exactly, as `ssh-keygen -lf` prints them. */
  authorized_keys: z
    .array(
      z.string().regex(FINGERPRINT, 'a key fingerprint like "SHA256:" and 43 base64 characters'),
    )
    .optional(),
});
type UserDeclared = z.infer<typeof UserDeclared>;

/** Record keys checked here: zod would say only "Invalid key in record". */
const names = <T extends z.ZodType>(value: T) =>
  z.record(z.string(), value).superRefine((record, ctx) => {
    for (const key of Object.keys(record))
      if (!NAME.test(key))
        ctx.addIssue({ code: "custom", message: `${key}: ${NAME_WORDS}`, path: [key] });
  });

export const AccountsDeclared = z.strictObject({
  /** Users that must exist; with it, the allow-list of users who can log in. */
  users: names(UserDeclared).optional(),
  /** Groups and their members, exactly. */
  groups: names(z.array(Name)).optional(),
  /** Every sudoers entry sudo reads (rules, aliases, Defaults), exactly. */
  sudo: z.array(z.string().regex(/^[^\n]*\S[^\n]*$/, "one sudoers entry on one line")).optional(),
});
export type AccountsDeclared = z.infer<typeof AccountsDeclared>;

/** The key of the item counting the login users past the probe's bound. */
export const OTHER_LOGIN_USERS = "other login users";
const FIELDS = ["uid", "group", "shell", "home", "groups", "authorized_keys"] as const;

const entries = <T>(record: Record<string, T> | undefined): [string, T][] =>
  record ? Object.entries(record) : [];
const sudoRule = (text: string) => text.replace(/[ \t]+/g, " ").trim();
const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);

/** Group names by gid, and each user's supplementary groups, from the groups the host sent. */
function membership(live: AccountsLive) {
  const byGid = new Map<number, string>();
  const of = new Map<string, string[]>();
  for (const [name, group] of live.groups ?? []) {
    if (!byGid.has(group.gid)) byGid.set(group.gid, name);
    for (const member of group.members) of.set(member, [...(of.get(member) ?? []), name]);
  }
  return { byGid, of };
}

type Membership = ReturnType<typeof membership>;

/** A live user as a manifest declares it. */
function userValue(
  name: string,
  user: LiveUser,
  live: AccountsLive,
  { byGid, of }: Membership,
  keys: boolean,
) {
  const fingerprints = live.keys.get(name);
  // A gid no group the host sent names is shown as the number.
  return {
    uid: user.uid,
    group: byGid.get(user.gid) ?? String(user.gid),
    shell: user.shell,
    home: user.home,
    groups: [...(of.get(name) ?? [])].sort(),
    ...(keys && fingerprints && { authorized_keys: fingerprints }),
  };
}

/** What changed between two lists, in words: "added a, b; removed c". */
function listChange(declared: readonly string[], live: readonly string[]): string {
  const added = live.filter((x) => !declared.includes(x));
  const removed = declared.filter((x) => !live.includes(x));
  const words = (list: string[]) =>
    `${list.slice(0, 10).join(", ")}${list.length > 10 ? ", …" : ""}`;
  return [added.length && `added ${words(added)}`, removed.length && `removed ${words(removed)}`]
    .filter(Boolean)
    .join("; ");
}

/** A declared user against the host: missing, or each declared field that differs. */
function compareUser(
  name: string,
  want: UserDeclared,
  live: AccountsLive,
  groups: Membership,
): Finding[] {
  const user = live.users?.get(name);
  const path = pathIn(accounts, "users", name);
  if (!user)
    return [
      {
        key: `user:${name}`,
        declared: want,
        live: null,
        path,
        detail: "no such user in /etc/passwd",
      },
    ];
  const value = userValue(name, user, live, groups, true);
  return FIELDS.flatMap((field): Finding[] => {
    const wanted = want[field];
    const got = value[field];
    if (wanted === undefined || got === undefined) return [];
    const lists = Array.isArray(wanted) && Array.isArray(got);
    if (lists ? sameSet(wanted, got) : wanted === got) return [];
    const file = field === "authorized_keys" ? live.keyFiles.get(name) : undefined;
    return [
      {
        key: `user:${name}:${field}`,
        declared: wanted,
        live: got,
        path: [...path, field],
        ...(lists && { detail: `${listChange(wanted, got)}${file ? ` (${file})` : ""}` }),
      },
    ];
  });
}

/** The allow-list: every user who can log in and is not declared, and one item counting the rest. */
function unauthorizedUsers(
  declared: Record<string, UserDeclared>,
  live: AccountsLive,
  groups: Membership,
): Finding[] {
  const findings: Finding[] = [];
  for (const [name, user] of live.users ?? []) {
    if (Object.hasOwn(declared, name) || !loginShell(user.shell)) continue;
    const among = groups.of.get(name);
    findings.push({
      key: `user:${name}`,
      declared: null,
      live: userValue(name, user, live, groups, false),
      path: pathIn(accounts, "users", name),
      detail: `login shell ${user.shell || "/bin/sh"}, uid ${user.uid}${among ? `, in ${among.join(", ")}` : ""}${user.addedLast ? `; ${ADDED_LAST}` : ""}`,
    });
  }
  const rest = live.moreLoginUsers;
  if (rest > 0)
    findings.push({
      key: OTHER_LOGIN_USERS,
      declared: null,
      live: rest,
      path: pathIn(accounts, "users"),
      detail: `${rest} more users with a login shell than the probe sends`,
    });
  return findings;
}

/** Each entry sudo reads that is not declared (with where), and each declared entry it does not read. */
function compareSudo(declared: readonly string[], live: readonly SudoEntry[]): Finding[] {
  const wanted = new Set(declared.map(sudoRule));
  const where = new Map<string, string[]>();
  for (const entry of live)
    where.set(entry.rule, [...(where.get(entry.rule) ?? []), `${entry.file}:${entry.line}`]);
  const path = pathIn(accounts, "sudo");
  return [
    ...[...where]
      .filter(([rule]) => !wanted.has(rule))
      .map(([rule, places]) => ({
        key: `sudo:${rule}`,
        declared: null,
        live: rule,
        path,
        detail: `at ${places.slice(0, 5).join(", ")}${places.length > 5 ? ", …" : ""}`,
      })),
    ...[...wanted]
      .filter((rule) => !where.has(rule))
      .map((rule) => ({
        key: `sudo:${rule}`,
        declared: rule,
        live: null,
        path,
        detail: "in no sudoers file sudo reads",
      })),
  ];
}

export const accounts: Domain<AccountsDeclared, AccountsLive, "accounts"> = {
  name: "accounts",
  specPath: ["accounts"],
  schema: AccountsDeclared,
  severity: "high",
  onDrift: "ticket",
  keyPrefixes: ["user:", "group:", "sudo:"],
  remediation:
    "Remove an unauthorized user, group member, sudo right or authorized key and find out who added it; or accept the live state into accounts.",
  driftSentence(item, key, hosts) {
    if (key.includes("sudo:"))
      return item.declared === null
        ? `${key} is a sudo right on ${hosts} that accounts.sudo does not declare.`
        : `${key} is declared in accounts.sudo, but no sudoers file grants it on ${hosts}.`;
    if (item.declared === null)
      return `${key} can log in on ${hosts}, and accounts.users (the allow-list of users who can log in) does not declare it.`;
    if (item.live === null) return `${key} is declared in accounts but does not exist on ${hosts}.`;
    return `${key} on ${hosts} differs from its declaration in accounts.`;
  },
  declaredWords(item) {
    if (item.declared !== null) return undefined;
    return typeof item.live === "string" ? "not in accounts.sudo" : "not in accounts.users";
  },
  awk: ACCOUNTS_AWK,
  probe(declared, ctx) {
    if (!declared)
      return accountsProbe(
        { users: { names: [], groups: [] }, sudo: true, keys: [], all: true },
        ctx,
      );
    const users = entries(declared.users);
    const keys = users.filter(([, u]) => u.authorized_keys).map(([name]) => name);
    return accountsProbe(
      {
        ...((declared.users || declared.groups) && {
          users: { names: users.map(([name]) => name), groups: Object.keys(declared.groups ?? {}) },
        }),
        ...(declared.sudo && { sudo: true }),
        ...(keys.length > 0 && { keys }),
      },
      ctx,
    );
  },
  parse(output, ctx) {
    return parseAccounts(output, ctx);
  },
  compare(declared, live) {
    const findings: Finding[] = [];
    if (live.users) {
      const groups = membership(live);
      for (const [name, want] of entries(declared.users))
        findings.push(...compareUser(name, want, live, groups));
      if (declared.users) findings.push(...unauthorizedUsers(declared.users, live, groups));
      for (const [name, members] of entries(declared.groups)) {
        const group = live.groups?.get(name);
        // A group whose line the probe cut is not compared: its members are not all known.
        if (group?.cut || (group && sameSet(members, group.members))) continue;
        findings.push({
          key: `group:${name}`,
          declared: members,
          live: group?.members ?? null,
          path: pathIn(accounts, "groups", name),
          detail: group ? listChange(members, group.members) : "no such group in /etc/group",
        });
      }
    }
    if (declared.sudo && live.sudo) findings.push(...compareSudo(declared.sudo, live.sudo));
    return findings;
  },
  records: accountsRecords,
  cause: accountsCause,
  watchTargets(declared) {
    const keyed = entries(declared.users).filter(([, user]) => user.authorized_keys);
    return {
      paths: [
        "/etc/passwd",
        "/etc/group",
        ...(declared.sudo ? ["/etc/sudoers"] : []),
        ...keyed.flatMap(([, user]) => (user.home ? [`${user.home}/.ssh/authorized_keys`] : [])),
      ],
      directories: declared.sudo ? ["/etc/sudoers.d"] : [],
      // A sudoers include outside /etc/sudoers.d, and the keys of a home only the host names,
      // announce nothing here.
      polled: declared.sudo !== undefined || keyed.some(([, user]) => user.home === undefined),
    };
  },
  accept(declared, finding) {
    if (finding.key === OTHER_LOGIN_USERS) return declared;
    if (finding.key.startsWith("sudo:")) {
      const rule = finding.key.slice("sudo:".length);
      const sudo = declared.sudo ?? [];
      return {
        ...declared,
        sudo:
          finding.live === null
            ? sudo.filter((text) => sudoRule(text) !== rule)
            : sudo.some((text) => sudoRule(text) === rule)
              ? sudo
              : [...sudo, rule],
      };
    }
    const live = finding.live === null ? undefined : finding.live;
    return replaceAt(declared, within(this, finding.path), live);
  },
  snapshot(live) {
    const groups = membership(live);
    const users = live.users
      ? Object.fromEntries(
          [...live.users]
            .filter(([, user]) => loginShell(user.shell))
            .map(([name, user]) => [name, userValue(name, user, live, groups, true)]),
        )
      : undefined;
    // The groups sudo rights name (`%sudo`): who is in them holds those rights.
    const named = new Set(
      (live.sudo ?? []).flatMap((e) => [...e.rule.matchAll(/%:?([^\s,=:()]+)/g)].map((m) => m[1]!)),
    );
    const sudoGroups = Object.fromEntries(
      [...(live.groups ?? [])]
        .filter(([name]) => named.has(name))
        .map(([name, g]) => [name, g.members]),
    );
    return {
      ...(users && { users }),
      ...(Object.keys(sudoGroups).length > 0 && { groups: sudoGroups }),
      ...(live.sudo && { sudo: [...new Set(live.sudo.map((e) => e.rule))] }),
    };
  },
};
