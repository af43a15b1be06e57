import type { ProbeContext } from "../domain.js";
import { LINKED_COMPONENT } from "../no-follow.js";

// The accounts probe: functions of the shared awk over /etc/passwd and /etc/group; when sudo rights
// are declared, following sudoers' includes as sudo does; when authorized keys are declared, the
// shell's own `read` finding the users' homes in /etc/passwd (no process), then the shared awk
// reading their authorized_keys. Every part is filtered and bounded on the host: a passwd of
// 100,000 login users sends 400 of them and a count.

/** The copy of /etc/passwd useradd, usermod and vipw keep before each change they make. */
export const PASSWD_BACKUP = "/etc/passwd-";

/** Login users not declared that the probe sends at most; the rest it counts (the item counting them stays within the audit's 500 items a domain lists per node). */
export const MAX_LOGIN_USERS = 400;
const MAX_GROUPS = 1000;
const MAX_SUDO_LINES = 20_000;
const MAX_DIR_FILES = 1000;

// The rule of parse.ts's loginShell: a shell whose last component runs no session.
const NO_SESSION = ["nologin", "false", "sync", "halt", "shutdown"];
const LOGIN = `function accounts_login(s,   b) { b = s; sub(/.*\\//, "", b); return !(${NO_SESSION.map((n) => `b == "${n}"`).join(" || ")}) }`;
/** The lines of /etc/passwd the shell reads itself when looking for homes; grep filters the rest. */
const SHELL_READ_LINES = 100;
/** The bytes of a passwd or group field the probe sends at most. */
export const MAX_FIELD_BYTES = 1024;

// The shared awk's function over /etc/passwd, then /etc/group, each read with getline. Its values:
// the backup copy of passwd (when readable), the declared users, the declared groups, whether every
// group is sent, the most login users and groups sent. Never the password or GECOS field; every
// field cut at MAX_FIELD_BYTES, a group's members at 4096. A user missing from /etc/passwd- (when
// readable) is `Pn`: the file's latest change added it.
const PASSWD_AWK = [
  `function accounts_cut(s) { return substr(s, 1, ${MAX_FIELD_BYTES}) }`,
  "function accounts_passwd(  all, max, maxg, du, dg, old, nb, seen, sent, gid, np, ng, more, a, n, i, l, f, w, m) {",
  "all = qm_v[4] + 0; max = qm_v[5] + 0; maxg = qm_v[6] + 0",
  'n = split(qm_v[2], a, " "); for (i = 1; i <= n; i++) du[a[i]]; n = split(qm_v[3], a, " "); for (i = 1; i <= n; i++) dg[a[i]]',
  // The copy of passwd the shadow tools keep before their latest change (root's to read).
  'if (qm_v[1] != "") { while ((getline l < qm_v[1]) > 0) { nb++; sub(/:.*/, "", l); old[l] } close(qm_v[1]) }',
  'while ((getline l < "/etc/passwd") > 0) { if (split(l, f, ":") != 7 || f[3] !~ /^[0-9]+$/ || f[4] !~ /^[0-9]+$/ || (f[1] in seen)) continue; seen[f[1]]; if (!(f[1] in du) && !accounts_login(f[7])) continue; if (!(f[1] in du) && ++np > max) { more++; continue }; sent[f[1]]; gid[f[4]]; print (nb && !(f[1] in old) ? "Pn " : "P ") accounts_cut(f[1]) ":" f[3] ":" f[4] ":" accounts_cut(f[6]) ":" accounts_cut(f[7]) }',
  'close("/etc/passwd")',
  'while ((getline l < "/etc/group") > 0) { if (split(l, f, ":") != 4 || f[3] !~ /^[0-9]+$/) continue; w = all || (f[1] in dg) || (f[3] in gid); if (!w) { m = split(f[4], a, ","); for (i = 1; i <= m && !w; i++) if (a[i] in sent) w = 1 }; if (w && ++ng <= maxg) print (length(f[4]) > 4096 ? "G+ " : "G ") accounts_cut(f[1]) ":" f[3] ":" substr(f[4], 1, 4096) }',
  'close("/etc/group")',
  'if (more) print "more " more }',
].join("\n");

