import type { ProbeContext } from "../../domains/domain.js";
import type { RecordRequest } from "../../domains/host-record.js";
import { RPM_QUERY, RPM_QUERY_SETUP } from "../../domains/rpm-query.js";
import type { ProbeSection } from "../../probe/script.js";

// What the host recorded about changes, read in the audit's own round trip without root: the boot
// time, package transactions since the node's last audit (dpkg's and apt's logs; rpm's database),
// which package ships each declared file (with the digest it recorded), and the mtime and owner of
// each declared file and of what a domain asks for (an enablement link): what the domains' requests
// (`Domain.records`) name, nothing else of the host's records.

/** Shell variable holding the node's last audit (epoch seconds, or empty), set per node. */
export const SINCE_VARIABLE = "QM_SINCE";

/** At most this much of each log's tail is read: a log rotated past it records nothing. */
export const LOG_TAIL_BYTES = 1024 * 1024;
const DPKG_LOG = "/var/log/dpkg.log";
const HISTORY_LOG = "/var/log/apt/history.log";
// A log line is cut here: an apt Commandline naming hundreds of packages is not worth sending.
const LINE_CHARS = 300;

// The shared awk's function telling which package ships each declared path (and each match of a
// domain's globs). Its values: dpkg's status file (empty where there is none), then the paths; its
// input, the md5sums lines of the declared paths outside /etc. It prints `package md5 path` for each
// path dpkg's status lists among a package's Conffiles, then the md5sums lines, and keeps both: the
// packages they name join the wanted packages of `cause_logs` (a package named by its md5sums list,
// `/var/lib/dpkg/info/NAME[:ARCH].md5sums:…`, or its status), and `cause_md5` hashes again the
// declared files they name.
const OWNED = [
  "function cause_owned(  f, i, r, rs, t, n, o, j, x) { for (i = 2; i <= qm_vn; i++) f[qm_v[i]] = 1",
  // One record per package (`RS = ""`, restored before the main input's next line is read), and
  // only one holding `Conffiles:` read (`cause_conf`): those an earlier section's read of the
  // status kept (`causeSection`), else its own read's.
  'if (qm_v[1] != "") { if ((n = qm_kept(qm_v[1])) >= 0) { for (i = 1; i <= n; i++) t = cause_conf(qm_kr[qm_v[1], i], f, t) }',
  '  else { rs = RS; RS = ""; while ((getline r < qm_v[1]) > 0) if (index(r, "\\nConffiles:")) t = cause_conf(r, f, t); RS = rs; close(qm_v[1]) } }',
  'for (i = 1; i <= qm_in; i++) t = t "\\n" qm_i[i]',
  'if (t != "") print t; cause_own = t; n = split(t, x, "\\n")',
  'for (i = 1; i <= n; i++) { o = x[i]; sub(/ .*/, "", o); sub(/.*\\//, "", o); j = index(o, ".md5sums:"); if (j) o = substr(o, 1, j - 1)',
  '  if (o != "") { j = index(o, ":"); cause_pk = cause_pk " " (j ? substr(o, 1, j - 1) : o) } } }',
  // `t` and the lines of status record `r`'s conffiles among `f`: its package (dpkg writes
  // `Package:` first), then the conffile lines after `Conffiles:`, each ` PATH MD5`.
  'function cause_conf(r, f, t,  k, x, p, m, y, i) { k = index(r, "\\nConffiles:"); split(substr(r, 1, index(r, "\\n") - 1), x, " "); p = (x[1] == "Package:") ? x[2] : ""',
  '  m = split(substr(r, k + 11), y, "\\n"); for (i = 2; i <= m && substr(y[i], 1, 1) == " "; i++) { split(y[i], x, " "); if (x[1] in f) t = t (t == "" ? "" : "\\n") p " " x[2] " " x[1] } return t }',
  // Each declared path (its values) an owned line names (` /etc/x` in a status line, `  usr/bin/x`
  // in an md5sums line; a path that is a prefix of another matches too: one hash more, never one
  // less), hashed by one md5sum.
  "function cause_md5(  i, f, a, cmd, l) { for (i = 1; i <= qm_vn; i++) { f = qm_v[i]",
  '  if (index(cause_own, " " f) || index(cause_own, "  " substr(f, 2))) { a = f; gsub(/\\047/, "\\047\\\\\\\\\\047\\047", a); cmd = cmd " \\047" a "\\047" } }',
  '  if (cmd == "") return; cmd = "md5sum --" cmd " 2>/dev/null"; while ((cmd | getline l) > 0) print l; close(cmd) }',
].join("\n");

