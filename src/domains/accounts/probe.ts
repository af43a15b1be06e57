import type { ProbeContext } from "../domain.js";
import { LINKED_COMPONENT } from "../no-follow.js";

// The accounts probe: one awk over /etc/passwd and /etc/group; when sudo rights are declared, one
// awk following sudoers' includes as sudo does; when authorized keys are declared, one awk finding
// the users' homes and one reading their authorized_keys. Every part is filtered and bounded on the
// host: a passwd of 100,000 login users sends 400 of them and a count.

/** The copy of /etc/passwd useradd, usermod and vipw keep before each change they make. */
export const PASSWD_BACKUP = "/etc/passwd-";

/** Login users not declared that the probe sends at most; the rest it counts (the item counting them stays within the audit's 500 items a domain lists per node). */
export const MAX_LOGIN_USERS = 400;
const MAX_GROUPS = 1000;
const MAX_SUDO_LINES = 20_000;
const MAX_DIR_FILES = 1000;

// The rule of parse.ts's loginShell: a shell whose last component runs no session.
const LOGIN =
  'function login(s,   b) { b = s; sub(/.*\\//, "", b); return !(b == "nologin" || b == "false" || b == "sync" || b == "halt" || b == "shutdown") }';

// Never the password or GECOS field; every field cut at 1024 bytes, a group's members at 4096. A
// user missing from /etc/passwd- (when readable) is `Pn`: the file's latest change added it.
const PASSWD_AWK = [
  'BEGIN { FS = ":"; n = split(qm_users, a, " "); for (i = 1; i <= n; i++) du[a[i]]; n = split(qm_groups, a, " "); for (i = 1; i <= n; i++) dg[a[i]]',
  // The copy of passwd the shadow tools keep before their latest change (root's to read).
  '  if (qm_b != "") while ((getline l < qm_b) > 0) { nb++; sub(/:.*/, "", l); old[l] } }',
  LOGIN,
  "function cut(s) { return substr(s, 1, 1024) }",
  'FILENAME == ARGV[1] { if (NF != 7 || $3 !~ /^[0-9]+$/ || $4 !~ /^[0-9]+$/ || ($1 in seen)) next; seen[$1]; if (!($1 in du) && !login($7)) next; if (!($1 in du) && ++np > qm_max) { more++; next }; sent[$1]; gid[$4]; print (nb && !($1 in old) ? "Pn " : "P ") cut($1) ":" $3 ":" $4 ":" cut($6) ":" cut($7); next }',
  'NF == 4 && $3 ~ /^[0-9]+$/ { w = qm_all || ($1 in dg) || ($3 in gid); if (!w) { m = split($4, a, ","); for (i = 1; i <= m && !w; i++) if (a[i] in sent) w = 1 }; if (w && ++ng <= qm_maxg) print (length($4) > 4096 ? "G+ " : "G ") cut($1) ":" $3 ":" substr($4, 1, 4096) }',
  'END { if (more) print "more " more }',
].join("\n");

// sudoers(5): @include and @includedir (and their # forms), a relative path in the including
// file's folder, `%h` the short host name, a folder's files in sorted order skipping names ending
// in `~` or holding a `.`, at most 128 nested files. Blank and comment lines are not sent. Paths named in the files are the host's,
// read under the folder holding the top file's /etc (a test's tree). All in BEGIN: stdin is never read.
const SUDOERS_AWK = [
  "function shown(p) { return substr(p, length(root) + 1) }",
  'function dirname(p) { sub(/\\/[^\\/]*$/, "", p); return p }',
  'function host(   h, l) { if ((getline l < hn) > 0) h = l; close(hn); sub(/\\..*$/, "", h); return h }',
  'function target(arg, from,   i, c, p) { sub(/^[ \\t]*[@#]include(dir)?[ \\t]+/, "", arg); p = ""',
  '  if (arg ~ /^"/) { arg = substr(arg, 2); sub(/".*$/, "", arg); p = arg }',
  '  else for (i = 1; i <= length(arg); i++) { c = substr(arg, i, 1); if (c == "\\\\") { i++; p = p substr(arg, i, 1) } else if (c == " " || c == "\\t") break; else p = p c }',
  "  if (p ~ /%h/) gsub(/%h/, host(), p)",
  '  return p ~ /^\\// ? root p : dirname(from) "/" p }',
  'function listdir(d, depth,   q, cmd, f, n, i, names) { q = d; gsub(/\\047/, "\\047\\\\\\\\\\047\\047", q); cmd = "ls -1p -- \\047" q "\\047 2>/dev/null"',
  `  while ((cmd | getline f) > 0) if (f !~ /[.\\/]/ && f !~ /~$/ && n < ${MAX_DIR_FILES}) names[++n] = f; close(cmd)`,
  '  for (i = 1; i <= n; i++) readf(d "/" names[i], depth) }',
  "function readf(p, depth,   l, n, r) {",
  '  if (depth > 128) { print "X deep " shown(p); return }',
  '  if (p in open) { print "X cycle " shown(p); return }',
  '  r = (getline l < p); if (r < 0) { print "U " shown(p); return }',
  '  open[p]; print "F " shown(p)',
  `  while (r > 0) { if (++total > ${MAX_SUDO_LINES}) { if (!many++) print "X many"; break }`,
  '    if (++n && l !~ /^[ \\t]*$/ && (l !~ /^[ \\t]*#/ || l ~ /^[ \\t]*#([0-9]|include)/)) print "L " n " " substr(l, 1, 4096)',
  '    if (l ~ /^[ \\t]*[@#]includedir[ \\t]/) { listdir(target(l, p), depth + 1); print "F " shown(p) }',
  '    else if (l ~ /^[ \\t]*[@#]include[ \\t]/) { readf(target(l, p), depth + 1); print "F " shown(p) }',
  "    r = (getline l < p) }",
  "  close(p); delete open[p] }",
  // The top file names the tree: its path less `/etc/sudoers`.
  'BEGIN { top = "/etc/sudoers"; root = substr(top, 1, length(top) - 12); hn = root "/proc/sys/kernel/hostname"; readf(top, 1); exit }',
].join("\n");