// sudoers(5): @include and @includedir (and their # forms), a relative path in the including
// file's folder, `%h` the short host name, a folder's files in sorted order skipping names ending
// in `~` or holding a `.`, at most 128 nested files. Blank and comment lines are not sent. Paths named in the files are the host's,
// read under the folder holding the top file's /etc (a test's tree). A function of the shared awk.
const SUDOERS_AWK = [
  "function accounts_shown(p) { return substr(p, length(accounts_root) + 1) }",
  'function accounts_dirname(p) { sub(/\\/[^\\/]*$/, "", p); return p }',
  'function accounts_host(   h, l) { if ((getline l < accounts_hn) > 0) h = l; close(accounts_hn); sub(/\\..*$/, "", h); return h }',
  'function accounts_target(arg, from,   i, c, p) { sub(/^[ \\t]*[@#]include(dir)?[ \\t]+/, "", arg); p = ""',
  '  if (arg ~ /^"/) { arg = substr(arg, 2); sub(/".*$/, "", arg); p = arg }',
  '  else for (i = 1; i <= length(arg); i++) { c = substr(arg, i, 1); if (c == "\\\\") { i++; p = p substr(arg, i, 1) } else if (c == " " || c == "\\t") break; else p = p c }',
  "  if (p ~ /%h/) gsub(/%h/, accounts_host(), p)",
  '  return p ~ /^\\// ? accounts_root p : accounts_dirname(from) "/" p }',
  'function accounts_listdir(d, depth,   q, cmd, f, n, i, names) { q = d; gsub(/\\047/, "\\047\\\\\\\\\\047\\047", q); cmd = "ls -1p -- \\047" q "\\047 2>/dev/null"',
  `  while ((cmd | getline f) > 0) if (f !~ /[.\\/]/ && f !~ /~$/ && n < ${MAX_DIR_FILES}) names[++n] = f; close(cmd)`,
  '  for (i = 1; i <= n; i++) accounts_readf(d "/" names[i], depth) }',
  "function accounts_readf(p, depth,   l, n, r) {",
  '  if (depth > 128) { print "X deep " accounts_shown(p); return }',
  '  if (p in accounts_open) { print "X cycle " accounts_shown(p); return }',
  '  r = (getline l < p); if (r < 0) { print "U " accounts_shown(p); return }',
  '  accounts_open[p]; print "F " accounts_shown(p)',
  `  while (r > 0) { if (++accounts_total > ${MAX_SUDO_LINES}) { if (!accounts_many++) print "X many"; break }`,
  '    if (++n && l !~ /^[ \\t]*$/ && (l !~ /^[ \\t]*#/ || l ~ /^[ \\t]*#([0-9]|include)/)) print "L " n " " substr(l, 1, 4096)',
  '    if (l ~ /^[ \\t]*[@#]includedir[ \\t]/) { accounts_listdir(accounts_target(l, p), depth + 1); print "F " accounts_shown(p) }',
  '    else if (l ~ /^[ \\t]*[@#]include[ \\t]/) { accounts_readf(accounts_target(l, p), depth + 1); print "F " accounts_shown(p) }',
  "    r = (getline l < p) }",
  "  close(p); delete accounts_open[p] }",
  // The top file names the tree: its path less `/etc/sudoers`.
  'function accounts_sudoers(  top) { top = "/etc/sudoers"; accounts_root = substr(top, 1, length(top) - 12); accounts_hn = accounts_root "/proc/sys/kernel/hostname"; accounts_readf(top, 1) }',
].join("\n");

// The shared awk's function over the authorized_keys files (its values): the key type and blob of
// each key line, never its options or comment; at most 100 per file.
const KEYS_AWK = [
  "function accounts_keys(  i, f, l, c, x, n, j) { for (i = 1; i <= qm_vn; i++) { f = qm_v[i]; c = 0",
  '  while ((getline l < f) > 0) { if (l ~ /^[ \\t]*#/) continue; n = split(l, x, " ")',
  '    for (j = 1; j < n; j++) if (x[j] ~ /^(ssh-(rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh[.]com|sk-ecdsa-sha2-nistp256@openssh[.]com)(-cert-v01@openssh[.]com)?$/ && x[j + 1] ~ /^[A-Za-z0-9+\\/]+=*$/ && length(x[j + 1]) <= 16384) { if (++c > 100) { if (c == 101) print "k+ " f } else print "k " x[j] " " x[j + 1] " " f } }',
  "  close(f) } }",
].join("\n");

/** The accounts section's functions of the shared awk. */
export const ACCOUNTS_AWK = [LOGIN, PASSWD_AWK, SUDOERS_AWK, KEYS_AWK].join("\n");

export interface AccountsAsk {
  /** Read passwd and group: the declared users and groups (the allow-list reads every login user). */
  users?: { names: string[]; groups: string[] };
  sudo?: boolean;
  /** Users whose authorized keys are read. */
  keys?: string[];
  /** A snapshot: every group, the login users' keys. */
  all?: boolean;
}

/**
 * grep's options passing on the passwd lines the homes loop may take (a superset: the loop
 * decides): a snapshot's every line but those of seven fields whose shell runs no session; else
 * the lines starting with an asked name and `:`.
 */
function mayTake(ask: AccountsAsk, q: (value: string) => string): string {
  if (ask.all) return `-v -e ${q(`^([^:]*:){6}([^:]*/)?(${NO_SESSION.join("|")})$`)}`;
  const names = (ask.keys ?? []).map((name) => name.replaceAll(/[\\^$.*+?()[\]{}|]/g, "\\$&"));
  return `-e ${q(`^(${names.join("|")}):`)}`;
}