// dpkg.log and apt's history.log, each read by the shared awk's function itself (`cause_log`):
// dpkg.log lines since `s` (the last audit's local time, from `cause_clock`) that change a wanted
// package, or a declared conffile; then, under the apt-history mark, the history.log transactions
// since `s` in which one of those events (whose first 19 characters are the time) ran: when, which
// command, at whose request. Others are not sent: a log may hold thousands. One still open at the
// end (apt interrupted) counts from its start. Each log line costs as little as it can (a node's
// first audit reads all of dpkg.log): a function reading it would cost a call per line, so the loop
// reads it itself. A dpkg.log line before `s` is skipped on its first 19 characters, and one whose
// action (dpkg writes it from column 21, after the time) is never kept is skipped on that action's
// first five characters (`sk`): neither is split into fields. In an hourly audit the first is
// nearly all of the log; in a first audit the second is (`status`, most of any dpkg.log,
// `configure`, `trigproc`, `startup`). Last, the boot time from /proc/stat under the boot mark. Its
// values: whether configure steps are asked (`c`, since a last audit only), the wanted packages,
// the asked pattern, dpkg.log, history.log (empty where it cannot be read), how many declared paths
// follow, those paths, then the paths asked for `shippedSince`: values are lines, so a path keeps
// its backslashes (`awk -v` would read them as escapes).
const LOGS = [
  'function cause_mark() { if (!cause_m) printf "\\n%s mark %s\\n", qm_n, "apt-history"; cause_m = 1 }',
  "function cause_ran(from, to,  i) { for (i = 1; i <= cause_n; i++) if (cause_t[i] >= from && cause_t[i] <= to) return 1; return 0 }",
  "function cause_event(l) { print l; cause_t[++cause_n] = substr(l, 1, 19) }",
  // Where log `f` is read from: itself where it is at most LOG_TAIL_BYTES (its size from the
  // section's stat, `cause_clock`), else its last LOG_TAIL_BYTES through tail (rare: logrotate keeps
  // logs smaller; `cause_c` set, a command). In an audit with history (`e`, the last audit), a log
  // not modified since is not read at all: nothing was appended to it since.
  'function cause_log(f, e) { if (f == "" || (e != "" && (f in cause_mt) && cause_mt[f] + 0 < e + 0)) return ""',
  `  if ((f in cause_sz) && cause_sz[f] + 0 <= ${LOG_TAIL_BYTES}) { cause_c = 0; return f } cause_c = 1; return "tail -c ${LOG_TAIL_BYTES} -- \\047" f "\\047 2>/dev/null" }`,
  // The asked paths (`sp`), and those the asked pattern (`m`) matches, that the file list of a
  // package configured since (`cf`) names, as `PACKAGE PATH`, then that package's install or
  // upgrade line (`cause_u`), when one names a path: a package's list is PACKAGE:ARCH.list where
  // several architectures may be installed, else PACKAGE.list.
  "function cause_shipped(sp, m,  p, a, f, l, r, k) { for (p in cause_cf) { if (p !~ /^[a-z0-9][a-z0-9+.-]*(:[a-z0-9-]+)?$/) continue;",
  'a = p; sub(/:.*/, "", a); f = "/var/lib/dpkg/info/" p ".list"; k = 0',
  'if ((r = (getline l < f)) < 0) { f = "/var/lib/dpkg/info/" a ".list"; r = (getline l < f) }',
  'while (r > 0) { if ((l in sp) || (m != "" && l ~ m)) { print a, l; k = 1 } r = (getline l < f) } close(f)',
  "if (k && (p in cause_u)) print cause_u[p] } }",
  'function cause_logs(  s, c, m, w, f, sp, n, i, l, x, p, st, k, b, ks, src, sk, ev) { s = cause_s; c = (qm_v[1] != "" && s != ""); m = qm_v[3]',
  'n = split(qm_v[2] cause_pk, x, " "); for (i = 1; i <= n; i++) w[x[i]] = 1',
  'n = 6 + qm_v[6]; for (i = 7; i <= n; i++) f[qm_v[i]] = 1; ks = (i <= qm_vn || m != ""); for (; i <= qm_vn; i++) sp[qm_v[i]] = 1',
  // The configure steps (`configure`, ended by `status installed`) are kept only when asked (`c`).
  'sk[" trigp"]; sk[" start"]; if (!c) { sk[" statu"]; sk[" confi"] } ev["install"]; ev["upgrade"]; ev["remove"]; ev["purge"]',
  'if ((src = cause_log(qm_v[4], cause_e)) != "") { while ((cause_c ? (src | getline l) : (getline l < src)) > 0) {',
  'if (s != "" && substr(l, 1, 19) < s) continue',
  "if (substr(l, 20, 6) in sk) continue",
  'if (c && substr(l, 20, 8) == " status ") { if (split(l, x, " ") && x[4] == "installed") print l; continue }',
  'split(l, x, " ")',
  // Another package's install or upgrade is kept, for the paths it ships (`cause_shipped`).
  'if (x[3] in ev) { p = x[4]; sub(/:.*/, "", p); if (p in w) cause_event(l); else if (ks && x[3] ~ /^(install|upgrade)$/) cause_u[x[4]] = l; continue }',
  'if (x[3] == "conffile" && (x[4] in f)) { cause_event(l); continue }',
  // Every package's configure step and every conffile line, when asked (`c`).
  'if (c && (x[3] == "configure" || x[3] == "conffile")) { if (x[3] == "configure") cause_cf[x[4]] = 1; cause_event(l) } }',
  "close(src) }",
  "cause_mark()",
  'if (cause_n && (src = cause_log(qm_v[5], cause_e)) != "") { while ((cause_c ? (src | getline l) : (getline l < src)) > 0) {',
  'if (l ~ /^Start-Date: /) { split(l, x, " "); st = x[2] " " x[3]; k = (st >= s); b = "" }',
  `if (k && l ~ /^(Start-Date|Commandline|Requested-By): /) b = b substr(l, 1, ${LINE_CHARS}) "\\n"`,
  `if (k && l ~ /^End-Date: /) { split(l, x, " "); if (cause_ran(st, x[2] " " x[3])) printf "%s%s\\n", b, substr(l, 1, ${LINE_CHARS}); k = 0 } }`,
  'close(src); if (k && cause_ran(st, "9")) printf "%s", b }',
  'if (ks) { printf "\\n%s mark %s\\n", qm_n, "shipped"; cause_shipped(sp, m) }',
  'printf "\\n%s mark %s\\n", qm_n, "boot"; cause_boot() }',
  // The boot time (`btime` of /proc/stat).
  'function cause_boot(  l, x) { while ((getline l < "/proc/stat") > 0) if (l ~ /^btime /) { split(l, x, " "); print x[2] } close("/proc/stat") }',
].join("\n");
// The section's paths in the probe's one stat (`ProbeContext.stat`; its records in the shared awk's
// `qm_s*` arrays, ask `qm_v[2]`): /proc/self/ first, the stat process's own directory, whose time is
// now in the host's local time (its UTC offset `qm_so`), then the logs, then the paths the domains
// ask for, each as a link where it is one (an enablement link's own time is when it was made). The
// first record of each of those three is taken: the offset, each log's size and mtime (for
// `cause_log`); every other is kept as `%Y %U %n` for `cause_stat`, but one the host could not
// send on one line (`qm_sb`: a name holding a newline), which is that path's alone. Prints the clock:
// the host's local time of the last audit (its logs are written in local time), or `- -`, then the
// offset. The last audit's local time is placed with today's offset: across a DST change since, that
// is an hour off, so the logs' lines of an hour more or less are read; the parser places every log
// time with today's offset too, so a line sent is never placed before the last audit.
const STAT = [
  "function cause_clock(  r, p, o, t) { for (r = 1; r <= qm_sr; r++) { if (qm_sg[r] != qm_v[2] || qm_sb[r]) continue; p = qm_sn[r]",
  '  if (p == "/proc/self/" && o == "") o = qm_so[r]',
  `  else if ((p == "${DPKG_LOG}" || p == "${HISTORY_LOG}") && !(p in cause_sz)) { cause_sz[p] = qm_ss[r]; cause_mt[p] = qm_sy[r] }`,
  '  else cause_sl[++cause_sn] = qm_sy[r] " " qm_su[r] " " p }',
  'cause_e = qm_v[1]; if (o !~ /^[+-][0-9][0-9][0-9][0-9]$/) { print ""; return } if (cause_e == "") { print "- -", o; return }',
  't = cause_e + (substr(o, 1, 1) == "-" ? -1 : 1) * (substr(o, 2, 2) * 3600 + substr(o, 4, 2) * 60)',
  'if (cause_e !~ /^[0-9]+$/ || t < 0) { print ""; return } cause_s = cause_civil(t); print cause_s, o }',
  // Epoch seconds as `YYYY-MM-DD HH:MM:SS` (civil from days, H. Hinnant's; mawk 1.3.3 has no
  // strftime).
  "function cause_civil(t,  s, z, e, d, y, n, p, m) { s = t % 86400; z = (t - s) / 86400 + 719468",
  "  e = int(z / 146097); d = z - e * 146097; y = int((d - int(d / 1460) + int(d / 36524) - int(d / 146096)) / 365)",
  "  n = d - (365 * y + int(y / 4) - int(y / 100)); p = int((5 * n + 2) / 153); m = p < 10 ? p + 3 : p - 9",
  '  return sprintf("%04d-%02d-%02d %02d:%02d:%02d", y + e * 400 + (m <= 2), m, n - int((153 * p + 2) / 5) + 1, int(s / 3600), int(s % 3600 / 60), s % 60) }',
  "function cause_stat(  i) { for (i = 1; i <= cause_sn; i++) print cause_sl[i] }",
].join("\n");
/** The shared awk's functions of the cause section. */
export const CAUSE_AWK = [OWNED, STAT, LOGS].join("\n");
/** Asks which package ships the declared paths (and the globs' matches). */
const owns = (request: RecordRequest) =>
  (request.files ?? []).length > 0 || (request.globs ?? []).length > 0;