const HEX = [
  'BEGIN { FS = ":"; for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i; n = split(qm_users, a, " "); for (i = 1; i <= n; i++) w[a[i]] }',
  'function hex(s,   i, h) { h = ""; for (i = 1; i <= length(s); i++) h = h sprintf("%02x", ord[substr(s, i, 1)]); return h }',
].join("\n");
// The homes of the users whose keys are asked (for a snapshot, the first login users'), as
// `hex(name):home`: a home holds no `:` or newline, a name may hold anything else.
const HOMES_AWK = [
  HEX,
  LOGIN,
  `NF == 7 && !($1 in s) && $6 ~ /^\\// { s[$1]; if (($1 in w) || qm_all && login($7) && ++n <= ${MAX_LOGIN_USERS}) print hex($1) ":" $6 }`,
].join("\n");
// The key type and blob of each key line, never its options or comment; at most 100 per file.
const KEYS_AWK = [
  "FNR == 1 { c = 0 }",
  "/^[ \\t]*#/ { next }",
  '{ for (i = 1; i < NF; i++) if ($i ~ /^(ssh-(rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh[.]com|sk-ecdsa-sha2-nistp256@openssh[.]com)(-cert-v01@openssh[.]com)?$/ && $(i + 1) ~ /^[A-Za-z0-9+\\/]+=*$/ && length($(i + 1)) <= 16384) { if (++c > 100) { if (c == 101) print "k+ " FILENAME } else print "k " $i " " $(i + 1) " " FILENAME } }',
].join("\n");

export interface AccountsAsk {
  /** Read passwd and group: the declared users and groups (the allow-list reads every login user). */
  users?: { names: string[]; groups: string[] };
  sudo?: boolean;
  /** Users whose authorized keys are read. */
  keys?: string[];
  /** A snapshot: every group, the login users' keys. */
  all?: boolean;
}

export function accountsProbe(ask: AccountsAsk, ctx: ProbeContext): string {
  const q = ctx.quote;
  const lines: string[] = [];
  if (ask.users) {
    lines.push(
      ctx.mark("passwd"),
      `qm_b=; [ -r ${PASSWD_BACKUP} ] && qm_b=${PASSWD_BACKUP}`,
      `awk -v qm_b="$qm_b" -v qm_users=${q(ask.users.names.join(" "))} -v qm_groups=${q(ask.users.groups.join(" "))} -v qm_all=${ask.all ? 1 : 0} -v qm_max=${MAX_LOGIN_USERS} -v qm_maxg=${MAX_GROUPS} '${PASSWD_AWK}' /etc/passwd /etc/group`,
    );
  }
  if (ask.sudo)
    lines.push(
      ctx.mark("sudoers"),
      `if [ -e /etc/sudoers ]; then awk '${SUDOERS_AWK}' </dev/null; else echo none; fi`,
    );
  if (ask.keys) {
    lines.push(
      ctx.mark("keys"),
      LINKED_COMPONENT,
      // The tree a test reads: the folder holding the passwd file's /etc.
      "qm_r=/etc/passwd; qm_r=${qm_r%/etc/passwd}",
      `qm_h=$(awk -v qm_users=${q(ask.keys.join(" "))} -v qm_all=${ask.all ? 1 : 0} '${HOMES_AWK}' /etc/passwd)`,
      "set --",
      "while IFS=: read -r qm_u qm_d; do",
      '  [ -n "$qm_u" ] || continue',
      "  qm_f=$qm_r$qm_d/.ssh/authorized_keys",
      '  if qm_linked "$qm_f"; then qm_s=link',
      // Absent, or behind a folder the audit user may not search: then it may exist.
      '  elif [ ! -e "$qm_f" ]; then qm_s=none; qm_e=$qm_r$qm_d',
      '    if [ -e "$qm_e" ] && { [ ! -x "$qm_e" ] || { [ -e "$qm_e/.ssh" ] && [ ! -x "$qm_e/.ssh" ]; }; }; then qm_s=unreadable; fi',
      '  elif [ ! -f "$qm_f" ] || [ ! -r "$qm_f" ]; then qm_s=unreadable',
      '  else qm_s=file; set -- "$@" "$qm_f"; fi',
      '  printf \'K %s %s %s\\n\' "$qm_u" "$qm_s" "$qm_f"',
      "done <<EOF",
      "$qm_h",
      "EOF",
      `[ $# -gt 0 ] && awk '${KEYS_AWK}' "$@"`,
    );
  }
  lines.push("true");
  return lines.join("\n");
}