export function accountsProbe(ask: AccountsAsk, ctx: ProbeContext): string {
  const q = ctx.quote;
  const lines: string[] = [];
  if (ask.users) {
    lines.push(
      ctx.mark("passwd"),
      `qm_b=; [ -r ${PASSWD_BACKUP} ] && qm_b=${PASSWD_BACKUP}`,
      ctx.awk("accounts_passwd", {
        values: [
          '"$qm_b"',
          q(ask.users.names.join(" ")),
          q(ask.users.groups.join(" ")),
          ask.all ? "1" : "0",
          String(MAX_LOGIN_USERS),
          String(MAX_GROUPS),
        ],
      }),
    );
  }
  if (ask.sudo)
    lines.push(
      ctx.mark("sudoers"),
      `if [ -e /etc/sudoers ]; then ${ctx.awk("accounts_sudoers")}; else echo none; fi`,
    );
  if (ask.keys) {
    const total = ask.all ? MAX_LOGIN_USERS : new Set(ask.keys).size;
    // One passwd line's fields in `qm_u` to `qm_l`: a user asked for (a snapshot: one with a login
    // shell), seven fields (a shell holding `:` is an eighth), a name, an absolute home, the name's
    // first such line among those sent (the shell's `read` takes a last line without its newline);
    // stops once every asked user is found.
    const body = [
      ask.all
        ? `  case $qm_l in ${NO_SESSION.flatMap((s) => [s, `*/${s}`]).join("|")}) continue ;; esac`
        : `  case $qm_u in ${ask.keys.map(q).join("|")}) ;; *) continue ;; esac`,
      '  [ -n "$qm_u" ] || continue',
      "  case $qm_l in *:*) continue ;; esac",
      "  case $qm_d in /*) ;; *) continue ;; esac",
      '  case $qm_p in *":$qm_u:"*) continue ;; esac',
      "  qm_n=$((qm_n + 1))",
      `  if [ \${#qm_u} -gt ${MAX_FIELD_BYTES} ]; then echo 'K long'`,
      // The names sent, each at most MAX_FIELD_BYTES: a longer one is said, not sent.
      "  else qm_p=$qm_p$qm_u:; qm_f=$qm_r$qm_d/.ssh/authorized_keys",
      '    if qm_linked "$qm_f"; then qm_s=link',
      // Absent, or behind a folder the audit user may not search: then it may exist.
      '    elif [ ! -e "$qm_f" ]; then qm_s=none; qm_e=$qm_r$qm_d',
      '      if [ -e "$qm_e" ] && { [ ! -x "$qm_e" ] || { [ -e "$qm_e/.ssh" ] && [ ! -x "$qm_e/.ssh" ]; }; }; then qm_s=unreadable; fi',
      '    elif [ ! -f "$qm_f" ] || [ ! -r "$qm_f" ]; then qm_s=unreadable',
      '    else qm_s=file; set -- "$@" "$qm_f"; fi',
      // The name in hex, a byte at a time: printf's `'c` is the value of c's first byte.
      "    printf 'K '; qm_t=$qm_u",
      '    while [ -n "$qm_t" ]; do printf %02x "\'$qm_t"; qm_t=${qm_t#?}; done',
      '    printf \' %s %s\\n\' "$qm_s" "$qm_f"',
      "  fi",
      `  [ "$qm_n" -lt ${total} ] || break`,
      "done",
    ];
    const read = 'IFS=: read -r qm_u qm_pw qm_ui qm_gi qm_gc qm_d qm_l || [ -n "$qm_u" ]';
    const keys = `[ $# -gt 0 ] && ${ctx.awk("accounts_keys", { values: ['"$@"'] })}`;
    lines.push(
      ctx.mark("keys"),
      LINKED_COMPONENT,
      // The tree a test reads: the folder holding the passwd file's /etc.
      "qm_r=/etc/passwd; qm_r=${qm_r%/etc/passwd}",
      "set --",
      "qm_p=:; qm_n=0; qm_c=0",
      // The shell's `read` takes a byte per system call: its first SHELL_READ_LINES lines, then
      // (every asked user not yet found) the rest through grep, which passes on only the lines the
      // loop could take (the loop still decides), or through cat where there is no grep.
      "{",
      `while [ "$qm_c" -lt ${SHELL_READ_LINES} ] && { ${read}; }; do`,
      "  qm_c=$((qm_c + 1))",
      ...body,
      `if [ "$qm_c" -ge ${SHELL_READ_LINES} ] && [ "$qm_n" -lt ${total} ]; then`,
      `  { command -v grep >/dev/null && grep -a -E ${mayTake(ask, q)} || cat; } | { qm_u=`,
      `while ${read}; do`,
      ...body,
      keys,
      "}",
      `else ${keys}`,
      "fi",
      "} < /etc/passwd",
    );
  }
  lines.push("true");
  return lines.join("\n");
}