/**
 * The cause section. Where it asks which package ships a path, the records of dpkg's status
 * `cause_owned` reads are kept for it by an earlier section's read of the status (the packages
 * domain's): the status is read once.
 */
export function causeSection(request: RecordRequest, ctx: ProbeContext): ProbeSection {
  return {
    name: "cause",
    script: causeProbe(request, ctx),
    awk: CAUSE_AWK,
    ...(owns(request) && { keeps: { file: "/var/lib/dpkg/status", holding: "\nConffiles:" } }),
  };
}
// The declared paths, one per line in the environment's `qm_f` (never `awk -v`, which reads a
// backslash as an escape), as the keys of `f`.
const DECLARED_PATHS =
  'BEGIN { n = split(ENVIRON["qm_f"], l, "\\n"); for (i = 1; i <= n; i++) f[l[i]] = 1 }';

// rpm keeps no log, but each installed package's time and transaction (INSTALLTID): one line per
// installed instance of a declared package or of the owner of a declared file.
const RPM_PACKAGE = "%{NAME} %{INSTALLTIME} %{INSTALLTID} %{EPOCH}:%{VERSION}-%{RELEASE}";
// `rpm -qf` prints each owner's header, then every file of it with its digest: only the lines of
// declared paths are sent, each after its owner's header (a package may ship thousands of files).
const RPM_OWNED = [
  DECLARED_PATHS,
  "/^[^ \\/]+ [0-9]+ [0-9]+ [^ ]+ [^ ]+$/ { h = $0; next }",
  'h != "" && (substr($0, index($0, " ") + 1) in f) { print h, $0 }',
].join(" ");
// rpm's database, found as the packages domain finds it: no dpkg or apk database, and rpm's files.
const RPM_HOST =
  "[ ! -f /var/lib/dpkg/status ] && [ ! -f /lib/apk/db/installed ] && { [ -d /var/lib/rpm ] || [ -d /usr/lib/sysimage/rpm ]; } && command -v rpm >/dev/null 2>&1";

// /lib/apk/db/installed names each package (P:), then its directories (F:), each one's files (R:)
// and each file's checksum (Z:, `Q1` then the base64 of its sha1): the declared files' are sent.
const APK_OWNED = [
  DECLARED_PATHS,
  "/^P:/ { p = substr($0, 3); k = 0 }",
  "/^F:/ { d = substr($0, 3); k = 0 }",
  '/^R:/ { r = (d == "" ? "" : "/" d) "/" substr($0, 3); k = (r in f) }',
  "k && /^Z:Q1/ { print p, substr($0, 5), r; k = 0 }",
].join(" ");
// apk's database, found as the packages domain finds it: no dpkg database, apk's file.
const APK_HOST = "[ ! -f /var/lib/dpkg/status ] && [ -f /lib/apk/db/installed ]";

/**
 * Hashes again, with `tool`, each declared file that the owner lines in `$variable` name: only files
 * a package ships, whose digest it recorded. `patterns` are how a line names the file; a superset
 * (a path that is a prefix of another matches too): one hash more, never one less.
 */
function rehash(
  variable: string,
  tool: string,
  files: readonly string[],
  patterns: (file: string) => string[],
  q: (text: string) => string,
): string[] {
  return [
    "set --",
    ...files.map(
      (f) =>
        `case "$${variable}" in ${patterns(f)
          .map((p) => `*${q(p)}*`)
          .join("|")}) set -- "$@" ${q(f)};; esac`,
    ),
    `[ $# -eq 0 ] || ${tool} -- "$@" 2>/dev/null`,
  ];
}

/** At most this many matches of a domain's globs are looked up per node. */
export const MAX_GLOB_MATCHES = 500;

/**
 * Sets `"$@"` to the globs' existing matches, at most MAX_GLOB_MATCHES of them; or appends them to
 * `"$@"` (`append`, the probe's one stat's ask).
 */
const globMatches = (globs: readonly string[], append: boolean) => [
  append ? "qm_k=$#" : "set --",
  ...(globs.length
    ? [
        `for g in ${globs.join(" ")}; do [ -e "$g" ] && [ $# -lt ${append ? `$((qm_k + ${MAX_GLOB_MATCHES}))` : MAX_GLOB_MATCHES} ] && set -- "$@" "$g"; done`,
      ]
    : []),
];

/** `text` as an extended regular expression matching only itself. */
const ere = (text: string) => text.replace(/[.[\]*^$+?(){}|\\]/g, "\\$&");

/** The cause section's script: its paths in the probe's one `stat`, the shared awk, no root. */
export function causeProbe(request: RecordRequest, ctx: ProbeContext): string {
  const q = ctx.quote;
  const targets = {
    packages: request.packages ?? [],
    files: request.files ?? [],
    packagesByFile: request.packagesByFile ?? [],
    globs: request.globs ?? [],
    shippedSince: request.shippedSince ?? [],
    shippedMatching: request.shippedMatching ?? [],
  };
  const shipped = targets.shippedSince.length > 0 || targets.shippedMatching.length > 0;
  // Configure steps are read for their own sake, and to know whose file lists to read.
  const steps = request.steps || shipped;
  const stat = (request.stat ?? []).filter((s) => s.entries?.length !== 0);
  const files = targets.files.map(q).join(" ");
  // Debian policy keeps package files under /etc as conffiles; only paths elsewhere need the
  // (much larger) md5sums lists.
  const outsideEtc = targets.files.filter((f) => !f.startsWith("/etc/"));
  const entries = stat
    .map(({ under, entries = [] }) => [under, ...entries.map((e) => `${under}/${q(e)}`)].join(" "))
    .join(" ");
  const owning = owns(request);
  // Packages named after files (a kernel's after its image): shell builtins only.
  const byFile = targets.packagesByFile.map(
    ({ glob, strip, prefix }) =>
      `for f in ${glob}; do [ -e "$f" ] && pk="$pk ${prefix}\${f#${strip}}"; done`,
  );
  // Asked for the configure steps since the last audit alone: not read in a node's first audit.
  const stepsAlone = !(targets.packages.length || owning || byFile.length);
  const logs = !stepsAlone || steps;
  const asked = ctx.stat(
    [
      `set -- "$@" /proc/self/ ${logs ? `${DPKG_LOG} ${HISTORY_LOG} ` : ""}${files} ${entries}`,
      ...globMatches(targets.globs, true),
    ].join("\n"),
  );
  const lines = [
    ...globMatches(targets.globs, false),
    ctx.mark("clock"),
    ctx.awk("cause_clock", { values: [`"$${SINCE_VARIABLE}"`, asked] }),
  ];
  if (owning)
    lines.push(
      ctx.mark("owned"),
      "d=; [ -f /var/lib/dpkg/status ] && d=/var/lib/dpkg/status",
      ctx.awk("cause_owned", {
        values: ['"$d"', ...targets.files.map(q), '"$@"'],
        ...(outsideEtc.length > 0 && {
          input: `[ -d /var/lib/dpkg/info ] && grep -H -E ${outsideEtc.map((f) => `-e ${q(`^[0-9a-f]{32}  ${ere(f.slice(1))}$`)}`).join(" ")} /var/lib/dpkg/info/*.md5sums 2>/dev/null`,
        }),
      }),
      ctx.mark("md5"),
      ctx.awk("cause_md5", { values: targets.files.map(q) }),
    );
  if (owning || stat.length) lines.push(ctx.mark("stat"), ctx.awk("cause_stat"));
  if (logs)
    lines.push(
      ctx.mark("dpkg-log"),
      `pk=${q(targets.packages.join(" "))}`,
      ...byFile,
      `if ${stepsAlone ? `[ -n "$${SINCE_VARIABLE}" ] && ` : ""}[ -r ${DPKG_LOG} ]; then h=; [ -r ${HISTORY_LOG} ] && h=${HISTORY_LOG}`,
      ctx.awk("cause_logs", {
        values: [
          steps ? "1" : '""',
          '"$pk"',
          // The paths' patterns: a value is a line, so its backslashes reach the awk as written.
          q(targets.shippedMatching.map((r) => `(${r})`).join("|")),
          DPKG_LOG,
          '"$h"',
          String(targets.files.length),
          ...targets.files.map(q),
          ...targets.shippedSince.map(q),
        ],
      }),
      `else ${ctx.mark("apt-history")}; ${ctx.mark("boot")}`,
      ctx.awk("cause_boot"),
      "fi",
    );
  else lines.push(ctx.mark("boot"), ctx.awk("cause_boot"));
  if (targets.packages.length || targets.files.length)
    lines.push(
      `if ${RPM_HOST}; then`,
      RPM_QUERY_SETUP,
      ...(targets.packages.length
        ? [
            ctx.mark("rpm"),
            `${RPM_QUERY} -q --qf '${RPM_PACKAGE}\\n' -- ${targets.packages.map(q).join(" ")} 2>/dev/null`,
          ]
        : []),
      ...(targets.files.length
        ? [
            ctx.mark("rpm-owned"),
            `ro=$(${RPM_QUERY} -qf --qf '${RPM_PACKAGE} %{FILEDIGESTALGO}\\n[%{FILEDIGESTS} %{FILENAMES}\\n]' -- ${files} 2>/dev/null | qm_f=${q(targets.files.join("\n"))} awk '${RPM_OWNED}')`,
            `[ -z "$ro" ] || printf '%s\\n' "$ro"`,
            ctx.mark("sha256"),
            // rpm records sha256 digests (its algorithm 8) since RHEL 6.
            ...rehash("ro", "sha256sum", targets.files, (f) => [` ${f}`], q),
          ]
        : []),
      "fi",
    );
  // apk records no time for its transactions (an owned file's cause is then unknown), but which
  // package ships a file and its sha1: a local edit is told from the package's contents.
  if (targets.files.length)
    lines.push(
      `if ${APK_HOST}; then`,
      ctx.mark("apk-owned"),
      `ao=$(qm_f=${q(targets.files.join("\n"))} awk '${APK_OWNED}' /lib/apk/db/installed 2>/dev/null)`,
      `[ -z "$ao" ] || printf '%s\\n' "$ao"`,
      ctx.mark("sha1"),
      ...rehash("ao", "sha1sum", targets.files, (f) => [` ${f}`], q),
      "fi",
    );
  lines.push("true");
  return lines.join("\n");
}
